"""The opencode session actor's own messages and settings (the shared control messages are
:mod:`paddock.actors`'). Frozen slotted dataclasses: they never leave the process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AnswerUserInput", "Compact", "Fork", "NativeMessages", "SessionSettings"]


@dataclass(frozen=True, slots=True)
class AnswerUserInput:
    """Answer the open question ``request_id`` (question id -> label(s) or text); answers ``None``."""

    request_id: str
    answers: dict[str, Any]


@dataclass(frozen=True, slots=True)
class NativeMessages:
    """List the session's messages on the server (``limit`` newest, ``None``: all)."""

    limit: int | None = None


@dataclass(frozen=True, slots=True)
class Fork:
    """Fork the session on the server (``POST /session/{id}/fork``); answers the new ``ses_…`` id."""


@dataclass(frozen=True, slots=True)
class Compact:
    """Summarize (compact) the session on the server (``POST /session/{id}/summarize``); answers
    ``None`` once the server has written the summary."""


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """What every session of one instance shares."""

    driver: str
    instance_id: str
    request_timeout: float
    interrupt_timeout: float
    endpoint: bool
    agent: str | None = None
    title_prefix: str = "paddock"
