"""The opencode resume cursor: the ``ses_…`` id, the cwd it belongs to, the cumulative usage."""

from __future__ import annotations

import msgspec

from paddock.contract import CUMULATIVE_USAGE, JsonObject, ResumeCursor, TokenUsage, ValidationError

from .._cursor import check_owner, make_cursor

__all__ = ["CURSOR_VERSION", "cursor_for", "decode_cursor"]

CURSOR_VERSION = 1


def cursor_for(driver: str, session_id: str, cwd: str, usage: TokenUsage | None = None) -> ResumeCursor:
    """``{"session_id": "ses_…", "cwd": ..., "usage": {...}}``. OpenCode has no resume call:
    prompting the same session id continues it, on any server with the same data dir. The cwd
    is kept because a session is bound to its directory: a cursor used elsewhere is invalid."""
    payload: JsonObject = {"session_id": session_id, "cwd": cwd}
    if usage is not None and any(getattr(usage, name) for name in CUMULATIVE_USAGE):
        payload["usage"] = msgspec.to_builtins(usage)
    return make_cursor(driver, CURSOR_VERSION, payload)


def decode_cursor(cursor: ResumeCursor, driver: str) -> tuple[str, str | None, TokenUsage | None]:
    """``(session_id, cwd, usage)`` of a cursor made by :func:`cursor_for`; ValidationError when
    it is not ours or malformed."""
    check_owner(cursor, driver, CURSOR_VERSION)
    try:
        data = msgspec.json.decode(cursor.payload)
        sid = data["session_id"]
        cwd = data.get("cwd")
        usage = msgspec.convert(data["usage"], TokenUsage) if data.get("usage") else None
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError, AttributeError) as exc:
        raise ValidationError("start_session", f"malformed resume cursor: {exc}") from None
    if not isinstance(sid, str) or not sid.startswith("ses"):
        raise ValidationError("start_session", "the resume cursor holds no OpenCode session id (ses_…)")
    return sid, cwd if isinstance(cwd, str) else None, usage
