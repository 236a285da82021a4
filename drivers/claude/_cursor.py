"""The claude resume cursor: the CLI session id plus the thread's cumulative token usage."""

from __future__ import annotations

import msgspec

from paddock.contract import JsonObject, ResumeCursor, TokenUsage, ValidationError

from .._cursor import check_owner, make_cursor

__all__ = ["CURSOR_VERSION", "cursor_for", "fork_source_of", "session_id_of"]

CURSOR_VERSION = 1


def cursor_for(driver: str, session_id: str, usage: TokenUsage | None = None, *,
               fork_of: str | None = None) -> ResumeCursor:
    """The resume cursor: ``{"session_id": ..., "usage": <cumulative TokenUsage>}`` (usage keeps
    the thread's token count monotonic across processes). ``fork_of``: the session is a copy of
    that one, still to be made by the first start (``--resume`` with ``--fork-session``)."""
    payload: JsonObject = {"session_id": session_id}
    if fork_of is not None:
        payload["fork_of"] = fork_of
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


def fork_source_of(cursor: ResumeCursor) -> str | None:
    """The session a fork cursor (:func:`cursor_for` with ``fork_of``) copies, else ``None``.
    Call after :func:`session_id_of` accepted the cursor."""
    fork_of = msgspec.json.decode(cursor.payload).get("fork_of")
    return fork_of if isinstance(fork_of, str) and fork_of else None
