"""Messages of an ACP session actor: what the reader thread tells it, and the adapter's asks.

Plain ``__slots__`` classes (not Structs): they never leave the process and the hot ones are
built once per read batch.
"""

from __future__ import annotations

from typing import Any

from paddock.contract import SendTurnInput

__all__ = [
    "CancelExpired",
    "CancelRetry",
    "GuardExpired",
    "Incoming",
    "Interrupt",
    "Open",
    "PromptDone",
    "Req",
    "ReplayDone",
    "Respond",
    "SendTurn",
    "WarningNotice",
]


class Req:
    """An agent request routed to this session (``params`` undecoded)."""

    __slots__ = ("id", "method", "params")

    def __init__(self, id: Any, method: str, params: Any) -> None:
        self.id = id
        self.method = method
        self.params = params


class Incoming:
    """A batch from the reader: decoded updates and :class:`Req`s, in wire order."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items


class PromptDone:
    __slots__ = ("turn_id", "result", "error")

    def __init__(self, turn_id: str, result: Any, error: BaseException | None) -> None:
        self.turn_id = turn_id
        self.result = result
        self.error = error


class WarningNotice:
    """A transport warning (malformed or over-long line) broadcast to the process's sessions."""

    __slots__ = ("code", "message", "detail")

    def __init__(self, code: str, message: str, detail: dict[str, Any]) -> None:
        self.code = code
        self.message = message
        self.detail = detail


class Open:
    __slots__ = ()


class SendTurn:
    __slots__ = ("input",)

    def __init__(self, input: SendTurnInput) -> None:
        self.input = input


class Interrupt:
    __slots__ = ("turn_id",)

    def __init__(self, turn_id: str | None) -> None:
        self.turn_id = turn_id


class Respond:
    __slots__ = ("request_id", "decision")

    def __init__(self, request_id: str, decision: str) -> None:
        self.request_id = request_id
        self.decision = decision


class GuardExpired:
    __slots__ = ("turn_id",)

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id


class CancelExpired:
    __slots__ = ("turn_id",)

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id


class CancelRetry:
    """Re-send ``session/cancel`` for a turn the agent has not ended yet (within the guard)."""

    __slots__ = ("turn_id",)

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id


class ReplayDone:
    __slots__ = ()


# settings ----------------------------------------------------------------------------------------
