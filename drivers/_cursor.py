"""Resume cursors of the drivers whose native session is a plain id (claude, opencode): the
JSON payload and the check that a cursor is theirs."""

from __future__ import annotations

import msgspec

from paddock.contract import JsonObject, ResumeCursor, ValidationError

__all__ = ["check_owner", "make_cursor"]

_encode = msgspec.json.Encoder().encode


def make_cursor(driver: str, version: int, payload: JsonObject) -> ResumeCursor:
    """A cursor of ``driver`` holding ``payload`` as compact JSON."""
    return ResumeCursor(driver=driver, version=version, payload=_encode(payload).decode())


def check_owner(cursor: ResumeCursor, driver: str, version: int) -> None:
    """Raise :class:`ValidationError` unless ``cursor`` was made by ``driver`` at ``version``."""
    if cursor.driver != driver or cursor.version != version:
        raise ValidationError("start_session", f"resume cursor of {cursor.driver!r} v{cursor.version} "
                                               f"is not a {driver!r} v{version} cursor")
