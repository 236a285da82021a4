"""Messages of an ACP session actor: what the reader thread tells it (the adapter's asks are
the shared control messages of :mod:`paddock.actors`).

Plain ``__slots__`` classes (not Structs): they never leave the process and the hot ones are
built once per read batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import msgspec

from paddock.actors import Incoming, Req
from paddock.contract import EventBase

if TYPE_CHECKING:
    from ._agent import AgentLink


class Reply(Protocol):
    """The deferred answer to an ``ask`` (``SessionActor.defer_reply()``)."""

    def set(self, value: object = None) -> None: ...

    def fail(self, error: BaseException) -> None: ...

__all__ = ["Incoming", "ModeRestored", "NewSessionDone", "PromptDone", "ReplayDone", "Req"]


class PromptDone:
    __slots__ = ("turn_id", "result", "error")

    def __init__(self, turn_id: str, result: msgspec.Raw | None, error: BaseException | None) -> None:
        self.turn_id = turn_id
        self.result = result
        self.error = error


class ModeRestored:
    """The agent's answer to a ``session/set_mode`` that undoes a mode drift (``error``: its
    refusal, or ``None``)."""

    __slots__ = ("mode", "error")

    def __init__(self, mode: str, error: BaseException | None) -> None:
        self.mode = mode
        self.error = error


class ReplayDone:
    """Queued behind a ``session/load`` replay: everything before it is history."""

    __slots__ = ()



class NewSessionDone:
    """The agent's answer to ``session/new`` (told from the reader thread), with what the
    deferred ``Open`` collected before it asked."""

    __slots__ = ("detail", "error", "events", "link", "reply", "result", "resume_failed")

    def __init__(self, reply: Reply, link: AgentLink, events: list[EventBase], resume_failed: bool,
                 detail: str | None, result: msgspec.Raw | None, error: BaseException | None) -> None:
        self.reply = reply
        self.link = link
        self.events = events
        self.resume_failed = resume_failed
        self.detail = detail
        self.result = result
        self.error = error
