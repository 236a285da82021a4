"""The open approval and user-input requests of a runtime, folded from its event stream.

A :class:`PendingRequests` holds one filtered subscription and folds it on demand: each call to
:meth:`PendingRequests.snapshot` first flushes the hub (so every event published before the call
is in the subscription) and then drains it without blocking. Between calls the shared timer
thread drains it every :data:`DRAIN_INTERVAL` seconds, so a host that never asks still holds only
the open requests, not every ``turn.completed`` since start. No thread of its own.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from paddock.actors import TimerEntry, timers
from paddock.contract import RequestOpened, UserInputRequested

if TYPE_CHECKING:
    from paddock.actors import HubHandle

__all__ = ["DRAIN_INTERVAL", "PendingRequest", "PendingRequests"]

DRAIN_INTERVAL = 0.5

PendingRequest = RequestOpened | UserInputRequested
"""An open request: the ``request.opened`` or ``user-input.requested`` event that opened it."""

_TYPES = (
    "request.opened",
    "request.resolved",
    "user-input.requested",
    "user-input.resolved",
    "turn.completed",
    "session.exited",
)


class PendingRequests:
    """Open requests by (thread, request id). Thread-safe; :meth:`snapshot` runs in the caller's
    thread."""

    def __init__(self, hub: HubHandle) -> None:
        self._hub = hub
        self._sub = hub.subscribe(types=_TYPES)
        self._open: dict[tuple[str, str], PendingRequest] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._timer: TimerEntry | None = timers.schedule(time.monotonic() + DRAIN_INTERVAL, self._tick)

    def snapshot(self, thread_id: str | None = None, *, timeout: float) -> list[PendingRequest]:
        """The requests still open (across threads or of ``thread_id``), oldest first."""
        self._hub.flush(timeout=timeout)
        with self._lock:
            self._drain()
            found = (e for e in self._open.values() if thread_id is None or e.thread_id == thread_id)
            return sorted(found, key=lambda e: e.seq)

    def _drain(self) -> None:
        while True:
            event = self._sub.get(timeout=0)
            if event is None:
                return
            self._fold(event)

    def _tick(self) -> None:
        # On the shared timer thread: drain without blocking, then reschedule.
        with self._lock:
            if self._closed:
                return
            self._drain()
            self._timer = timers.schedule(time.monotonic() + DRAIN_INTERVAL, self._tick)

    def _fold(self, event) -> None:
        t = event.type
        if t in ("request.opened", "user-input.requested") and event.request_id:
            self._open[(event.thread_id, event.request_id)] = event
        elif t in ("request.resolved", "user-input.resolved") and event.request_id:
            self._open.pop((event.thread_id, event.request_id), None)
        elif t == "turn.completed":
            # A request cannot outlive its turn, whatever the driver said about it.
            for key, opened in list(self._open.items()):
                if opened.thread_id == event.thread_id and opened.turn_id == event.turn_id:
                    del self._open[key]
        elif t == "session.exited":
            for key in [k for k in self._open if k[0] == event.thread_id]:
                del self._open[key]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
        self._sub.close()
