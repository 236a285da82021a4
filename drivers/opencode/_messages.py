"""The opencode session actor's own message, settings and state (the shared control messages
are :mod:`paddock.actors`'). Slotted dataclasses: they never leave the process."""

from __future__ import annotations

from dataclasses import dataclass

from paddock.contract import TokenUsage

__all__ = ["NativeMessages", "OpencodeState", "SessionSettings"]


@dataclass(frozen=True, slots=True)
class NativeMessages:
    """List the session's messages on the server (``limit`` newest, ``None``: all)."""

    limit: int | None = None


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


@dataclass(slots=True)
class OpencodeState:
    """One OpenCode session's state (written by its actor)."""

    session_id: str | None = None
    """The server's ``ses_…`` id, once created."""
    resumed: bool = False
    usage: TokenUsage | None = None
    """The thread's cumulative token usage."""
