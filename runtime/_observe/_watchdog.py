"""The stall watchdog: a running turn with no event for ``[runtime] stall_warning`` seconds gets a
canonical ``runtime.warning`` (code ``turn.stalled``), so every surface says the agent shows no
sign of life (a model API that does not answer, an agent retrying it silently) instead of
printing nothing.

One daemon thread (``paddock-watchdog``) reads a subscription of every event and notes, per
thread with a running turn, when it last heard of it; it wakes at least every quarter of the
bound to compare. It warns once per silence (its own warning is not a sign of life) and again
after each further bound of silence; any event of the thread ends the silence.

Waiting for a person is not a stall: while a request of the turn is open (a ``request.opened`` or
``user-input.requested`` not yet resolved) its clock does not run, and it starts again from the
last resolution.

The same thread drives the dead-endpoint check (:mod:`._endpoint_watch`): a running turn of an
instance with a model endpoint, quiet for a second (warnings and errors are no progress: an agent
retrying its model reports retries), gets its endpoint checked; the check fails the turn when
the endpoint stays dead for the instance's ``endpoint_timeout``. A turn waiting for a person is
not checked (its quiet starts again at the resolution).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from paddock.contract import (
    Event,
    PaddockError,
    RequestOpened,
    RequestResolved,
    RuntimeErrorEvent,
    RuntimeWarningEvent,
    SessionExited,
    TurnCompleted,
    TurnStarted,
    UserInputRequested,
    UserInputResolved,
)

from ._endpoint_watch import EndpointWatch
from ._event_reader import EventReader

if TYPE_CHECKING:
    from paddock.actors import HubHandle

__all__ = ["STALLED", "StallWatchdog"]

STALLED = "turn.stalled"
"""The ``runtime.warning`` code of a turn that has been silent for the configured bound."""
_BATCH = 4096
_MARKS = frozenset({TurnStarted, TurnCompleted, SessionExited, RuntimeWarningEvent, RuntimeErrorEvent,
                    RequestOpened, UserInputRequested, RequestResolved, UserInputResolved})
"""The event classes that start, end or pause a turn's clock, or are heard without progress."""


class _Turn:
    __slots__ = ("driver", "instance_id", "turn_id", "heard", "warned", "waiting", "progress", "endpoint")

    def __init__(self, driver: str, instance_id: str, turn_id: str, heard: float, endpoint: bool) -> None:
        self.driver = driver
        self.instance_id = instance_id
        self.turn_id = turn_id
        self.heard = heard
        self.warned = 0  # warnings sent in the current silence
        self.waiting: set[str] | None = None  # ids of the turn's open requests (a person decides)
        self.progress = heard  # the last event that was no warning or error
        self.endpoint = endpoint  # its endpoint is watched (until the watch failed the turn)


class StallWatchdog:
    """See the module docstring. :meth:`start` subscribes and starts the thread; :meth:`close`
    ends the subscription and joins it. ``clock`` is ``time.monotonic`` (injectable for tests
    of the arithmetic only)."""

    def __init__(self, hub: HubHandle, after: float | None, *, endpoints: EndpointWatch | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._hub = hub
        self._after = after
        self._endpoints = endpoints
        self._clock = clock
        self._turns: dict[str, _Turn] = {}
        # It wakes at least every quarter of the bound to compare, events or not (every half
        # second while it watches endpoints).
        tick = max(0.05, after / 4) if after else 0.5
        if endpoints is not None:
            tick = min(tick, 0.5)
        self._reader = EventReader(hub.subscribe, "paddock-watchdog", self._note, most=_BATCH,
                                   tick=tick, on_wake=self._check, linger=min(0.05, tick))

    def start(self) -> StallWatchdog:
        self._reader.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        self._reader.close(timeout)

    def _note(self, batch: list[Event]) -> None:
        """Note who was heard from (the reader thread).

        Every event of a batch is noted at the same instant, so order matters only among the
        events that start, end or pause a turn (:data:`_MARKS`): those are walked in order, and
        every other event only marks its thread as heard from and making progress, once per thread
        per batch (the hot path: a batch of deltas costs one set comprehension)."""
        now = self._clock()
        turns = self._turns
        marks = _MARKS
        for event in [e for e in batch if e.__class__ in marks]:
            if isinstance(event, TurnStarted):
                if event.turn_id:
                    watched = self._endpoints is not None and self._endpoints.watches(event.instance_id)
                    turns[event.thread_id] = _Turn(event.driver, event.instance_id, event.turn_id, now, watched)
            elif isinstance(event, (TurnCompleted, SessionExited)):
                turns.pop(event.thread_id, None)
            elif not (isinstance(event, RuntimeWarningEvent) and event.code == STALLED):
                turn = turns.get(event.thread_id)
                if turn is not None:
                    turn.heard = now
                    turn.warned = 0
                    if isinstance(event, (RequestOpened, UserInputRequested)):
                        if event.request_id:
                            if turn.waiting is None:
                                turn.waiting = set()
                            turn.waiting.add(event.request_id)
                    elif isinstance(event, (RequestResolved, UserInputResolved)):
                        if turn.waiting:
                            turn.waiting.discard(event.request_id or "")
                    if not isinstance(event, (RuntimeWarningEvent, RuntimeErrorEvent)):
                        turn.progress = now
        if not turns:
            return
        for thread_id in {e.thread_id for e in batch if e.__class__ not in marks}:
            turn = turns.get(thread_id)
            if turn is not None:
                turn.heard = turn.progress = now
                turn.warned = 0

    def _check(self) -> None:
        now = self._clock()
        for thread_id, turn in list(self._turns.items()):
            if turn.waiting:
                turn.heard = turn.progress = now  # waiting for a person; the clocks start at the resolution
                continue
            if turn.endpoint and self._endpoints is not None:
                if self._endpoints.check(thread_id, turn.instance_id, turn.turn_id, turn.progress):
                    turn.endpoint = False
            if not self._after:
                continue
            silent = now - turn.heard
            if silent < self._after * (turn.warned + 1):
                continue
            turn.warned += 1
            warning = RuntimeWarningEvent(
                driver=turn.driver, instance_id=turn.instance_id, thread_id=thread_id, turn_id=turn.turn_id,
                code=STALLED,
                message=f"no sign of life from the agent for {silent:.0f} s (the model API may be unreachable, "
                        "or the agent is retrying it); the turn is still running",
                detail={"silent_seconds": round(silent, 1), "stall_warning": self._after},
            )
            try:
                self._hub.emitter(turn.driver, turn.instance_id, thread_id).emit([warning])
            except PaddockError:
                return  # the hub is closing
