"""A hub subscription read on a daemon thread of its own, in batches: the plumbing the stall
watchdog, the OpenTelemetry turn spans and the Prometheus collector share."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from paddock.actors.events import END, NEEDS_IO

if TYPE_CHECKING:
    from paddock.actors import Subscription
    from paddock.contract import Event

__all__ = ["EventReader"]

_SMALL = 256
"""A batch below this size is followed by the reader's ``linger``."""


class EventReader:
    """Reads the subscription ``subscribe()`` returns on the daemon thread ``name``.

    Each wake hands ``on_batch`` the events that are ready, in ``seq`` order, at most ``most`` at
    a time (a wake waits for the first event at most ``tick`` seconds); ``on_wake``, when given,
    then runs after every wake, with events or without. Both run on the reader thread. The
    thread ends when the subscription does. :meth:`start` subscribes and starts the thread (any
    thread, once); :meth:`close` ends the subscription and joins the thread (any thread);
    :meth:`sync` waits until every event offered to the subscription before it was called has
    been handed to ``on_batch`` (any thread).

    ``linger`` (seconds) lets events gather after a small batch (fewer than :data:`_SMALL`) before
    the next read: a reader of a few events per turn then wakes a few times a second instead of
    once per published batch (each wake is a thread switch fighting the hot path for the GIL).
    A large batch is read again at once, and :meth:`sync` and :meth:`close` cut a linger short."""

    def __init__(self, subscribe: Callable[[], Subscription], name: str, on_batch: Callable[[list[Event]], None],
                 *, most: int = 1024, tick: float = 1.0, on_wake: Callable[[], None] | None = None,
                 linger: float = 0.0) -> None:
        self._subscribe = subscribe
        self._on_batch = on_batch
        self._on_wake = on_wake
        self._most = max(1, most)
        self._tick = tick
        self._name = name
        self._sub: Subscription | None = None
        self._thread: threading.Thread | None = None
        self._drained = 0  # wakes that ended with nothing left buffered
        self._synced = threading.Condition()
        self._linger = linger
        self._hurry = threading.Event()  # set by sync() and close(): end a linger now

    def start(self) -> None:
        self._sub = self._subscribe()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self._hurry.set()
        if self._sub is not None:
            self._sub.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def sync(self, timeout: float, *, wake: bool = False) -> bool:
        """Wait until every event offered before this call has been handed to ``on_batch``: at
        once when the reader is idle with nothing buffered (unless ``wake``: then until
        ``on_wake`` ran after this call too), else until a wake that began after this call ended
        with nothing left (at most ``timeout`` seconds); returns whether it did.
        Use it after ``hub.flush()`` to read what the reader folded of everything published."""
        deadline = time.monotonic() + timeout
        self._hurry.set()
        with self._synced:
            want = self._drained + 2  # the wake under way may have drained before this call
            while True:
                sub = self._sub
                if not wake and sub is not None and sub._drained_and_waiting():
                    return True
                if self._drained >= want or not self.running:
                    return self._drained >= want
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._synced.wait(min(left, 0.005))

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._read()
        finally:
            with self._synced:
                self._synced.notify_all()

    def _read(self) -> None:
        sub = self._sub
        assert sub is not None
        while True:
            first = sub.get(timeout=self._tick)
            drained = True
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
                drained = len(batch) < self._most
                if self._linger and len(batch) < _SMALL and not sub.ended:
                    if self._hurry.wait(self._linger):
                        self._hurry.clear()
            if self._on_wake is not None:
                self._on_wake()
            if drained:
                with self._synced:
                    self._drained += 1
                    self._synced.notify_all()
