"""The claude resume cursor: the CLI session id plus the thread's cumulative token usage."""

from __future__ import annotations

import msgspec

from paddock.contract import JsonObject, ResumeCursor, TokenUsage, ValidationError

from .._cursor import check_owner, make_cursor

__all__ = ["CURSOR_VERSION", "cursor_for", "session_id_of"]

CURSOR_VERSION = 1


def cursor_for(driver: str, session_id: str, usage: TokenUsage | None = None) -> ResumeCursor:
    """The resume cursor: ``{"session_id": ..., "usage": <cumulative TokenUsage>}`` (usage keeps
    the thread's token count monotonic across processes)."""
    payload: JsonObject = {"session_id": session_id}
    if usage is not None:
        payload["usage"] = msgspec.to_builtins(usage)
    return make_cursor(driver, CURSOR_VERSION, payload)


def session_id_of(cursor: ResumeCursor, driver: str) -> tuple[str, TokenUsage | None]:
    """Decode a cursor made by :func:`cursor_for`; raises ValidationError when it is not ours."""
    check_owner(cursor, driver, CURSOR_VERSION)
    try:
        data = msgspec.json.decode(cursor.payload)
        sid = data["session_id"]
        usage = msgspec.convert(data["usage"], TokenUsage) if data.get("usage") else None
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError) as exc:
        raise ValidationError("start_session", f"malformed resume cursor: {exc}") from None
    if not isinstance(sid, str) or not sid:
        raise ValidationError("start_session", "the resume cursor has no session id")
    return sid, usage
