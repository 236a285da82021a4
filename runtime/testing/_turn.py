"""One turn through a :class:`paddock.Runtime`, its events collected: the loop the conformance
engine and the runtime-level tests (replayed and live flavors) share."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from paddock.contract import Attachment, EventBase, TurnStartResult

if TYPE_CHECKING:
    from paddock import Runtime

__all__ = ["collect_turn"]


def collect_turn(rt: Runtime, thread_id: str, text: str, *, timeout: float,
                 on_sent: Callable[[TurnStartResult], None] | None = None,
                 on_event: Callable[[EventBase, TurnStartResult], None] | None = None,
                 attachments: Sequence[Attachment] = ()) -> list[EventBase]:
    """Send ``text`` as a turn of ``thread_id`` and return the thread's events from the send up
    to and including that turn's ``turn.completed``. ``on_sent`` runs once the turn is accepted,
    ``on_event`` on every event as it arrives (both on the calling thread, before the next event
    is read: they may steer the turn, e.g. answer a request or interrupt it); ``attachments`` ride
    the turn. Raises ``AssertionError`` (naming the last event types seen) when no
    ``turn.completed`` came within ``timeout`` seconds. Runs on the calling thread."""
    with rt.subscribe(thread_id=thread_id) as events:
        turn = rt.send_turn(thread_id, text, attachments=attachments)
        if on_sent is not None:
            on_sent(turn)
        out: list[EventBase] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = events.get(timeout=max(0.0, deadline - time.monotonic()))
            if event is None:
                break
            out.append(event)
            if on_event is not None:
                on_event(event, turn)
            if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                return out
    raise AssertionError(f"no turn.completed within {timeout:g} s; saw {[e.type for e in out][-12:]}")
