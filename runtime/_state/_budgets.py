"""Budgets: bounds on what a thread, an instance and the runtime spend, read from the usage
ledger.

A thread is under up to three budgets: its own (``start_session(budget=...)`` or
``set_budget(thread_id=...)``), its instance's and the runtime's (``set_budget`` wins over the
config's ``budgets = {...}``). After each ledger batch the reader thread calls :meth:`Budgets.after`
for the threads whose figures changed: a figure at ``warn_at`` of its limit gives one
``budget.warning`` per budget and period; one at the limit gives a ``budget.warning`` with
``exceeded`` set, marks the budget spent and has the scope's running turns interrupted (on a
thread of their own: the reader never blocks). :meth:`Budgets.check` (the caller of ``send_turn``)
then raises :class:`BudgetExceededError` until :meth:`Budgets.put` raises the budget or the
period rolls over. Enforcement therefore lags by at most one usage report.

Set budgets are kept in ``paddock.db`` (table ``budgets``) and survive restarts.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Mapping

import msgspec

from paddock.contract import Budget, BudgetExceededError, BudgetWarning, EventBase, UsageFigures

_Identity = tuple[str, str, str, str | None]  # driver, instance_id, thread_id, turn_id

from ._usage import UsageLedger

__all__ = ["Budgets"]

_Scope = tuple[str, str]  # ("thread" | "instance" | "runtime", id)


def _period_start(period: str | None, now: float) -> tuple[float | None, int]:
    """The start of the period containing ``now`` and its key (``None``, 0: all time)."""
    if period == "day":
        day = int(now // 86400)
        return day * 86400.0, day
    return None, 0


def _figure(figures: UsageFigures, kind: str) -> float:
    if kind == "tokens":
        return float(figures.total_tokens)
    if kind == "cost":
        return figures.cost or 0.0
    if kind == "turns":
        return float(figures.turns)
    return figures.turn_seconds


class Budgets:
    """See the module docstring. ``emit(events, like)`` publishes budget events with the identity
    of the event ``like``; ``interrupt(thread_id, turn_id)`` interrupts a turn (it may block: it is
    run on a thread of its own); ``instance_of`` names a thread's instance. Thread-safe."""

    def __init__(self, ledger: UsageLedger, *, runtime: Budget | None,
                 instances: Mapping[str, Budget], emit: Callable[[list[EventBase]], None],
                 interrupt: Callable[[str, str], None], instance_of: Callable[[str], str | None],
                 clock: Callable[[], float] = time.time) -> None:
        self._ledger = ledger
        self._db = db = sqlite3.connect(str(ledger.path), check_same_thread=False, isolation_level=None, timeout=30.0)
        self._config: dict[_Scope, Budget] = {("instance", k): v for k, v in instances.items()}
        if runtime is not None:
            self._config[("runtime", "")] = runtime
        self._set: dict[_Scope, Budget] = {}
        self._emit = emit
        self._interrupt = interrupt
        self._instance_of = instance_of
        self._clock = clock
        self._lock = threading.Lock()
        self._spent: dict[_Scope, tuple[str, float, float, int]] = {}  # kind, figure, limit, period key
        self._warned: set[tuple[_Scope, str, float, int, bool]] = set()
        self._stopping: set[tuple[str, str | None]] = set()  # turns already asked to stop
        db.execute("CREATE TABLE IF NOT EXISTS budgets (scope TEXT NOT NULL, scope_id TEXT NOT NULL, "
                   "budget TEXT NOT NULL, PRIMARY KEY (scope, scope_id))")
        for scope, scope_id, text in db.execute("SELECT scope, scope_id, budget FROM budgets").fetchall():
            self._set[(scope, scope_id)] = msgspec.json.decode(text, type=Budget)
        for key in list(self._budgets()):
            self._evaluate(key, None, quiet=True)

    def close(self) -> None:
        self._db.close()

    @property
    def any(self) -> bool:
        """Whether any budget is set (without one nothing is evaluated)."""
        return bool(self._config or self._set)

    def _budgets(self) -> dict[_Scope, Budget]:
        merged = dict(self._config)
        merged.update(self._set)
        return merged

    def put(self, budget: Budget | None, *, thread_id: str | None = None, instance: str | None = None) -> None:
        """Set (``None``: remove) a scope's budget, persist it and judge the scope again at once."""
        key: _Scope = ("thread", thread_id) if thread_id else ("instance", instance) if instance else ("runtime", "")
        with self._lock:
            if budget is None:
                self._set.pop(key, None)
                self._db.execute("DELETE FROM budgets WHERE scope = ? AND scope_id = ?", key)
            else:
                self._set[key] = budget
                self._db.execute("INSERT OR REPLACE INTO budgets VALUES (?, ?, ?)",
                                 (*key, msgspec.json.encode(budget).decode()))
            self._spent.pop(key, None)
        self._evaluate(key, None, quiet=True)

    def thread_budget(self, thread_id: str) -> Budget | None:
        """The thread's own budget, if it has one (any thread)."""
        return self._set.get(("thread", thread_id))

    def _scopes(self, thread_id: str, instance: str | None) -> list[_Scope]:
        keys: list[_Scope] = [("thread", thread_id)]
        if instance:
            keys.append(("instance", instance))
        keys.append(("runtime", ""))
        return keys

    def check(self, thread_id: str) -> None:
        """Raise :class:`BudgetExceededError` when a budget over ``thread_id`` is spent in its
        current period (the caller's thread; a dictionary look-up per scope)."""
        if not self._spent:
            return
        now = self._clock()
        for key in self._scopes(thread_id, self._instance_of(thread_id)):
            spent = self._spent.get(key)
            if spent is None:
                continue
            kind, figure, limit, period_key = spent
            budget = self._budgets().get(key)
            if budget is None or _period_start(budget.period, now)[1] != period_key:
                continue  # removed, or its period rolled over
            raise BudgetExceededError(kind, key[0], figure, limit, thread_id=thread_id,
                                      instance_id=key[1] if key[0] == "instance" else None)

    def after(self, touched: Collection[str], like: Mapping[str, _Identity]) -> None:
        """Judge the scopes of the threads whose figures changed (the reader thread); ``like``
        holds an event of each thread, whose identity budget events take."""
        if not self.any:
            return
        budgets = self._budgets()
        done: set[_Scope] = set()
        for thread_id in touched:
            ident = like.get(thread_id)
            for key in self._scopes(thread_id, ident[1] if ident is not None else self._instance_of(thread_id)):
                if key in budgets and key not in done:
                    done.add(key)
                    self._evaluate(key, ident)

    def tick(self) -> None:
        """Judge ``turn_seconds`` budgets of scopes with a running turn (the reader thread, on its
        idle wakes): a running turn's time grows with no event."""
        budgets = self._budgets()
        timed = [k for k, b in budgets.items() if b.turn_seconds is not None]
        for key in timed:
            running = self._running(key)
            if running:
                self._evaluate(key, running[0], running=running)

    def _running(self, key: _Scope) -> list[_Identity]:
        if key[0] == "thread":
            return self._ledger.running(thread_id=key[1])
        if key[0] == "instance":
            return self._ledger.running(instance=key[1])
        return self._ledger.running()

    def _evaluate(self, key: _Scope, like: _Identity | None, *, quiet: bool = False,
                  running: list[_Identity] | None = None) -> None:
        budget = self._budgets().get(key)
        if budget is None:
            return
        now = self._clock()
        since, period_key = _period_start(budget.period, now)
        scope, scope_id = key
        figures = self._ledger.totals(since, thread_id=scope_id if scope == "thread" else None,
                                      instance=scope_id if scope == "instance" else None)
        events: list[EventBase] = []
        over: tuple[str, float, float, int] | None = None
        for kind, limit in budget.limits():
            figure = _figure(figures, kind)
            exceeded = figure >= limit
            if not exceeded and figure < limit * budget.warn_at:
                continue
            if exceeded and over is None:
                over = (kind, round(figure, 6), limit, period_key)
            mark = (key, kind, limit, period_key, exceeded)
            with self._lock:
                if mark in self._warned:
                    continue
                self._warned.add(mark)
            if not quiet and like is not None:
                events.append(BudgetWarning(driver=like[0], instance_id=like[1], thread_id=like[2],
                                            turn_id=like[3], budget=kind, scope=scope, scope_id=scope_id,
                                            figure=round(figure, 6), limit=limit, exceeded=exceeded,
                                            period=budget.period))
        with self._lock:
            if over is None:
                self._spent.pop(key, None)
            else:
                self._spent[key] = over
        if events:
            self._emit(events)
        if over is not None and not quiet:
            for _, _, thread_id, turn_id in running if running is not None else self._running(key):
                with self._lock:
                    if (thread_id, turn_id) in self._stopping:
                        continue
                    self._stopping.add((thread_id, turn_id))
                threading.Thread(target=self._interrupt, args=(thread_id, turn_id or ""), name="paddock-budget-stop",
                                 daemon=True).start()

