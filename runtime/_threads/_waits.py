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

``on_usage_limit = "failover"``: at the failed turn's ``turn.completed`` the thread is handed
over (``hand_over``: a ``fork_thread`` hand-off, ``paddock._threads._failover``) to the first
instance of the policy's list that is not the thread's own, not limited itself (a usage limit
seen on it whose reset, or 15 s when unknown, is still ahead and no turn completed there since;
or its last ``account.rate-limits.updated`` with windows said ``rejected`` or showed one used to
100 %, until that window's reset) and available; ``thread.failed-over`` on the source names the move and the turn is sent
on the new thread (on a thread of its own, ``paddock-limits-failover``). Nothing is sent to the
source again: it comes back when the host sends it a turn. With no instance to take it, the
thread waits as under ``"wait"`` (a ``runtime.warning`` ``usage_limit.no_failover`` says why).
A failover is done at once, so nothing of it is persisted: a host stopped between the failed
turn and the hand-off leaves the thread failed.
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
    AccountRateLimitsUpdated,
    BudgetExceededError,
    Event,
    PaddockError,
    RuntimeErrorEvent,
    RuntimeWarningEvent,
    ThreadFailedOver,
    ThreadStateChanged,
    TurnCompleted,
    TurnStarted,
    ValidationError,
)

if TYPE_CHECKING:
    from paddock.actors import HubHandle

__all__ = ["UsageLimitWaits"]

