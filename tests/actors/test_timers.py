"""The shared timer thread: a cancelled entry lets go of its callback at once (it stays in the
heap until its deadline, which for a request timeout is minutes away, and its callback closes
over a connection or an actor that may be dead by then)."""

from __future__ import annotations

import gc
import threading
import time
import weakref

from paddock.actors.execution import timers


class _Conn:
    """Stands for what a timer callback closes over (a connection of a dead process)."""

    def expire(self) -> None:
        raise AssertionError("a cancelled timer ran")


def test_a_cancelled_timer_keeps_nothing_of_its_callback_alive():
    conn = _Conn()
    entry = timers.schedule(time.monotonic() + 3600, conn.expire)
    ref = weakref.ref(conn)
    entry.cancel()
    del conn
    gc.collect()
    assert ref() is None


def test_a_timer_runs_unless_cancelled():
    fired = threading.Event()
    timers.schedule(time.monotonic() + 0.01, fired.set)
    assert fired.wait(10)
    cancelled = threading.Event()
    timers.schedule(time.monotonic() + 0.01, cancelled.set).cancel()
    after = threading.Event()
    timers.schedule(time.monotonic() + 0.02, after.set)
    assert after.wait(10) and not cancelled.is_set()
