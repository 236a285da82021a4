"""Usage limits as a supervision primitive: ``on_usage_limit = "wait"`` parks a thread whose turn
hit a model's usage limit and sends the turn again by itself when the limit resets.

A daemon reader (``paddock-limits``) follows ``turn.started`` (the input text of each thread's
last turn), ``runtime.error`` and ``turn.completed``. A ``runtime.error`` with ``error_class =
"usage_limit"`` on an instance whose policy is ``"wait"`` parks the thread: a row in
``paddock.db`` (table ``usage_waits``: the text, the time to send it again, the attempts) and a
``thread.state.changed`` to ``waiting`` with that time. The time is the limit's ``resets_at``
(plus a little slack), else a backoff of 15 s doubling per attempt, capped at 15 minutes. A
scheduler thread (``paddock-limits-due``) sends the turn again at that time (``send``: the
runtime's ``send_turn``, so a closed session resumes and budgets apply), with no client attached.
The row goes when the resent turn ends, unless it hit the limit again (then it is parked anew).
Rows are loaded and scheduled again at open: the schedule survives a host restart.
"""

from __future__ import annotations

import heapq
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from paddock._observe._event_reader import EventReader
from paddock.contract import (
    USAGE_LIMIT,
    BudgetExceededError,
    Event,
    PaddockError,
    RuntimeErrorEvent,
    ThreadStateChanged,
    TurnCompleted,
    TurnStarted,
    ValidationError,
)

if TYPE_CHECKING:
    from paddock.actors import HubHandle

__all__ = ["UsageLimitWaits"]

_TYPES = ("turn.started", "turn.completed", "runtime.error")
_SLACK = 0.25  # seconds after resets_at: a reset stamped to the second is past when the turn goes
_FIRST_BACKOFF = 15.0
_MAX_BACKOFF = 900.0


class _Wait:
    __slots__ = ("thread_id", "instance_id", "driver", "text", "due", "attempts", "sent")

    def __init__(self, thread_id: str, instance_id: str, driver: str, text: str, due: float, attempts: int) -> None:
        self.thread_id = thread_id
        self.instance_id = instance_id
        self.driver = driver
        self.text = text
        self.due = due
        self.attempts = attempts
        self.sent = False


