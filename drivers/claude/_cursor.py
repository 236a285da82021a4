"""The claude resume cursor: the CLI session id plus the thread's cumulative token usage."""

from __future__ import annotations

from typing import Any

import msgspec

from paddock.contract import ResumeCursor, TokenUsage, ValidationError

__all__ = ["CURSOR_VERSION", "cursor_for", "session_id_of"]

CURSOR_VERSION = 1
_encode = msgspec.json.Encoder().encode


def cursor_for(driver: str, session_id: str, usage: TokenUsage | None = None) -> ResumeCursor:
    """The resume cursor: ``{"session_id": ..., "usage": <cumulative TokenUsage>}`` (usage keeps
    the thread's token count monotonic across processes)."""
    payload: dict[str, Any] = {"session_id": session_id}
    if usage is not None:
        payload["usage"] = msgspec.to_builtins(usage)
    return ResumeCursor(driver=driver, version=CURSOR_VERSION, payload=_encode(payload).decode())


def session_id_of(cursor: ResumeCursor, driver: str) -> tuple[str, TokenUsage | None]:
    """Decode a cursor made by :func:`cursor_for`; raises ValidationError when it is not ours."""
    if cursor.driver != driver or cursor.version != CURSOR_VERSION:
        raise ValidationError("start_session", f"resume cursor of {cursor.driver!r} v{cursor.version} "
                                               f"is not a {driver!r} v{CURSOR_VERSION} cursor")
    try:
        data = msgspec.json.decode(cursor.payload)
        sid = data["session_id"]
        usage = msgspec.convert(data["usage"], TokenUsage) if data.get("usage") else None
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError) as exc:
        raise ValidationError("start_session", f"malformed resume cursor: {exc}") from None
    if not isinstance(sid, str) or not sid:
        raise ValidationError("start_session", "the resume cursor has no session id")
    return sid, usage
