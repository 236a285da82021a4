"""One shared timer thread for per-request deadlines (no thread per request)."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["TimerEntry", "TimerWheel", "timers"]

log = logging.getLogger("paddock.actors")


def _cancelled() -> None:
    pass


class TimerEntry:
    """A scheduled callback; ``cancel()`` keeps it from running (any thread) and lets go of the
    callback at once: a cancelled entry stays in the heap until its deadline, and its callback
    must not keep what it closes over (a dead process's connection, a stopped actor) alive
    that long."""

    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.callback = _cancelled


class TimerWheel:
    """Runs callbacks at ``time.monotonic()`` deadlines on one daemon thread (started lazily).
    Callbacks must be short; they run on that thread."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, TimerEntry]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, when: float, callback: Callable[[], None]) -> TimerEntry:
        entry = TimerEntry(when, callback)
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._seq), entry))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="paddock-timers", daemon=True)
                self._thread.start()
            self._cond.notify()
        return entry

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][2].cancelled:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    delay = self._heap[0][0] - time.monotonic()
                    if delay <= 0:
                        entry = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(delay)
            if not entry.cancelled:
                try:
                    entry.callback()
                except Exception:
                    log.exception("timer callback failed")


timers = TimerWheel()
