"""What every session of one instance shares (:class:`SessionSettings`), what one session keeps
across incarnations (:class:`CodexState`), and the resume cursor."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from paddock.actors import SharedState
from paddock.contract import ResumeCursor, ValidationError

__all__ = ["CURSOR_VERSION", "CodexState", "SessionSettings", "cursor_for", "thread_id_of"]

CURSOR_VERSION = 1


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Read-only settings handed to every session actor of an instance."""

    driver: str
    instance_id: str
    approval_policies: dict[str, str]
    sandbox_modes: dict[str, str]
    model: str | None
    request_timeout: float
    interrupt_timeout: float


@dataclass(slots=True)
class CodexState(SharedState):
    """A Codex session's durable state (``native_id``: the Codex thread id)."""

    persisted_turns: int = 0
    """Completed turns Codex persisted (a thread without one cannot be resumed)."""
    native_turns: list[str] = field(default_factory=list)
    """Codex's turn ids, oldest first (``thread/revert`` names the turn to cut before)."""


def cursor_for(thread_id: str) -> ResumeCursor:
    """The resume cursor of Codex thread ``thread_id``: ``{"thread_id": ...}`` at version 1."""
    return ResumeCursor(driver="codex", version=CURSOR_VERSION, payload=json.dumps({"thread_id": thread_id}))


def thread_id_of(cursor: ResumeCursor) -> str:
    """The Codex thread id in ``cursor``; :class:`ValidationError` when it is not a codex cursor
    this version understands."""
    if cursor.driver != "codex" or cursor.version != CURSOR_VERSION:
        raise ValidationError("start_session", f"a {cursor.driver!r} v{cursor.version} resume cursor is not a codex v1 cursor")
    try:
        payload = json.loads(cursor.payload)
        thread_id = payload["thread_id"]
    except (ValueError, KeyError, TypeError):
        raise ValidationError("start_session", "the codex resume cursor has no thread_id") from None
    if not isinstance(thread_id, str) or not thread_id:
        raise ValidationError("start_session", "the codex resume cursor has no thread_id")
    return thread_id
