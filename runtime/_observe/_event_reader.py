"""A hub subscription read on a daemon thread of its own, in batches: the plumbing the stall
watchdog, the OpenTelemetry turn spans and the Prometheus collector share."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from paddock.actors.events import END, NEEDS_IO

if TYPE_CHECKING:
    from paddock.actors import Subscription
    from paddock.contract import Event

__all__ = ["EventReader"]


class EventReader:
    """Reads the subscription ``subscribe()`` returns on the daemon thread ``name``.

    Each wake hands ``on_batch`` the events that are ready, in ``seq`` order, at most ``most`` at
    a time (a wake waits for the first event at most ``tick`` seconds); ``on_wake``, when given,
    then runs after every wake, with events or without. Both run on the reader thread. The
    thread ends when the subscription does. :meth:`start` subscribes and starts the thread (any
    thread, once); :meth:`close` ends the subscription and joins the thread (any thread)."""

    def __init__(self, subscribe: Callable[[], Subscription], name: str, on_batch: Callable[[list[Event]], None],
                 *, most: int = 1024, tick: float = 1.0, on_wake: Callable[[], None] | None = None) -> None:
        self._subscribe = subscribe
        self._on_batch = on_batch
        self._on_wake = on_wake
        self._most = max(1, most)
        self._tick = tick
        self._name = name
        self._sub: Subscription | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._sub = self._subscribe()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        if self._sub is not None:
            self._sub.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        sub = self._sub
        assert sub is not None
        while True:
            first = sub.get(timeout=self._tick)
            if first is None:
                if sub.ended:
                    return
            else:
                batch = [first]
                while len(batch) < self._most:
                    # What is already buffered, without waiting (the hub's own non-blocking read).
                    more = sub._poll()
                    if more is None or more is NEEDS_IO or more is END:
                        break
                    batch.append(more)
                self._on_batch(batch)
            if self._on_wake is not None:
                self._on_wake()
