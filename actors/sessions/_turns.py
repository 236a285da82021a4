"""The running turn of one session: its id, its interrupt flag, and the one ``turn.completed``."""

from __future__ import annotations

import uuid
from typing import Any

from paddock.contract import EventIdentity, TokenUsage, TurnCompleted, TurnStarted, TurnState

__all__ = ["TurnTracker"]


class TurnTracker:
    """Which turn runs, if any. :meth:`start` builds the ``turn.started``, :meth:`complete` the
    ``turn.completed``; a turn completes exactly once (a second :meth:`complete` returns ``None``),
    so every path that may end a turn (its result, a timeout, process death, a stop) can call it.

    Used on one thread only (the owning session actor's). ``interrupt_requested`` is set by the
    host's interrupt, ``failure`` by the runtime's ``FailTurn``; both are cleared at each start
    and completion.
    """

    __slots__ = ("identity", "turn_id", "interrupt_requested", "failure", "_carried")

    def __init__(self, identity: EventIdentity) -> None:
        self.identity = identity
        self.turn_id: str | None = None
        self.interrupt_requested = False
        self.failure: str | None = None
        """Why the runtime fails the running turn (``FailTurn``): its completion, unless
        ``completed``, is ``failed`` with this error."""
        self._carried: tuple[str, str, bool] | None = None

    def carry(self, sent: str, user: str, preamble: bool) -> None:
        """The next :meth:`start` is of a turn whose prompt ``sent`` is ``user``'s text with the
        session base's prefix (the preamble block when ``preamble``, else the reminder): its
        ``turn.started`` shows ``user`` as ``input_text`` and says whether it carried the
        preamble. Drivers pass the text they sent; they never see the difference."""
        self._carried = (sent, user, preamble)

    def uncarry(self) -> None:
        self._carried = None

    @property
    def in_turn(self) -> bool:
        return self.turn_id is not None

    @staticmethod
    def new_id(requested: str | None = None) -> str:
        """``requested`` (the host's ``SendTurnInput.turn_id``) or a fresh ``turn-<hex>``."""
        return requested or f"turn-{uuid.uuid4().hex[:16]}"

    def start(self, turn_id: str, **fields: Any) -> TurnStarted:
        """Mark ``turn_id`` running; ``fields`` go to the ``turn.started`` (``input_text``,
        ``model``, ``interaction_mode``, ``provider_refs``). Raises ``RuntimeError`` while a turn
        runs (callers check :attr:`in_turn` first and raise the typed error)."""
        if self.turn_id is not None:
            raise RuntimeError(f"turn {self.turn_id!r} is still running")
        self.turn_id = turn_id
        self.interrupt_requested = False
        self.failure = None
        carried, self._carried = self._carried, None
        if carried is not None and fields.get("input_text") == carried[0]:
            fields["input_text"] = carried[1]
            fields["preamble"] = carried[2]
        return TurnStarted(**self.identity, turn_id=turn_id, **fields)

    def complete(self, state: TurnState, *, stop_reason: str | None = None, error: str | None = None,
                 usage: TokenUsage | None = None) -> TurnCompleted | None:
        """The running turn's ``turn.completed``, or ``None`` when no turn runs (already ended)."""
        turn_id = self.turn_id
        if turn_id is None:
            return None
        self.turn_id = None
        self.interrupt_requested = False
        failure, self.failure = self.failure, None
        if failure is not None and state != "completed":
            state, error = "failed", failure
        return TurnCompleted(**self.identity, turn_id=turn_id, state=state, stop_reason=stop_reason, error=error,
                             usage=usage)