_TYPES = ("turn.started", "turn.completed", "runtime.error", "account.rate-limits.updated")
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
    """See the module docstring. ``policy(instance_id)`` is ``"fail"``, ``"wait"`` or
    ``"failover"``; ``send(thread_id, text)`` starts a turn (it may block; it runs on a thread of
    its own and raises ``PaddockError``\\ s); ``failover(instance_id)`` is the instances a
    ``"failover"`` tries, in order; ``hand_over(thread_id, turn_id, instance)`` copies the thread
    there and returns the new thread's id (it blocks, on the same thread as ``send``, and raises
    ``PaddockError``\\ s). :meth:`start` and :meth:`close` from any thread."""

    def __init__(self, hub: HubHandle, path: Path, *, policy: Callable[[str], str],
                 send: Callable[[str, str], object], clock: Callable[[], float] = time.time,
                 failover: Callable[[str], tuple[str, ...]] = lambda _: (),
                 hand_over: Callable[[str, str | None, str], str] | None = None) -> None:
        self._hub = hub
        self._policy = policy
        self._send = send
        self._clock = clock
        self._failover = failover
        self._hand_over = hand_over
        self._limited: dict[str, float] = {}  # instance -> until when (a usage limit met; a completed turn clears it)
        self._full: dict[str, float] = {}  # instance -> until when (its account's windows; the next report clears it)
        self._moving: dict[str, tuple[RuntimeErrorEvent, str]] = {}  # thread -> (its limit, text) to hand over
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
        self._reader = EventReader(lambda: hub.subscribe(types=_TYPES), "paddock-limits", self._note, most=1024,
                                   linger=0.05)
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
                if ev.error_class == USAGE_LIMIT:
                    self._limit(ev)
            elif isinstance(ev, AccountRateLimitsUpdated):
                self._windows(ev)
            elif isinstance(ev, TurnCompleted):
                if ev.state == "completed":
                    self._limited.pop(ev.instance_id, None)
                moving = self._moving.get(ev.thread_id)
                if moving is not None and moving[0].turn_id in (None, ev.turn_id):
                    del self._moving[ev.thread_id]
                    threading.Thread(target=self._fail_over, args=moving, name="paddock-limits-failover",
                                     daemon=True).start()
                with self._lock:
                    wait = self._waits.get(ev.thread_id)
                    if wait is not None and wait.sent:  # the resent turn ended (not on the limit again)
                        del self._waits[ev.thread_id]
                        self._write("DELETE FROM usage_waits WHERE thread_id = ?", (ev.thread_id,))

    def _limit(self, ev: RuntimeErrorEvent) -> None:
        now = self._clock()
        self._limited[ev.instance_id] = ev.resets_at if ev.resets_at is not None else now + _FIRST_BACKOFF
        policy = self._policy(ev.instance_id)
        if policy not in ("wait", "failover"):
            return
        last = self._inputs.get(ev.thread_id)
        if last is None or (ev.turn_id is not None and last[0] != ev.turn_id):
            return  # not a turn this runtime saw start: nothing to send again
        if policy == "failover" and self._hand_over is not None:
            self._moving[ev.thread_id] = (ev, last[1])  # handed over at its turn.completed
        else:
            self._park(ev, last[1])

    def _windows(self, ev: AccountRateLimitsUpdated) -> None:
        """An account that says ``rejected``, or a window used up, counts as limited until the
        latest reset among them; any other report with a window clears it."""
        windows = [w for w in ev.limits.get("windows") or () if isinstance(w, dict)]
        rejected = ev.limits.get("status") == "rejected"
        full = [w for w in windows if rejected or (w.get("used_percent") or 0) >= 100]
        if rejected or full:
            resets = [float(w["resets_at"]) for w in full if isinstance(w.get("resets_at"), (int, float))]
            self._full[ev.instance_id] = max(resets) if resets else self._clock() + _FIRST_BACKOFF
        elif windows:
            self._full.pop(ev.instance_id, None)

    def _fail_over(self, ev: RuntimeErrorEvent, text: str) -> None:
        assert self._hand_over is not None
        tried: list[str] = []
        for target in self._failover(ev.instance_id):
            now = self._clock()
            if target == ev.instance_id or max(self._limited.get(target, 0.0), self._full.get(target, 0.0)) > now:
                tried.append(f"{target}: limited" if target != ev.instance_id else f"{target}: the thread's own")
                continue
            try:
                new_thread = self._hand_over(ev.thread_id, ev.turn_id, target)
            except PaddockError as exc:
                tried.append(f"{target}: {exc}")
                continue
            self._emit(ev, [ThreadFailedOver(driver=ev.driver, instance_id=ev.instance_id, thread_id=ev.thread_id,
                                             to_thread_id=new_thread, to_instance_id=target, resets_at=ev.resets_at)])
            try:
                self._send(new_thread, text)
            except PaddockError as exc:
                self._warn(ev, "usage_limit.failover_send_failed",
                           f"the turn could not be sent on {new_thread!r} after the failover: {exc}")
            return
        self._warn(ev, "usage_limit.no_failover", "no failover instance could take the thread; it waits for the "
                   "limit to reset", {"tried": tried})
        self._park(ev, text)

    def _warn(self, ev: RuntimeErrorEvent, code: str, message: str, detail: dict[str, object] | None = None) -> None:
        self._emit(ev, [RuntimeWarningEvent(driver=ev.driver, instance_id=ev.instance_id, thread_id=ev.thread_id,
                                            code=code, message=message, detail=detail)])

    def _emit(self, on: RuntimeErrorEvent | _Wait, events: list[Event]) -> None:
        try:
            self._hub.emitter(on.driver, on.instance_id, on.thread_id).emit(events)
        except PaddockError:
            pass  # the hub is closing

    def _park(self, ev: RuntimeErrorEvent, text: str) -> None:
        now = self._clock()
        with self._lock:
            before = self._waits.get(ev.thread_id)
            attempts = before.attempts + 1 if before is not None else 1
            if ev.resets_at is not None:
                due = max(now, ev.resets_at) + _SLACK
            else:
                due = now + min(_MAX_BACKOFF, _FIRST_BACKOFF * 2 ** (attempts - 1))
            wait = _Wait(ev.thread_id, ev.instance_id, ev.driver, text, due, attempts)
            self._waits[ev.thread_id] = wait
            self._write("INSERT OR REPLACE INTO usage_waits VALUES (?, ?, ?, ?, ?, ?)",
                        (wait.thread_id, wait.instance_id, wait.driver, wait.text, wait.due, wait.attempts))
            heapq.heappush(self._due, (due, ev.thread_id))
            self._lock.notify_all()
        self._state(wait, "waiting", due)

    def _state(self, wait: _Wait, state: str, resets_at: float | None) -> None:
        self._emit(wait, [ThreadStateChanged(driver=wait.driver, instance_id=wait.instance_id, thread_id=wait.thread_id,
                                             state=state, resets_at=resets_at)])  # type: ignore[arg-type]

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