class UsageLimitWaits:
    """See the module docstring. ``policy(instance_id)`` is ``"fail"`` or ``"wait"``; ``send(thread_id,
    text)`` starts a turn (it may block; it runs on a thread of its own and raises
    ``PaddockError``\\ s). :meth:`start` and :meth:`close` from any thread."""

    def __init__(self, hub: HubHandle, path: Path, *, policy: Callable[[str], str],
                 send: Callable[[str, str], object], clock: Callable[[], float] = time.time) -> None:
        self._hub = hub
        self._policy = policy
        self._send = send
        self._clock = clock
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
        self._db.execute("CREATE TABLE IF NOT EXISTS usage_waits (thread_id TEXT PRIMARY KEY, instance_id TEXT NOT NULL, "
                         "driver TEXT NOT NULL, text TEXT NOT NULL, due REAL NOT NULL, attempts INTEGER NOT NULL)")
        self._lock = threading.Condition()
        self._waits: dict[str, _Wait] = {}
        self._due: list[tuple[float, str]] = []
        self._inputs: dict[str, tuple[str | None, str]] = {}  # thread -> (turn id, input text) of its last turn
        self._closed = False
        for row in self._db.execute("SELECT * FROM usage_waits").fetchall():
            wait = _Wait(*row)
            self._waits[wait.thread_id] = wait
            heapq.heappush(self._due, (wait.due, wait.thread_id))
        self._reader = EventReader(lambda: hub.subscribe(types=_TYPES), "paddock-limits", self._note, most=1024)
        self._scheduler = threading.Thread(target=self._run, name="paddock-limits-due", daemon=True)

    def start(self) -> UsageLimitWaits:
        self._reader.start()
        self._scheduler.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._reader.close(timeout)
        self._scheduler.join(timeout)
        self._db.close()

    def waiting(self) -> dict[str, float]:
        """Thread id -> when its turn goes again (Unix time), for every parked thread."""
        with self._lock:
            return {t: w.due for t, w in self._waits.items() if not w.sent}

    # the reader thread ---------------------------------------------------------------------------

    def _note(self, batch: list[Event]) -> None:
        for ev in batch:
            if isinstance(ev, TurnStarted):
                if ev.input_text is not None:
                    self._inputs[ev.thread_id] = (ev.turn_id, ev.input_text)
            elif isinstance(ev, RuntimeErrorEvent):
                if ev.error_class == USAGE_LIMIT and self._policy(ev.instance_id) == "wait":
                    self._park(ev)
            elif isinstance(ev, TurnCompleted):
                with self._lock:
                    wait = self._waits.get(ev.thread_id)
                    if wait is not None and wait.sent:  # the resent turn ended (not on the limit again)
                        del self._waits[ev.thread_id]
                        self._write("DELETE FROM usage_waits WHERE thread_id = ?", (ev.thread_id,))

    def _park(self, ev: RuntimeErrorEvent) -> None:
        last = self._inputs.get(ev.thread_id)
        if last is None or (ev.turn_id is not None and last[0] != ev.turn_id):
            return  # not a turn this runtime saw start: nothing to send again
        now = self._clock()
        with self._lock:
            before = self._waits.get(ev.thread_id)
            attempts = before.attempts + 1 if before is not None else 1
            if ev.resets_at is not None:
                due = max(now, ev.resets_at) + _SLACK
            else:
                due = now + min(_MAX_BACKOFF, _FIRST_BACKOFF * 2 ** (attempts - 1))
            wait = _Wait(ev.thread_id, ev.instance_id, ev.driver, last[1], due, attempts)
            self._waits[ev.thread_id] = wait
            self._write("INSERT OR REPLACE INTO usage_waits VALUES (?, ?, ?, ?, ?, ?)",
                        (wait.thread_id, wait.instance_id, wait.driver, wait.text, wait.due, wait.attempts))
            heapq.heappush(self._due, (due, ev.thread_id))
            self._lock.notify_all()
        self._state(wait, "waiting", due)

    def _state(self, wait: _Wait, state: str, resets_at: float | None) -> None:
        try:
            self._hub.emitter(wait.driver, wait.instance_id, wait.thread_id).emit([ThreadStateChanged(
                driver=wait.driver, instance_id=wait.instance_id, thread_id=wait.thread_id, state=state,  # type: ignore[arg-type]
                resets_at=resets_at)])
        except PaddockError:
            pass  # the hub is closing

    def _write(self, sql: str, args: tuple) -> None:
        try:
            self._db.execute(sql, args)
        except sqlite3.Error:
            pass  # kept in memory; a restart before the next write loses this wait, not the thread

    # the scheduler thread ------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._closed:
                    if self._due:
                        due, thread_id = self._due[0]
                        delay = due - self._clock()
                        if delay <= 0:
                            heapq.heappop(self._due)
                            wait = self._waits.get(thread_id)
                            if wait is None or wait.sent or wait.due != due:
                                continue  # done, or parked again with another time
                            wait.sent = True
                            break
                        self._lock.wait(min(delay, 1.0))
                    else:
                        self._lock.wait(1.0)
                if self._closed:
                    return
            threading.Thread(target=self._fire, args=(wait,), name="paddock-limits-send", daemon=True).start()

    def _fire(self, wait: _Wait) -> None:
        self._state(wait, "active", None)
        try:
            self._send(wait.thread_id, wait.text)
        except BudgetExceededError:
            with self._lock:  # a spent budget outranks a reset limit: the thread stays stopped
                self._waits.pop(wait.thread_id, None)
                self._write("DELETE FROM usage_waits WHERE thread_id = ?", (wait.thread_id,))
        except PaddockError as exc:
            # A turn still running (ValidationError) goes again in a second; else a backoff.
            delay = 1.0 if isinstance(exc, ValidationError) else min(_MAX_BACKOFF, _FIRST_BACKOFF * 2 ** wait.attempts)
            with self._lock:
                if self._closed or self._waits.get(wait.thread_id) is not wait:
                    return
                wait.sent = False
                wait.due = self._clock() + delay
                heapq.heappush(self._due, (wait.due, wait.thread_id))
                self._lock.notify_all()
