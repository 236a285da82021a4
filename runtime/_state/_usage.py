"""The usage ledger: what each turn, thread, instance and the runtime spent, folded from the
canonical events on the hub's side (never per driver) and kept in ``paddock.db``.

Folded events: ``session.started`` (the thread's model), ``turn.started`` / ``turn.completed``
(turns and their wall time) and ``thread.token-usage.updated``. Every driver reports the last as
the thread's cumulative usage (grammar rule 4: it never goes backwards within a thread); the
ledger books the difference to the previous report on the running turn (else the thread's last
turn). A count lower than the previous one is a total restored from a stale cursor (or a new count
after an agent restarted): the ledger takes it as the new base and books nothing for it, and that
turn's ``turn.completed`` (whose ``usage`` is the turn's own where the agent reports per turn)
tops the turn up to its own figures. Cost is the provider's
where the agent reports one (``cost_source = "provider"``), else computed from the host's
``[pricing]`` table for the turn's model (``"pricing"``), else unknown. CPU seconds and peak RSS of the agent processes are
kept per instance (:meth:`UsageLedger.note_processes`, from ``_processes.ProcessMeter``): an agent
process may serve many threads, so threads and turns have none.

Threads: :meth:`UsageLedger.fold` runs on one reader thread (the runtime's ``paddock-usage``),
which also writes the rows it changed, one transaction per batch, with the ``seq`` it folded up
to; reads (:meth:`UsageLedger.report`, :meth:`UsageLedger.totals`) run on any thread from memory.
A ledger that is missing (or behind) is rebuilt by folding the event log from that ``seq`` on.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import msgspec

from paddock.contract import (
    EventBase,
    InstanceUsage,
    PersistenceError,
    SessionStarted,
    ThreadTokenUsageUpdated,
    ThreadUsage,
    TurnCompleted,
    TurnStarted,
    TurnUsage,
    UsageFigures,
    UsageReport,
)

__all__ = ["LEDGER_TYPES", "Pricing", "UsageLedger"]

LEDGER_TYPES = ("session.started", "turn.started", "turn.completed", "thread.token-usage.updated")
"""The event types the ledger folds (its subscription's filter)."""

_KINDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")


class Pricing(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One model's prices in USD per million tokens (a ``[pricing."<model>"]`` table).
    ``cached_input`` defaults to ``input``; reasoning tokens are billed as output (they are
    part of ``output_tokens``)."""

    input: float = msgspec.field(default=0.0)
    output: float = 0.0
    cached_input: float | None = None

    def cost(self, inp: int, cached: int, out: int) -> float:
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (max(0, inp - cached) * self.input + cached * cached_price + out * self.output) / 1_000_000


class _Turn:
    __slots__ = ("thread_id", "turn_id", "instance_id", "driver", "model", "state", "started_at", "ended_at",
                 "counts", "provider_cost", "rebased")

    def __init__(self, thread_id: str, turn_id: str, instance_id: str, driver: str, model: str | None,
                 started_at: float) -> None:
        self.thread_id = thread_id
        self.turn_id = turn_id
        self.instance_id = instance_id
        self.driver = driver
        self.model = model
        self.state = "running"
        self.started_at = started_at
        self.ended_at: float | None = None
        self.counts = [0, 0, 0, 0]  # _KINDS
        self.provider_cost: float | None = None
        self.rebased = False  # a report of this turn went below the thread's total


class _Thread:
    __slots__ = ("instance_id", "driver", "model", "last", "last_cost", "turn")

    def __init__(self, instance_id: str, driver: str) -> None:
        self.instance_id = instance_id
        self.driver = driver
        self.model: str | None = None
        self.last = [0, 0, 0, 0]  # the cumulative counts of the last report
        self.last_cost = 0.0
        self.turn: _Turn | None = None  # the running turn, else the last one


_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage_turns (
    thread_id TEXT NOT NULL, turn_id TEXT NOT NULL, instance_id TEXT NOT NULL, driver TEXT NOT NULL,
    model TEXT, state TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL,
    input_tokens INTEGER NOT NULL, cached_input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL, provider_cost REAL,
    PRIMARY KEY (thread_id, turn_id));
CREATE TABLE IF NOT EXISTS usage_threads (
    thread_id TEXT PRIMARY KEY, instance_id TEXT NOT NULL, driver TEXT NOT NULL, model TEXT,
    last TEXT NOT NULL, last_cost REAL NOT NULL, turn_id TEXT);
CREATE TABLE IF NOT EXISTS usage_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS usage_processes (
    instance_id TEXT PRIMARY KEY, cpu_seconds REAL NOT NULL, peak_rss_bytes INTEGER NOT NULL);
"""


class UsageLedger:
    """See the module docstring. ``path`` is the store file (``paddock.db``); ``pricing`` maps a
    model id to its prices. Raises :class:`PersistenceError` when the store cannot be opened."""

    def __init__(self, path: Path, pricing: Mapping[str, Pricing] | None = None,
                 *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._pricing = dict(pricing or {})
        self._clock = clock
        self._lock = threading.Lock()
        self._turns: dict[tuple[str, str], _Turn] = {}
        self._threads: dict[str, _Thread] = {}
        self._dirty_turns: set[tuple[str, str]] = set()
        self._dirty_threads: set[str] = set()
        self._processes: dict[str, list] = {}  # instance -> [cpu seconds, peak RSS bytes]
        self.folded_seq = 0
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
            self._db.executescript(_SCHEMA)
            self._load()
        except sqlite3.Error as exc:
            raise PersistenceError("open the usage ledger", str(exc)) from None

    # folding (the reader thread) ----------------------------------------------------------------

    def fold(self, batch: list[EventBase]) -> set[str]:
        """Fold events (in ``seq`` order; ones at or below :attr:`folded_seq` are skipped) and
        write what changed. Returns the ids of the threads whose figures changed."""
        touched: set[str] = set()
        with self._lock:
            for ev in batch:
                if ev.seq and ev.seq <= self.folded_seq:
                    continue
                if isinstance(ev, ThreadTokenUsageUpdated):
                    self._usage(ev)
                elif isinstance(ev, TurnStarted):
                    self._started(ev)
                elif isinstance(ev, TurnCompleted):
                    self._completed(ev)
                elif isinstance(ev, SessionStarted):
                    self._thread(ev).model = ev.model or self._thread(ev).model
                    self._dirty_threads.add(ev.thread_id)
                    continue
                else:
                    continue
                touched.add(ev.thread_id)
            if batch and batch[-1].seq > self.folded_seq:
                self.folded_seq = batch[-1].seq  # the log is read up to here, folded or not
            rows = self._take_rows()
        self._write(*rows)
        return touched

    def _thread(self, ev: EventBase) -> _Thread:
        thread = self._threads.get(ev.thread_id)
        if thread is None:
            thread = self._threads[ev.thread_id] = _Thread(ev.instance_id, ev.driver)
        else:
            thread.instance_id, thread.driver = ev.instance_id, ev.driver
        return thread

    def _started(self, ev: TurnStarted) -> None:
        thread = self._thread(ev)
        turn_id = ev.turn_id or ""
        turn = _Turn(ev.thread_id, turn_id, ev.instance_id, ev.driver, ev.model or thread.model,
                     ev.created_at or self._clock())
        self._turns[(ev.thread_id, turn_id)] = turn
        thread.turn = turn
        self._dirty_turns.add((ev.thread_id, turn_id))
        self._dirty_threads.add(ev.thread_id)

    def _completed(self, ev: TurnCompleted) -> None:
        turn = self._turns.get((ev.thread_id, ev.turn_id or ""))
        if turn is None or turn.ended_at is not None:
            return
        turn.state = ev.state
        turn.ended_at = max(turn.started_at, ev.created_at or self._clock())
        u = ev.usage
        if turn.rebased and u is not None:
            own = (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens)
            turn.counts = [max(c, o or 0) for c, o in zip(turn.counts, own)]
        self._dirty_turns.add((turn.thread_id, turn.turn_id))

    def _usage(self, ev: ThreadTokenUsageUpdated) -> None:
        thread = self._thread(ev)
        u = ev.usage
        now = [u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens]
        delta = [0, 0, 0, 0]
        rebased = False
        for i, value in enumerate(now):
            if value is None:
                continue
            last = thread.last[i]
            if value >= last:
                delta[i] = value - last
            else:
                rebased = True  # a new base (see the module docstring): nothing booked for it
            thread.last[i] = value
        cost_delta = None
        if u.cost is not None:
            cost_delta = u.cost - thread.last_cost if u.cost >= thread.last_cost else 0.0
            thread.last_cost = u.cost
        turn = self._turns.get((ev.thread_id, ev.turn_id)) if ev.turn_id else None
        if turn is None:
            turn = thread.turn
        if turn is None:  # usage before any turn: booked on a turn of its own
            turn = _Turn(ev.thread_id, "", ev.instance_id, ev.driver, thread.model, ev.created_at or self._clock())
            turn.state = "none"
            turn.ended_at = turn.started_at
            self._turns[(ev.thread_id, "")] = turn
            thread.turn = turn
        for i in range(4):
            turn.counts[i] += delta[i]
        turn.rebased = turn.rebased or rebased
        if cost_delta is not None:
            turn.provider_cost = (turn.provider_cost or 0.0) + cost_delta
        self._dirty_turns.add((turn.thread_id, turn.turn_id))
        self._dirty_threads.add(ev.thread_id)

    def note_processes(self, sampled: Mapping[str, tuple[float, int]]) -> None:
        """Add a :class:`~paddock._state._processes.ProcessMeter` sample (per instance: CPU
        seconds since the last one, RSS now) and write it (the reader thread)."""
        if not sampled:
            return
        with self._lock:
            rows = []
            for instance, (cpu, rss) in sampled.items():
                figures = self._processes.setdefault(instance, [0.0, 0])
                figures[0] += cpu
                figures[1] = max(figures[1], rss)
                rows.append((instance, figures[0], figures[1]))
        try:
            self._db.executemany("INSERT OR REPLACE INTO usage_processes VALUES (?, ?, ?)", rows)
        except sqlite3.Error:
            pass  # kept in memory

    # reading (any thread) -----------------------------------------------------------------------

    def _cost(self, turn: _Turn) -> tuple[float | None, str]:
        if turn.provider_cost is not None:
            return turn.provider_cost, "provider"
        model = turn.model
        price = None
        if model:
            price = self._pricing.get(model) or self._pricing.get(model.rsplit("/", 1)[-1])
        if price is None:
            return None, "unknown"
        c = turn.counts
        return price.cost(c[0], c[1], c[2]), "pricing"

    def _figures(self, turns: Iterable[_Turn], now: float) -> dict[str, object]:
        acc = [0, 0, 0, 0]
        cost: float | None = None
        sources: set[str] = set()
        count = 0
        seconds = 0.0
        for t in turns:
            for i in range(4):
                acc[i] += t.counts[i]
            c, source = self._cost(t)
            sources.add(source)
            if c is not None:
                cost = (cost or 0.0) + c
            if t.state != "none":
                count += 1
                seconds += (t.ended_at if t.ended_at is not None else now) - t.started_at
        source = next(iter(sources)) if len(sources) == 1 else ("mixed" if sources else "unknown")
        return dict(input_tokens=acc[0], cached_input_tokens=acc[1], output_tokens=acc[2], reasoning_tokens=acc[3],
                    total_tokens=acc[0] + acc[2], cost=cost, cost_source=source, turns=count,
                    turn_seconds=round(seconds, 3))

    def totals(self, since: float | None = None, *, thread_id: str | None = None,
               instance: str | None = None) -> UsageFigures:
        """The figures of the turns started at or after ``since`` (of a thread or an instance)."""
        now = self._clock()
        with self._lock:
            return UsageFigures(**self._figures(self._select(since, thread_id, instance), now))  # type: ignore[arg-type]

    def _select(self, since: float | None, thread_id: str | None, instance: str | None) -> list[_Turn]:
        """The turns started at or after ``since`` (of a thread, of an instance); under the lock."""
        return [t for t in self._turns.values()
                if (since is None or t.started_at >= since)
                and (thread_id is None or t.thread_id == thread_id)
                and (instance is None or t.instance_id == instance)]

    def running(self, *, thread_id: str | None = None,
                instance: str | None = None) -> list[tuple[str, str, str, str | None]]:
        """``(driver, instance_id, thread_id, turn_id)`` of the running turns (of a thread or an
        instance)."""
        with self._lock:
            return [(t.driver, t.instance_id, t.thread_id, t.turn_id or None) for t in self._turns.values()
                    if t.state == "running" and (thread_id is None or t.thread_id == thread_id)
                    and (instance is None or t.instance_id == instance)]

    def report(self, thread_id: str | None = None, instance: str | None = None,
               since: float | None = None) -> UsageReport:
        """See :meth:`paddock.Runtime.usage`."""
        now = self._clock()
        with self._lock:
            turns = self._select(since, thread_id, instance)
            by_thread: dict[str, list[_Turn]] = {}
            by_instance: dict[str, list[_Turn]] = {}
            for t in turns:
                by_thread.setdefault(t.thread_id, []).append(t)
                by_instance.setdefault(t.instance_id, []).append(t)
            total = UsageFigures(**self._figures(turns, now))  # type: ignore[arg-type]
            instances = tuple(InstanceUsage(instance_id=i, driver=ts[-1].driver, **self._figures(ts, now),  # type: ignore[arg-type]
                                            **self._process_figures(i if thread_id is None else None))  # type: ignore[arg-type]
                              for i, ts in sorted(by_instance.items()))
            if thread_id is None and instance is None:
                total = msgspec.structs.replace(total, **self._process_figures(None, every=True))  # type: ignore[arg-type]
            threads = tuple(ThreadUsage(thread_id=k, instance_id=ts[-1].instance_id, driver=ts[-1].driver,
                                        **self._figures(ts, now))  # type: ignore[arg-type]
                            for k, ts in sorted(by_thread.items()))
            listed: tuple[TurnUsage, ...] = ()
            if thread_id is not None:
                listed = tuple(TurnUsage(thread_id=t.thread_id, turn_id=t.turn_id, instance_id=t.instance_id,
                                         driver=t.driver, model=t.model, state=t.state, started_at=t.started_at,
                                         ended_at=t.ended_at, **self._figures([t], now))  # type: ignore[arg-type]
                               for t in sorted(turns, key=lambda t: t.started_at))
        return UsageReport(total=total, instances=instances, threads=threads, turns=listed, since=since)

    def _process_figures(self, instance: str | None, *, every: bool = False) -> dict[str, object]:
        """``cpu_seconds`` and ``peak_rss_bytes`` of an instance's processes (of all of them with
        ``every``: CPU summed, RSS the highest instance's); none for a thread (its agent process
        may serve other threads too)."""
        rows = list(self._processes.values()) if every else (
            [self._processes[instance]] if instance is not None and instance in self._processes else [])
        if not rows:
            return {}
        return {"cpu_seconds": round(sum(r[0] for r in rows), 3), "peak_rss_bytes": max(r[1] for r in rows)}

    # the store ----------------------------------------------------------------------------------

    def _take_rows(self) -> tuple[list[tuple], list[tuple]]:
        turns = []
        for key in self._dirty_turns:
            t = self._turns.get(key)
            if t is not None:
                turns.append((t.thread_id, t.turn_id, t.instance_id, t.driver, t.model, t.state, t.started_at,
                              t.ended_at, *t.counts, t.provider_cost))
        threads = []
        for thread_id in self._dirty_threads:
            th = self._threads[thread_id]
            threads.append((thread_id, th.instance_id, th.driver, th.model, msgspec.json.encode(th.last).decode(),
                            th.last_cost, th.turn.turn_id if th.turn is not None else None))
        self._dirty_turns.clear()
        self._dirty_threads.clear()
        return turns, threads

    def _write(self, turns: list[tuple], threads: list[tuple]) -> None:
        db = self._db
        try:
            db.execute("BEGIN")
            if turns:
                db.executemany("INSERT OR REPLACE INTO usage_turns VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", turns)
            if threads:
                db.executemany("INSERT OR REPLACE INTO usage_threads VALUES (?,?,?,?,?,?,?)", threads)
            db.execute("INSERT OR REPLACE INTO usage_meta VALUES ('folded_seq', ?)", (self.folded_seq,))
            db.execute("COMMIT")
        except sqlite3.Error:
            # The figures stay in memory; the next start folds the log again from the seq stored.
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _load(self) -> None:
        db = self._db
        row = db.execute("SELECT value FROM usage_meta WHERE key = 'folded_seq'").fetchone()
        self.folded_seq = int(row[0]) if row else 0
        for r in db.execute("SELECT * FROM usage_turns"):
            t = _Turn(r[0], r[1], r[2], r[3], r[4], r[6])
            t.state, t.ended_at, t.counts, t.provider_cost = r[5], r[7], [r[8], r[9], r[10], r[11]], r[12]
            self._turns[(t.thread_id, t.turn_id)] = t
        for instance, cpu, rss in db.execute("SELECT * FROM usage_processes"):
            self._processes[instance] = [cpu, rss]
        for r in db.execute("SELECT * FROM usage_threads"):
            th = _Thread(r[1], r[2])
            th.model, th.last, th.last_cost = r[3], list(msgspec.json.decode(r[4])), r[5]
            th.turn = self._turns.get((r[0], r[6])) if r[6] is not None else None
            self._threads[r[0]] = th


    def read_up_to(self, seq: int) -> None:
        """Note that the log has been read up to ``seq`` (the reader drained the hub's last
        events at closing): the next start replays from there, not from the last event folded."""
        with self._lock:
            if seq <= self.folded_seq:
                return
            self.folded_seq = seq
        try:
            self._db.execute("INSERT OR REPLACE INTO usage_meta VALUES ('folded_seq', ?)", (seq,))
        except sqlite3.Error:
            pass

    def close(self) -> None:
        try:
            self._db.close()
        except sqlite3.Error:
            pass
