"""``paddock bench soak``: many sessions and turns for N minutes under random faults, checking that
every turn ends, no subscriber loses an event, no process outlives its session, memory and
threads stay flat and ``close()`` keeps its budget.

Five lanes run at once, through the public API only, on the built-in ``local`` agent:

- ``local``: a :class:`paddock.Runtime` in this process (``--instances`` agent processes,
  ``--sessions`` sessions, a third of them ``approval-required`` with a responder answering
  their requests), and four subscribers of every event: ``ledger`` (feeds the turn ledger),
  ``steady``, ``stall`` (``max_buffered=500``, so a stall sends it to the log) and ``reconnect``;
- ``disk``: a second Runtime whose state directory is a small tmpfs (``mount -t tmpfs``; when the
  machine refuses, this lane and its fault are skipped and the JSON says why), two sessions;
- ``server``: a ``paddock serve`` subprocess on a unix socket and a
  :class:`paddock.client.RemoteRuntime` client with two sessions and a ledger subscriber;
- ``endpoint``: a third in-process Runtime, one instance whose model ``endpoint`` is a loopback
  listener of this process (``endpoint_timeout`` 2 s), one session running quiet turns (two
  chunks, then 12 s of silence, as an agent waiting on its model);
- ``limits`` (issue 35; ``--no-limits`` skips it): a fourth in-process Runtime, two instances
  under ``limits`` (``LIMITS``) with ``max_running_turns`` 2 and ``queue = true``,
  ``--limits-sessions`` worker sessions running short streams and ``BURST_SESSIONS`` idle
  sessions per instance that only ``queue_burst`` sends on.

Every session runs turns back to back: short streams with ``@delay``, bursts of ``@chunks``,
``@write`` approvals, ``@spawn`` grandchildren that outlive their turn, and some interrupted
mid-way. Faults, drawn from one seeded RNG and logged with their time:

- ``agent_kill9`` / ``shim_kill``: SIGKILL of a local-lane agent (``paddock.drivers.local``) or of
  its orphan-guard shim (``supervisors/_shim.py``), found among this process's descendants by
  command line; every process of the killed tree must be gone within ``orphan_bound_s``;
- ``agent_stop``: SIGSTOP of an agent, SIGCONT after at most ``stop_pause_max_s``;
- ``agent_crash``: the next turn of a session asks the agent to ``@crash``; these three end an
  agent, so they stay within 2 per instance per 60 s (an instance's supervisor gives it up after
  more than 3 restarts in 60 s, by design); one beyond is counted as deferred instead;
- ``subscriber_stall``: the ``stall`` subscriber stops reading for a while;
- ``subscriber_disconnect``: the ``reconnect`` subscriber is closed and re-opened with
  ``from_seq`` = last seen + 1;
- ``disk_fill``: a ballast file fills the disk lane's tmpfs, held a few seconds, then deleted;
- ``server_restart``: SIGTERM to ``paddock serve``, then the same command again; the client's
  sessions resume and its subscriber re-opens from the last seen ``seq`` + 1;
- ``start_race``: SIGKILL of a local-lane agent, then at once ``start_session`` of a new thread on
  its instance: it must wait for the restart and run a turn (``starts_survive_restarts``);
- ``client_interrupt``: a one-shot ``paddock run`` through the server lane gets SIGINT mid-turn:
  it must exit 130 and leave its session stopped in the server;
- ``disk_full_close``: the disk lane's tmpfs is filled, and once the runtime refuses work it is
  closed with the disk still full; then the disk is freed and the directory opened again;
- ``endpoint_dead``: the endpoint lane's listener is closed for 15-25 s, then listens again;
- ``limit_memory`` / ``limit_processes``: a limits-lane worker's next turn ``@alloc``s /
  ``@fork``s past its instance's limit (one at a time, within the instance's budget of
  agent-ending faults);
- ``queue_burst``: a send on each burst session of one limits-lane instance at once (they queue
  behind its workers), about half of the queued ones interrupted at once.

``--faults a,b`` injects only those kinds (for a test of one fault).

Invariants (``invariants``: ``held`` plus bounded ``details``), live and at the end, after each
lane is closed and its log read back with :class:`paddock.StateReader`:

- ``turns_end_exactly_once``: every turn the log shows started has exactly one
  ``turn.completed``, and ended within ``turn_end_bound_s`` of its start (a grace that covers the
  longest stop pause) as the live ledger saw it (a turn ``send_turn`` accepted whose every event a
  full-disk close then gave up, reported by its ``CloseReport``, is counted in the ledger's
  ``given_up``, not owed an end: the log never held it);
- ``subscribers_match_log``: each subscriber's ``seq`` strictly increases, and between the first
  and the last event it received (across re-opens) it got exactly the log's events;
- ``no_process_outlives_its_session``: killed trees die, a stopped server leaves none of its
  descendants, and after every close this process has no descendant;
- ``resources_flat``: the host's RSS and thread count (medians of a window near the start and
  one at the end of the fault phase) grow no more than ``host_rss_growth_mb_max`` and
  ``host_threads_growth_max``;
- ``close_within_budget``: every ``close(timeout)`` returns, never raises, within ``timeout`` +
  1 s (the last one of the local lane with one agent stopped, as a hung agent would be);
- ``one_session_exited_per_session``: no thread logs two ``session.exited`` without a
  ``session.started`` between them;
- ``full_disk_close_releases``: a close with the disk still full returns within its timeout + 1 s,
  reports events given up when the runtime was seen refusing work (``CloseReport.events_given_up``),
  leaves no survivor, and releases the state directory: the next ``Runtime.open`` of it succeeds
  (the lane's recovery then ends the turns the given-up events left open);
- ``dead_endpoint_fails_in_bound``: a quiet turn running while the endpoint is dead ends failed,
  its error naming the endpoint, within ``endpoint_timeout`` + ``endpoint_fail_margin_s`` of the
  later of its start and the endpoint's death; no turn fails so while the endpoint is live; and
  every other lane completes turns while it is dead (unless a fault of its own held it up);
- ``queued_turns_end_once_unsent_when_interrupted``, ``running_turns_within_bound``,
  ``over_limit_agents_killed_alone_and_resumed``: the limits lane's (:func:`judge_limits_log`
  and :meth:`LimitsLane._over_limit`).

``meets_targets`` is true when every invariant held. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import heapq
import json
import os
import random
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, emit  # noqa: E402

TARGETS = {
    "turn_end_bound_s": 30.0,
    "orphan_bound_s": 5.0,
    "stop_pause_max_s": 5.0,
    "close_budget_extra_s": 1.0,
    "host_rss_growth_mb_max": 32.0,
    "host_threads_growth_max": 8,
    "endpoint_fail_margin_s": 5.0,
}
FAULT_ENDS = ("agent_cont", "disk_free", "endpoint_back")  # logged when a fault ends
DETAILS_MAX = 20  # offending details kept per invariant
FAULT_LOG_MAX = 400
SAMPLES_MAX = 60  # resource samples kept in the document (evenly spread)
CLOSE_TIMEOUT = 10.0

FAULT_WEIGHTS = {
    "agent_kill9": 3,
    "agent_stop": 3,
    "shim_kill": 2,
    "agent_crash": 2,
    "subscriber_stall": 3,
    "subscriber_disconnect": 3,
    "disk_fill": 2,
    "server_restart": 2,
    "start_race": 2,
    "client_interrupt": 2,
    "disk_full_close": 1,
    "endpoint_dead": 1,
}
SLOW_FAULT_SPACING = {"disk_fill": 12.0, "server_restart": 15.0, "start_race": 6.0, "client_interrupt": 10.0,
                      "disk_full_close": 30.0, "endpoint_dead": 30.0}
# seconds between two of a kind
# An instance's supervisor gives it up after more than 3 agent restarts within 60 s (restart
# intensity, by design): faults that end an agent stay within 2 per instance per 60 s, leaving
# room for one restart the runtime makes itself.
AGENT_ENDS_PER_WINDOW = 2
AGENT_ENDS_WINDOW_S = 60.0


if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.client import RemoteRuntime

    Client = Runtime | RemoteRuntime  # what a lane's workers, taps and responder call


# -- bookkeeping shared by every thread -----------------------------------------------------------


def _log_last_seq(state_dir: Path | str) -> int:
    """The last seq committed to ``state_dir``'s event log (0 when it is empty), read directly."""
    import sqlite3

    db = sqlite3.connect(f"file:{Path(state_dir) / 'events.db'}?mode=ro", uri=True)
    try:
        row = db.execute("SELECT max(last_seq) FROM event_chunks").fetchone()
    finally:
        db.close()
    return int(row[0] or 0)

class Clock:
    """Seconds since the soak started (monotonic)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def stamp(self) -> float:
        return round(self.now(), 3)


class Violations:
    """Offences per invariant: a count and the first ``DETAILS_MAX`` details (any thread)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.details: dict[str, list[dict[str, Any]]] = {}

    def add(self, invariant: str, **detail: Any) -> None:
        with self._lock:
            self.counts[invariant] += 1
            kept = self.details.setdefault(invariant, [])
            if len(kept) < DETAILS_MAX:
                kept.append({"t": self._clock.stamp(), **detail})


class FaultLog:
    """Every fault injected, with its time (any thread)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.entries: list[dict[str, Any]] = []
        self.dropped = 0
        self.skipped: dict[str, str] = {}

    def log(self, kind: str, lane: str, **detail: Any) -> None:
        with self._lock:
            self.counts[kind] += 1
            if len(self.entries) < FAULT_LOG_MAX:
                self.entries.append({"t": self._clock.stamp(), "kind": kind, "lane": lane, **detail})
            else:
                self.dropped += 1


class Operations:
    """Outcomes of the calls the workload makes, per operation (any thread)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.ok: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.samples: list[dict[str, Any]] = []
        self.thread_names: list[dict[str, int] | None] = [None, None]  # start window, end window
        self.memory_snapshots: list[Any] = [None, None]  # tracemalloc, with --trace-memory
        self.soak_start = 0.0  # clock times when the fault phase starts and ends
        self.soak_end = float("inf")

    def success(self, op: str) -> None:
        with self._lock:
            self.ok[op] += 1

    def failure(self, lane: str, op: str, exc: BaseException) -> None:
        key = f"{op}: {type(exc).__name__}"
        with self._lock:
            self.errors[key] += 1
            if self.errors[key] <= 3 and len(self.samples) < 2 * DETAILS_MAX:  # a few of each kind
                self.samples.append({"t": self._clock.stamp(), "lane": lane, "op": op,
                                     "error": type(exc).__name__, "message": str(exc)[:240]})

    def document(self) -> dict[str, Any]:
        with self._lock:
            return {"ok": dict(self.ok), "errors": dict(self.errors), "error_samples": list(self.samples)}


class TurnLedger:
    """Turns of one lane, as its ledger subscriber delivers them.

    ``event`` runs in that subscriber's consumer thread; ``accepted`` and ``wait`` in the lane's
    worker threads; ``sweep`` in the fault thread. Completed turn ids are remembered for the last
    ``_RECENT`` turns only (the log check at the end is the exhaustive one)."""

    _RECENT = 4096

    def __init__(self, lane: str, clock: Clock, violations: Violations) -> None:
        self.lane = lane
        self._clock = clock
        self._violations = violations
        self._cond = threading.Condition()
        self._open: dict[str, tuple[float, str]] = {}  # turn id -> (started at, thread id)
        self._labels: dict[str, str] = {}  # open turn id -> what the workload asked of it
        self._done: dict[str, tuple[str, str, float]] = {}  # turn id -> (state, error, clock time seen)
        self._flagged: set[str] = set()
        self.started = 0
        self.completed = 0
        self.given_up = 0  # turns whose every event a full-disk close gave up (see give_up)
        self.states: Counter[str] = Counter()

    def event(self, ev: Any) -> None:
        kind = ev.type
        if kind == "turn.started" and ev.turn_id:
            with self._cond:
                if ev.turn_id not in self._done:
                    self._open.setdefault(ev.turn_id, (self._clock.now(), ev.thread_id or ""))
                self.started += 1
        elif kind == "turn.completed" and ev.turn_id:
            with self._cond:
                if ev.turn_id in self._done:
                    self._violations.add("turns_end_exactly_once", lane=self.lane, turn_id=ev.turn_id,
                                         problem="second turn.completed seen live", seq=ev.seq)
                    return
                self._open.pop(ev.turn_id, None)
                self._labels.pop(ev.turn_id, None)
                self._flagged.discard(ev.turn_id)
                self._done[ev.turn_id] = (ev.state, ev.error or "", self._clock.now())
                if len(self._done) > self._RECENT:
                    self._done.pop(next(iter(self._done)))
                self.completed += 1
                self.states[ev.state] += 1
                self._cond.notify_all()

    def accepted(self, turn_id: str, thread_id: str, label: str) -> None:
        """``send_turn`` returned ``turn_id``: it counts as open until its completion is seen."""
        with self._cond:
            if turn_id not in self._done:
                self._open.setdefault(turn_id, (self._clock.now(), thread_id))
                self._labels[turn_id] = label

    def note(self, turn_id: str, text: str) -> None:
        """Add ``text`` to an open turn's label (reported if it does not end in time)."""
        with self._cond:
            if turn_id in self._labels:
                self._labels[turn_id] += f"; {text}"

    def wait(self, turn_id: str, timeout: float, stop: threading.Event) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while turn_id in self._open or turn_id not in self._done:
                left = deadline - time.monotonic()
                if left <= 0 or stop.is_set():
                    return False
                self._cond.wait(min(left, 0.5))
            return True

    def outcome(self, turn_id: str) -> tuple[str, str, float] | None:
        """How a recent turn ended, as seen live: (state, error, clock time), or ``None``."""
        with self._cond:
            return self._done.get(turn_id)

    def open_count(self) -> int:
        """Open turns not yet flagged as late (those are reported already)."""
        with self._cond:
            return sum(1 for tid in self._open if tid not in self._flagged)

    def sweep(self, bound: float) -> None:
        now = self._clock.now()
        with self._cond:
            late = [(tid, started, thread, self._labels.get(tid, "")) for tid, (started, thread) in self._open.items()
                    if now - started > bound and tid not in self._flagged]
            self._flagged.update(tid for tid, _, _, _ in late)
        for tid, started, thread, label in late:
            self._violations.add("turns_end_exactly_once", lane=self.lane, turn_id=tid, thread_id=thread,
                                 problem=f"not ended {bound:.0f} s after it started", started_at=round(started, 3),
                                 turn=label)

    def open_since_before(self, when: float) -> list[str]:
        """Open turns the lane saw accepted or started before clock time ``when``."""
        with self._cond:
            return [tid for tid, (started, _) in self._open.items() if started <= when]

    def give_up(self, turn_ids: list[str]) -> None:
        """Turns whose every event a close gave up (the disk refused them, and the close said
        so): no ``turn.completed`` can come, and none is owed; they leave the open set."""
        with self._cond:
            for tid in turn_ids:
                self._open.pop(tid, None)
                self._labels.pop(tid, None)
                self._flagged.discard(tid)
            self.given_up += len(turn_ids)
            self._cond.notify_all()

    def still_open(self) -> list[dict[str, Any]]:
        with self._cond:
            return [{"turn_id": tid, "thread_id": thread, "started_at": round(started, 3),
                     "turn": self._labels.get(tid, "")}
                    for tid, (started, thread) in list(self._open.items())[:DETAILS_MAX]]


class SeqRuns:
    """A set of ``seq`` numbers as sorted runs ``[first, last]``: memory grows with the gaps, not
    with the events."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []
        self.count = 0

    def add(self, seq: int) -> None:
        self.count += 1
        if self.runs and self.runs[-1][1] + 1 == seq:
            self.runs[-1][1] = seq
        else:
            self.runs.append([seq, seq])

    @property
    def first(self) -> int | None:
        return self.runs[0][0] if self.runs else None

    @property
    def last(self) -> int | None:
        return self.runs[-1][1] if self.runs else None

    def clipped(self, first: int, last: int) -> list[list[int]]:
        out = []
        for a, b in self.runs:
            a, b = max(a, first), min(b, last)
            if a <= b:
                out.append([a, b])
        return out


def _missing(expected: list[list[int]], got: list[list[int]]) -> tuple[int, list[list[int]]]:
    """Seqs in ``expected`` runs but not in ``got`` runs: (count, the first ranges)."""
    out: list[list[int]] = []
    count = 0
    j = 0
    for a, b in expected:
        cur = a
        while cur <= b:
            while j < len(got) and got[j][1] < cur:
                j += 1
            if j < len(got) and got[j][0] <= cur:
                cur = got[j][1] + 1
                continue
            end = b if j >= len(got) else min(b, got[j][0] - 1)
            count += end - cur + 1
            if len(out) < DETAILS_MAX:
                out.append([cur, end])
            cur = end + 1
    return count, out


# -- subscribers ----------------------------------------------------------------------------------


class Tap:
    """One subscriber of a lane, on its own consumer thread (``paddock-soak-tap-<name>``).

    It records every ``seq`` it receives (strictly increasing, else a violation), feeds the
    lane's ledger when it is the ledger, obeys stall and disconnect requests from the fault
    thread, and re-opens with ``from_seq`` = last seen + 1 whenever its subscription ends while
    the lane is still running (a server restart, a lane re-open)."""

    def __init__(self, lane: Lane, name: str, *, max_buffered: int | None = None, ledger: bool = False) -> None:
        self.lane = lane
        self.name = name
        self.max_buffered = max_buffered
        self.ledger = ledger
        self.seqs = SeqRuns()
        self.reopens = 0
        self.stalls = 0
        self.disconnects = 0
        self.out_of_order = 0
        self._stall_until = 0.0
        self._disconnect_for: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"paddock-soak-tap-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)

    def stall(self, seconds: float) -> None:
        """Fault thread: stop reading for ``seconds``."""
        with self._lock:
            self._stall_until = time.monotonic() + seconds
            self.stalls += 1

    def disconnect(self, seconds: float) -> None:
        """Fault thread: close the subscription, re-open it ``seconds`` later from the last seq + 1."""
        with self._lock:
            self._disconnect_for = seconds
            self.disconnects += 1

    def _subscribe(self) -> Any:
        from_seq = None if self.seqs.last is None else self.seqs.last + 1
        kw: dict[str, Any] = {} if self.max_buffered is None else {"max_buffered": self.max_buffered}
        if self.ledger and from_seq is None:
            from_seq = 1  # the ledger sees every turn of the lane, from its first event
        while not self._stop.is_set():
            try:
                return self.lane.client().subscribe(from_seq=from_seq, **kw)
            except Exception as exc:  # the server is down, the lane is re-opening
                self.lane.ops.failure(self.lane.name, "subscribe", exc)
                self._stop.wait(0.5)
        return None

    def _run(self) -> None:
        sub = self._subscribe()
        try:
            while not self._stop.is_set() and sub is not None:
                with self._lock:
                    stall_until, away = self._stall_until, self._disconnect_for
                    self._disconnect_for = None
                if time.monotonic() < stall_until:
                    self._stop.wait(min(0.2, stall_until - time.monotonic()))
                    continue
                if away is not None:
                    sub.close()
                    self._stop.wait(away)
                    self.reopens += 1
                    sub = self._subscribe()
                    continue
                try:
                    ev = sub.get(timeout=0.25)
                except Exception as exc:  # PersistenceError while catching up from a full disk
                    self.lane.ops.failure(self.lane.name, f"subscription.get ({self.name})", exc)
                    sub.close()
                    self._stop.wait(0.5)
                    self.reopens += 1
                    sub = self._subscribe()
                    continue
                if ev is None:
                    if sub.ended and not self._stop.is_set():
                        self._stop.wait(0.2)
                        self.reopens += 1
                        sub = self._subscribe()
                    continue
                last = self.seqs.last
                if last is not None and ev.seq <= last:
                    self.out_of_order += 1
                    self.lane.violations.add("subscribers_match_log", lane=self.lane.name, subscriber=self.name,
                                             problem="seq not increasing", seq=ev.seq, after=last)
                    continue
                self.seqs.add(ev.seq)
                if self.ledger:
                    self.lane.ledger.event(ev)
        finally:
            if sub is not None:
                with contextlib.suppress(Exception):
                    sub.close()

    def document(self) -> dict[str, Any]:
        return {"lane": self.lane.name, "name": self.name, "events": self.seqs.count,
                "first_seq": self.seqs.first, "last_seq": self.seqs.last, "reopens": self.reopens,
                "stalls": self.stalls, "disconnects": self.disconnects, "max_buffered": self.max_buffered}


# -- lanes ----------------------------------------------------------------------------------------


@dataclass
class Worker:
    """One session's turn loop (thread ``paddock-soak-<thread id>``)."""

    thread_id: str
    instance: str
    approvals: bool
    rng: random.Random
    crash_next: threading.Event = field(default_factory=threading.Event)
    turns: int = 0


class Lane:
    """One runtime (in-process or behind ``paddock serve``) with its sessions, subscribers and
    turn ledger. Subclasses say how the client is opened, closed and re-opened."""

    name = "lane"

    def __init__(self, soak: Soak, sessions: int, instances: int) -> None:
        self.soak = soak
        self.clock = soak.clock
        self.violations = soak.violations
        self.faults = soak.faults
        self.ops = soak.ops
        self.ledger = TurnLedger(self.name, self.clock, self.violations)
        self.instances = [f"{self.name}{n}" for n in range(instances)]
        self.workers = [
            Worker(f"{self.name}-t{n}", self.instances[n % instances], approvals=n % 3 == 2,
                   rng=random.Random(f"{soak.seed}-{self.name}-{n}"))
            for n in range(sessions)
        ]
        self.taps: list[Tap] = []
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.closes: list[dict[str, Any]] = []
        self.workspace = ""
        self.state_dir = ""
        self.finished = False

    # subclass API
    def client(self) -> Client:
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        return {
            "runtime": {"event_log": True},
            "instances": {iid: {"driver": "local"} for iid in self.instances},
        }

    # running
    def start(self) -> None:
        client = self.client()
        for w in self.workers:
            client.start_session(w.thread_id, instance=w.instance, cwd=self.workspace,
                                 runtime_mode="approval-required" if w.approvals else "full-access", timeout=60)
        for tap in self.taps:
            tap.start()
        if any(w.approvals for w in self.workers):
            self.threads.append(threading.Thread(target=self._respond, name=f"paddock-soak-{self.name}-respond",
                                                 daemon=True))
        self.threads += [threading.Thread(target=self._work, args=(w,), name=f"paddock-soak-{w.thread_id}",
                                          daemon=True) for w in self.workers]
        for t in self.threads:
            t.start()

    def _prompt(self, w: Worker) -> tuple[str, bool]:
        """The next prompt of ``w`` and whether to interrupt it mid-way."""
        rng = w.rng
        if w.crash_next.is_set():
            w.crash_next.clear()
            self.faults.log("agent_crash", self.name, thread_id=w.thread_id, instance=w.instance)
            return "@chunks 4\n@delay 0.05\n@crash 3", False
        roll = rng.random()
        if w.approvals and roll < 0.3:
            return f"@write soak-{w.thread_id}-{w.turns}.txt soak\n@chunks 3", False
        if roll < 0.10:
            return f"@chunks {rng.randint(50, 500)}", False
        if roll < 0.15:
            return f"@spawn {rng.randint(5, 40)}\n@chunks 3", False
        interrupt = rng.random() < 0.12
        delay = rng.uniform(0.005, 0.05)
        return f"@chunks {rng.randint(5, 40)}\n@delay {delay:.3f}\n@usage 10 20", interrupt

    @staticmethod
    def _label(prompt: str, instance: str) -> str:
        return f"{instance}: " + " ".join(line for line in prompt.split("\n") if not line.startswith("@write"))[:80]

    def _work(self, w: Worker) -> None:
        bound = TARGETS["turn_end_bound_s"]
        while not self.stop.is_set():
            prompt, interrupt = self._prompt(w)
            try:
                result = self.client().send_turn(w.thread_id, prompt, timeout=20)
            except Exception as exc:
                self.ops.failure(self.name, "send_turn", exc)
                self.stop.wait(0.3 + w.rng.random() * 0.5)
                continue
            self.ops.success("send_turn")
            w.turns += 1
            self.ledger.accepted(result.turn_id, w.thread_id, self._label(prompt, w.instance))
            if interrupt:
                sent = time.monotonic()
                self.stop.wait(w.rng.uniform(0.05, 0.4))
                started = time.monotonic()
                outcome = "returned"
                try:
                    self.client().interrupt_turn(w.thread_id, result.turn_id, timeout=15)
                    self.ops.success("interrupt_turn")
                except Exception as exc:
                    self.ops.failure(self.name, "interrupt_turn", exc)
                    outcome = f"raised {type(exc).__name__}"
                took = time.monotonic() - started
                self.ledger.note(result.turn_id, f"interrupt_turn {started - sent:.2f} s after send_turn "
                                                 f"{outcome} in {took:.2f} s")
                if took > 12:
                    self.ops.failure(self.name, "interrupt_turn", TimeoutError(f"interrupt_turn took {took:.1f} s"))
            self.ledger.wait(result.turn_id, bound, self.stop)
            self.stop.wait(w.rng.uniform(0.0, 0.15))

    def _respond(self) -> None:
        """Answer the approval requests of the lane's ``approval-required`` sessions."""
        rng = random.Random(f"{self.soak.seed}-{self.name}-respond")
        sub = None
        while not self.stop.is_set():
            if sub is None or sub.ended:
                try:
                    sub = self.client().subscribe(types=("request.opened",))
                except Exception as exc:
                    self.ops.failure(self.name, "subscribe", exc)
                    self.stop.wait(0.5)
                    continue
            try:
                ev = sub.get(timeout=0.25)
            except Exception as exc:
                self.ops.failure(self.name, "subscription.get (respond)", exc)
                sub = None
                continue
            if ev is None or ev.type != "request.opened" or ev.request_id is None:
                continue
            decision: Literal["accept", "decline"] = "decline" if rng.random() < 0.2 else "accept"
            try:
                self.client().respond_to_request(ev.thread_id, ev.request_id, decision, timeout=10)
                self.ops.success("respond_to_request")
            except Exception as exc:  # the turn may have ended under a fault meanwhile
                self.ops.failure(self.name, "respond_to_request", exc)
        if sub is not None:
            sub.close()

    def stop_workload(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(TARGETS["turn_end_bound_s"] + 20)

    def drain(self, grace: float) -> None:
        """Wait up to ``grace`` for the ledger to see every accepted turn end."""
        deadline = time.monotonic() + grace
        while self.ledger.open_count() and time.monotonic() < deadline:
            time.sleep(0.2)

    def tree(self) -> list[tuple[int, float, str]]:
        """This lane's live processes: descendants of this process under a shim whose command
        line names the lane's state directory."""
        out = []
        for shim in psutil.Process().children():
            try:
                if not any(self.state_dir in a for a in shim.cmdline()):
                    continue
                out += _snapshot([shim] + shim.children(recursive=True))
            except psutil.Error:
                continue
        return out

    def timed_close(self, rt: Client, why: str, timeout: float = CLOSE_TIMEOUT) -> Any:
        """``rt.close(timeout=timeout)``, timed; then every process the lane had must be gone.
        Returns what ``close`` returned (a ``CloseReport``), ``None`` when it raised."""
        tree = self.tree()
        started = time.monotonic()
        error = None
        report = None
        try:
            report = rt.close(timeout=timeout)
        except Exception as exc:
            error = f"{type(exc).__name__}: {str(exc)[:200]}"
        took = time.monotonic() - started
        record: dict[str, Any] = {"lane": self.name, "why": why, "timeout": timeout, "seconds": round(took, 3),
                                  "processes": len(tree)}
        if error:
            record["error"] = error
        self.closes.append(record)
        if took > timeout + TARGETS["close_budget_extra_s"]:
            self.violations.add("close_within_budget", problem="close() overran timeout + 1 s", **record)
        elif error:
            self.violations.add("close_within_budget", problem="close() raised instead of returning", **record)
        self.soak.expect_dead(tree, self.name, f"processes of the lane after close() ({why})", grace=0.0)
        return report

    def finish(self) -> None:
        """Close the lane (after its workload stopped)."""
        raise NotImplementedError

    def own_fault_mark(self) -> object:
        """Changes whenever a fault of the lane's own holds its turns up (see ``endpoint_dead``)."""
        return None

    # the log, read back after the lane closed
    def check_log(self) -> dict[str, Any]:
        from paddock import StateReader

        seqs = SeqRuns()
        started: dict[str, str] = {}
        completed: Counter[str] = Counter()
        states: Counter[str] = Counter()
        exited_last: dict[str, tuple[int, str] | None] = {}  # thread -> its last session.exited since session.started
        events = 0
        # Read up to the log's last committed seq, not until the follower is quiet for a while: a
        # 30-minute lane logs ~270,000 events, and on a loaded machine the first read took more than
        # the quiet spell, which made every event a subscriber saw look "not in the log".
        end = _log_last_seq(self.state_dir)
        deadline = time.monotonic() + 600
        follower = StateReader(self.state_dir).subscribe(from_seq=1, poll=0.01)
        try:
            while seqs.last is None or seqs.last < end:
                ev = follower.get(timeout=1.0)
                if ev is None:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"lane {self.name}: the log read back stopped at seq {seqs.last} of {end}")
                    continue
                events += 1
                seqs.add(ev.seq)
                if ev.type == "turn.started" and ev.turn_id:
                    started[ev.turn_id] = ev.thread_id or ""
                elif ev.type == "turn.completed" and ev.turn_id:
                    completed[ev.turn_id] += 1
                    states[ev.state] += 1
                elif ev.type == "session.started" and ev.thread_id:
                    exited_last[ev.thread_id] = None
                elif ev.type == "session.exited" and ev.thread_id:
                    before = exited_last.get(ev.thread_id)
                    if before is not None:
                        self.violations.add("one_session_exited_per_session", lane=self.name,
                                            thread_id=ev.thread_id,
                                            problem="a second session.exited without session.started between",
                                            first={"seq": before[0], "reason": before[1]},
                                            second={"seq": ev.seq, "reason": (ev.reason or "")[:160]})
                    exited_last[ev.thread_id] = (ev.seq, (ev.reason or "")[:160])
        finally:
            follower.close()
        never = [tid for tid in started if not completed[tid]]
        twice = [tid for tid, n in completed.items() if n > 1]
        for tid in never:
            self.violations.add("turns_end_exactly_once", lane=self.name, turn_id=tid, thread_id=started[tid],
                                problem="no turn.completed in the log")
        for tid in twice:
            self.violations.add("turns_end_exactly_once", lane=self.name, turn_id=tid,
                                problem=f"{completed[tid]} turn.completed in the log")
        for tap in self.taps:
            first, last = tap.seqs.first, tap.seqs.last
            if first is None or last is None:
                continue
            # Log retention (the disk lane's event_log_max_bytes) deleted the log's oldest events:
            # compare from the first one it kept. Before, a 30-minute disk lane reported the
            # 280,164 events retention had deleted as "not in the log".
            if seqs.first is not None:
                first = max(first, seqs.first)
            expected = seqs.clipped(first, last)
            seen = tap.seqs.clipped(first, last)
            lost, lost_ranges = _missing(expected, seen)
            extra, extra_ranges = _missing(seen, expected)
            if lost or extra:
                self.violations.add("subscribers_match_log", lane=self.name, subscriber=tap.name,
                                    lost=lost, lost_ranges=lost_ranges[:5], not_in_log=extra,
                                    not_in_log_ranges=extra_ranges[:5])
        return {"events": events, "first_seq": seqs.first, "last_seq": seqs.last, "seq_runs": len(seqs.runs),
                "turns_started": len(started), "turns_completed": sum(1 for n in completed.values() if n),
                "turns_never_completed": len(never), "turns_completed_twice": len(twice),
                "completed_by_state": dict(states)}


class LocalLane(Lane):
    """An in-process Runtime on a plain state directory; the target of the agent faults."""

    name = "local"

    def __init__(self, soak: Soak, sessions: int, instances: int) -> None:
        super().__init__(soak, sessions, instances)
        self.state_dir = tempfile.mkdtemp(prefix="local-", dir=soak.tmp)
        self.workspace = tempfile.mkdtemp(prefix="ws-local-", dir=soak.tmp)
        from paddock import Runtime

        self.rt = Runtime.open(self.config(), state_dir=self.state_dir)
        self.taps = [Tap(self, "ledger", ledger=True), Tap(self, "steady"), Tap(self, "stall", max_buffered=500),
                     Tap(self, "reconnect")]

    def client(self) -> Client:
        return self.rt

    def processes(self, kind: str) -> list[psutil.Process]:
        """This lane's live shims or agents (``kind`` is ``"shim"`` or ``"agent"``), by command line."""
        out = []
        for proc in psutil.Process().children(recursive=True):
            try:
                argv = proc.cmdline()
            except psutil.Error:
                continue
            if kind == "shim" and any(a.endswith("_shim.py") for a in argv) and any(self.state_dir in a for a in argv):
                out.append(proc)
            elif kind == "agent" and "paddock.drivers.local" in argv:
                try:
                    parent = proc.parent()
                    if parent is not None and any(self.state_dir in a for a in parent.cmdline()):
                        out.append(proc)
                except psutil.Error:
                    continue
        return out

    def finish(self) -> None:
        stopped = self.soak.stop_one_agent_for_close()
        self.timed_close(self.rt, "end of the soak" + (" (one agent stopped)" if stopped else ""))


class DiskLane(Lane):
    """An in-process Runtime whose state directory is a small tmpfs that the ``disk_fill`` fault
    fills. When the runtime still fails ``recovery_bound_s`` after the disk is freed, the lane
    is closed and re-opened (recorded), so the soak goes on measuring."""

    name = "disk"
    SIZE_MB = 64
    recovery_bound_s = 20.0
    REFUSAL_WAIT_S = 5.0  # disk_full_close: how long it waits for the runtime to refuse work
    FULL_CLOSE_TIMEOUT = 5.0

    def __init__(self, soak: Soak, mount_point: str) -> None:
        super().__init__(soak, 2, 1)
        self.state_dir = mount_point
        self.workspace = tempfile.mkdtemp(prefix="ws-disk-", dir=soak.tmp)
        self.fills = 0
        self.reopens: list[dict[str, Any]] = []
        self.recoveries: list[float | None] = []
        self.fill_bytes: list[int] = []
        self.full_closes: list[dict[str, Any]] = []
        self.busy = threading.Lock()  # held by the fault on the disk (one at a time)
        self._ballast = Path(mount_point) / "ballast"
        self._rt_lock = threading.Lock()
        self._rt = self._open()
        self.taps = [Tap(self, "ledger", ledger=True)]

    def config(self) -> dict[str, Any]:
        # Log retention keeps the log within a quarter of the tmpfs: without it the log itself
        # filled the disk after ~16 minutes, and no ballast left room to free (found by a 30-minute
        # soak; the runtime held what it could not write and refused new work, as it should).
        config = super().config()
        config["runtime"]["event_log_max_bytes"] = self.SIZE_MB * 2**20 // 4
        return config

    def _open(self) -> Any:
        from paddock import Runtime

        return Runtime.open(self.config(), state_dir=self.state_dir)

    def client(self) -> Client:
        with self._rt_lock:
            return self._rt

    @staticmethod
    def mount(tmp: str) -> tuple[str | None, str | None]:
        """A fresh tmpfs of ``SIZE_MB``: (mount point, None), or (None, why not)."""
        point = tempfile.mkdtemp(prefix="disk-", dir=tmp)
        try:
            proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DiskLane.SIZE_MB}m,mode=0700", "tmpfs", point],
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"mount -t tmpfs failed: {exc}"
        if proc.returncode != 0:
            return None, f"mount -t tmpfs failed: {(proc.stderr or proc.stdout).strip()[:200]}"
        return point, None

    def _fill(self) -> int:
        """Fill the tmpfs with the ballast file; the bytes written."""
        written = 0
        size = 1 << 20
        try:
            with open(self._ballast, "wb", buffering=0) as f:
                block = b"\0" * size
                while size >= 4096:
                    try:
                        written += f.write(block[:size])
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        size //= 4
        except OSError as exc:
            self.ops.failure(self.name, "disk_fill", exc)
        self.fills += 1
        self.fill_bytes.append(written)
        return written

    def fill_and_free(self, hold: float) -> None:
        """Fault thread of the disk fault: fill the tmpfs with a ballast file, hold, delete it,
        then time how long the lane takes to complete a turn again."""
        if not self.busy.acquire(blocking=False):
            return  # a full-disk close runs
        try:
            self._fill_and_free(hold)
        finally:
            self.busy.release()

    def _fill_and_free(self, hold: float) -> None:
        written = self._fill()
        self.faults.log("disk_fill", self.name, bytes=written, hold_s=round(hold, 2))
        self.stop.wait(hold)
        self._ballast.unlink(missing_ok=True)
        freed = self.clock.now()
        self.faults.log("disk_free", self.name)
        done = self.ledger.completed
        deadline = time.monotonic() + self.recovery_bound_s
        while time.monotonic() < deadline and not self.stop.is_set():
            if self.ledger.completed > done:
                self.recoveries.append(round(self.clock.now() - freed, 3))
                return
            time.sleep(0.1)
        if self.stop.is_set():
            return
        self.recoveries.append(None)
        self.violations.add("turns_end_exactly_once", lane=self.name,
                            problem=f"no turn completed within {self.recovery_bound_s:.0f} s after the disk was freed",
                            open_turns=self.ledger.still_open()[:5])
        self._reopen("no turn completed after the disk was freed")

    def close_while_full(self) -> None:
        """Fault thread of ``disk_full_close`` (issue 33 #1): fill the tmpfs, wait until the
        runtime refuses work (it holds what the disk refuses), close it with the disk still full,
        then free the disk and open the state directory again. The close must return within its
        timeout + 1 s, report the events it gave up (some, when the runtime was seen refusing),
        and release the directory: the next open succeeds (``full_disk_close_releases``)."""
        from paddock.contract import PersistenceError, StateDirLockedError

        if not self.busy.acquire(blocking=False):
            return  # a disk_fill runs
        try:
            with self._rt_lock:
                rt = self._rt
            written = self._fill()
            refused = False
            deadline = time.monotonic() + self.REFUSAL_WAIT_S
            while time.monotonic() < deadline and not self.stop.is_set():
                try:
                    rt.pending_requests(timeout=2)  # refused at once while the disk refuses the log
                except PersistenceError:
                    refused = True
                    break
                except Exception as exc:
                    self.ops.failure(self.name, "pending_requests", exc)
                time.sleep(0.1)
            self.faults.log("disk_full_close", self.name, bytes=written, refused=refused)
            report = self.timed_close(rt, "disk_full_close: the disk stays full through close",
                                      timeout=self.FULL_CLOSE_TIMEOUT)
            record: dict[str, Any] = {"t": self.clock.stamp(), "refused": refused,
                                      "seconds": self.closes[-1]["seconds"], "timeout": self.FULL_CLOSE_TIMEOUT}
            problems = []
            if self.closes[-1]["seconds"] > self.FULL_CLOSE_TIMEOUT + TARGETS["close_budget_extra_s"]:
                problems.append("close() overran timeout + 1 s")
            if report is None:
                problems.append(f"close() raised: {self.closes[-1].get('error')}")
            else:
                record["events_given_up"] = report.events_given_up
                record["survivors"] = list(report.survivors)
                if refused and report.events_given_up <= 0:
                    problems.append("the runtime refused work, yet close() reported no event given up")
                if report.survivors:
                    problems.append("close() left survivors")
            closed_at = self.clock.now()
            self._ballast.unlink(missing_ok=True)
            self.faults.log("disk_free", self.name)
            try:
                self._reopen_after_close("disk_full_close")
                record["reopened"] = True
                if report is not None and report.events_given_up > 0:
                    record["turns_given_up"] = self._excuse_given_up(closed_at)
            except StateDirLockedError as exc:
                record["reopened"] = False
                problems.append(f"the state dir is not released: {exc}"[:240])
            except Exception as exc:  # not about the lock: reported, not this invariant's business
                record["reopened"] = False
                self.ops.failure(self.name, "Runtime.open after a full-disk close", exc)
            self.full_closes.append(record)
            if problems:
                self.violations.add("full_disk_close_releases", lane=self.name, problems=problems, **record)
        finally:
            self._ballast.unlink(missing_ok=True)
            self.busy.release()

    def _excuse_given_up(self, closed_at: float) -> int:
        """After a full-disk close that gave events up and the open again: the turns still open
        from before the close whose ``turn.started`` is not in the log either were given up whole
        (``send_turn`` had returned, then the disk refused every event of theirs); the recovery
        at open cannot end what the log never held. Those leave the ledger (counted); a turn the
        log does hold stays open here, owed the end the recovery gives it (the drain waits)."""
        candidates = set(self.ledger.open_since_before(closed_at))
        if not candidates:
            return 0
        logged: set[str] = set()
        with self.client().subscribe(from_seq=1, types=["turn.started"], max_buffered=1_000_000) as sub:
            while (ev := sub.get(timeout=1.0)) is not None:
                if ev.turn_id:
                    logged.add(ev.turn_id)
        gone = sorted(candidates - logged)
        self.ledger.give_up(gone)
        return len(gone)

    def _reopen(self, why: str) -> None:
        with self._rt_lock:
            old = self._rt
        self.timed_close(old, f"re-open: {why}")
        try:
            self._reopen_after_close(why)
        except Exception as exc:
            self.reopens.append({"t": self.clock.stamp(), "why": why, "error": f"{type(exc).__name__}: {exc}"[:240]})

    def _reopen_after_close(self, why: str) -> None:
        """Open the state directory again (it raises what ``Runtime.open`` raises) and start the
        lane's sessions on it."""
        new = self._open()
        with self._rt_lock:
            self._rt = new
        self.reopens.append({"t": self.clock.stamp(), "why": why})
        for w in self.workers:
            try:
                new.start_session(w.thread_id, instance=w.instance, cwd=self.workspace, timeout=30)
            except Exception as exc:
                self.ops.failure(self.name, "start_session", exc)

    def finish(self) -> None:
        self.timed_close(self.client(), "end of the soak")

    def own_fault_mark(self) -> object:
        return self.fills, self.busy.locked()

    def document(self) -> dict[str, Any]:
        return {"mounted": True, "size_mb": self.SIZE_MB, "fills": self.fills, "fill_bytes": self.fill_bytes,
                "recovery_seconds": self.recoveries, "reopens": self.reopens, "full_closes": self.full_closes}


class _Listener:
    """A loopback TCP listener that accepts and drops every connection (thread
    ``paddock-soak-endpoint``): the model endpoint of the endpoint lane, as far as the runtime's
    check (a TCP connection) can tell. :meth:`kill` closes it (connections are refused),
    :meth:`revive` listens on the same port again."""

    def __init__(self) -> None:
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._down = threading.Event()
        self.port = 0
        self.revive()

    def revive(self) -> None:
        server = socket.create_server(("127.0.0.1", self.port))  # SO_REUSEADDR: the same port again
        server.settimeout(0.25)
        self.port = server.getsockname()[1]
        self._server = server
        self._down = threading.Event()
        self._thread = threading.Thread(target=self._accept, args=(server, self._down), name="paddock-soak-endpoint",
                                        daemon=True)
        self._thread.start()

    @staticmethod
    def _accept(server: socket.socket, down: threading.Event) -> None:
        while not down.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.close()

    def kill(self) -> None:
        self._down.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._server is not None:
            self._server.close()
            self._server = None


class EndpointLane(Lane):
    """An in-process Runtime with one ``local`` instance whose model ``endpoint`` is a loopback
    listener of this process, and one session running quiet turns (two chunks, then
    ``QUIET_S`` of silence, as an agent waiting on its model). The ``endpoint_dead`` fault
    closes the listener for a while (issue 33 #6): a turn running while it is dead must fail
    within ``endpoint_timeout`` + ``endpoint_fail_margin_s`` with the error naming the endpoint,
    no turn fails so on a live endpoint, and the other lanes complete turns meanwhile
    (``dead_endpoint_fails_in_bound``)."""

    name = "endpoint"
    ENDPOINT_TIMEOUT = 2.0
    QUIET_S = 12.0  # longer than endpoint_timeout + the margin: only a failure ends it in the bound

    def __init__(self, soak: Soak) -> None:
        self.listener = _Listener()
        self.url = f"http://127.0.0.1:{self.listener.port}/v1"
        super().__init__(soak, 1, 1)
        self.state_dir = tempfile.mkdtemp(prefix="endpoint-", dir=soak.tmp)
        self.workspace = tempfile.mkdtemp(prefix="ws-endpoint-", dir=soak.tmp)
        self.dead: list[tuple[float, float | None]] = []  # (died, back (None: still dead)), clock times
        self.turns_seen: list[tuple[str, float]] = []  # (turn id, clock time send_turn returned)
        self.summary: dict[str, Any] = {}
        self._lock = threading.Lock()
        from paddock import Runtime

        self.rt = Runtime.open(self.config(), state_dir=self.state_dir)
        self.taps = [Tap(self, "ledger", ledger=True)]

    def config(self) -> dict[str, Any]:
        config = super().config()
        for entry in config["instances"].values():
            entry.update(endpoint=self.url, endpoint_timeout=self.ENDPOINT_TIMEOUT)
        return config

    def client(self) -> Client:
        return self.rt

    def _prompt(self, w: Worker) -> tuple[str, bool]:
        return f"@chunks 2\n@delay {self.QUIET_S:g}\n@reply quiet turn", False

    def _work(self, w: Worker) -> None:
        bound = TARGETS["turn_end_bound_s"]
        while not self.stop.is_set():
            prompt, _ = self._prompt(w)
            try:
                result = self.rt.send_turn(w.thread_id, prompt, timeout=20)
            except Exception as exc:
                self.ops.failure(self.name, "send_turn", exc)
                self.stop.wait(0.3 + w.rng.random() * 0.5)
                continue
            sent = self.clock.now()
            self.ops.success("send_turn")
            w.turns += 1
            self.ledger.accepted(result.turn_id, w.thread_id, self._label(prompt, w.instance))
            with self._lock:
                self.turns_seen.append((result.turn_id, sent))
            self.ledger.wait(result.turn_id, bound, self.stop)

    def go_dead(self, hold: float) -> None:
        """Fault thread of ``endpoint_dead``: close the listener for ``hold`` seconds (less when
        the soak ends), then listen again; the other lanes must have completed turns meanwhile."""
        others = [lane for lane in self.soak.lanes() if lane is not self]
        before = {lane.name: (lane.ledger.completed, lane.own_fault_mark()) for lane in others}
        self.listener.kill()
        with self._lock:
            self.dead.append((self.clock.now(), None))
        self.faults.log("endpoint_dead", self.name, endpoint=self.url, hold_s=round(hold, 2))
        self.stop.wait(hold)
        self.listener.revive()
        with self._lock:
            self.dead[-1] = (self.dead[-1][0], self.clock.now())
        self.faults.log("endpoint_back", self.name, endpoint=self.url)
        # a lane a fault of its own held up meanwhile (a full disk, a server restart) is excused
        stalled = [lane.name for lane in others
                   if lane.ledger.completed <= before[lane.name][0] and lane.own_fault_mark() == before[lane.name][1]]
        if stalled and not self.stop.is_set():
            self.violations.add("dead_endpoint_fails_in_bound", lane=self.name,
                                problem=f"no turn completed on {stalled} while the endpoint was dead",
                                dead_s=round(hold, 2))

    def check_turns(self) -> dict[str, Any]:
        """Judge every quiet turn against the endpoint's dead spells (after the workload stopped)."""
        bound = self.ENDPOINT_TIMEOUT + TARGETS["endpoint_fail_margin_s"]
        with self._lock:
            spells: list[tuple[float, float]] = [(d0, float("inf") if d1 is None else d1) for d0, d1 in self.dead]
            turns = list(self.turns_seen)
        failed_in_bound = 0
        slowest = 0.0  # seconds from the later of a failed turn's start and the endpoint's death to its end
        for turn_id, sent in turns:
            outcome = self.ledger.outcome(turn_id)
            state, error, ended = outcome if outcome is not None else ("", "", float("inf"))
            by_endpoint = state == "failed" and self.url in error
            detail = {"turn_id": turn_id, "sent_at": round(sent, 3), "state": state or "not seen to end",
                      "ended_at": None if ended == float("inf") else round(ended, 3), "error": error[:200]}
            problem = None
            for d0, d1 in spells:
                due = max(sent, d0) + bound
                if ended >= max(sent, d0) and due <= d1 and ended > due:
                    problem = f"running while the endpoint was dead, not failed within {bound:g} s"
                    break
            if problem is None and by_endpoint:
                hit = [max(sent, d0) for d0, d1 in spells if d0 <= ended and sent <= d1]
                if hit:
                    failed_in_bound += 1
                    slowest = max(slowest, ended - hit[-1])
                else:
                    problem = "failed naming the endpoint while it was live"
            elif problem is None and outcome is not None and state != "completed":
                problem = f"ended {state or 'never'}, not by the endpoint"
            if problem is not None:
                self.violations.add("dead_endpoint_fails_in_bound", lane=self.name, problem=problem, **detail)
        return {"endpoint": self.url, "endpoint_timeout": self.ENDPOINT_TIMEOUT, "bound_s": bound,
                "dead_spells": [[round(d0, 3), None if d1 == float("inf") else round(d1, 3)] for d0, d1 in spells],
                "turns": len(turns), "failed_by_the_endpoint_in_bound": failed_in_bound,
                "slowest_failure_s": round(slowest, 3)}

    def finish(self) -> None:
        self.timed_close(self.rt, "end of the soak")
        self.listener.kill()

    def document(self) -> dict[str, Any]:
        return self.summary


class ServerLane(Lane):
    """``paddock serve`` on a unix socket in its own state directory, driven by a RemoteRuntime."""

    name = "server"

    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, 2, 1)
        # a short path: the socket's path must fit in sun_path
        self.state_dir = tempfile.mkdtemp(prefix="soak-sv-", dir="/tmp")
        self.workspace = tempfile.mkdtemp(prefix="ws-server-", dir=soak.tmp)
        self.config_path = Path(soak.tmp) / "server.toml"
        lines = ["[runtime]", "event_log = true"]
        for iid in self.instances:
            lines += [f"[instances.{iid}]", 'driver = "local"']
        self.config_path.write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen[bytes] | None = None
        self.incarnation = 0
        self.stop_seconds: list[float] = []
        self.start_seconds: list[float] = []
        self.exit_codes: list[int | None] = []
        self.tracebacks = 0
        self.server_samples: list[dict[str, Any]] = []
        self._rt_lock = threading.Lock()
        self._launch()
        from paddock.client import RemoteRuntime

        self._rt = RemoteRuntime.connect(self.state_dir)
        self.taps = [Tap(self, "ledger", ledger=True)]

    def client(self) -> Client:
        with self._rt_lock:
            return self._rt

    def _stderr_path(self) -> Path:
        return Path(self.soak.tmp) / f"server-{self.incarnation}.stderr"

    def _launch(self) -> None:
        self.incarnation += 1
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("PADDOCK_STATE_DIR", None)
        started = time.monotonic()
        with open(self._stderr_path(), "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "paddock.cli", "serve", "--state-dir", self.state_dir,
                 "--config", str(self.config_path)],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=err, env=env,
            )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else b""
        if b"listening on" not in line:
            raise RuntimeError(f"paddock serve did not start: {line!r}")
        self.start_seconds.append(round(time.monotonic() - started, 3))

    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def _stop_server(self, why: str) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            tree = _snapshot(psutil.Process(proc.pid).children(recursive=True))
        except psutil.Error:
            tree = []
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code: int | None = proc.wait(CLOSE_TIMEOUT + 20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        took = time.monotonic() - started
        self.stop_seconds.append(round(took, 3))
        self.exit_codes.append(code)
        if proc.stdout is not None:
            proc.stdout.close()
        text = self._stderr_path().read_text(errors="replace")
        self.tracebacks += text.count("Traceback (most recent call last)")
        self.soak.expect_dead(tree, self.name, f"descendants of paddock serve after {why}", grace=1.0)
        if took > CLOSE_TIMEOUT + TARGETS["close_budget_extra_s"]:
            self.violations.add("close_within_budget", lane=self.name, why=f"paddock serve SIGTERM ({why})",
                                timeout=CLOSE_TIMEOUT, seconds=round(took, 3))
        self.closes.append({"lane": self.name, "why": f"SIGTERM to paddock serve ({why})", "timeout": CLOSE_TIMEOUT,
                            "seconds": round(took, 3), "exit_code": code})

    def restart(self, down: float) -> None:
        """Fault thread of ``server_restart``: SIGTERM, wait ``down`` seconds, start again."""
        self.faults.log("server_restart", self.name, incarnation=self.incarnation, down_s=round(down, 2))
        self._stop_server("restart")
        self.stop.wait(down)
        try:
            self._launch()
        except Exception as exc:
            self.violations.add("no_process_outlives_its_session", lane=self.name,
                                problem=f"paddock serve did not start again: {exc}"[:240])

    def sample(self) -> dict[str, Any] | None:
        pid = self.pid()
        if pid is None:
            return None
        try:
            proc = psutil.Process(pid)
            return {"rss_mb": round(proc.memory_info().rss / 2**20, 1), "threads": proc.num_threads(),
                    "incarnation": self.incarnation}
        except psutil.Error:
            return None

    def finish(self) -> None:
        self._stop_server("end of the soak")
        with contextlib.suppress(Exception):
            self._rt.close()

    def own_fault_mark(self) -> object:
        return self.incarnation

    def document(self) -> dict[str, Any]:
        return {"incarnations": self.incarnation, "start_seconds": self.start_seconds,
                "stop_seconds": self.stop_seconds, "exit_codes": self.exit_codes,
                "tracebacks_in_stderr": self.tracebacks}


# -- the soak -------------------------------------------------------------------------------------


def _snapshot(procs: list[psutil.Process]) -> list[tuple[int, float, str]]:
    """(pid, create time, command) of each process still alive."""
    out = []
    for proc in procs:
        try:
            out.append((proc.pid, proc.create_time(), " ".join(proc.cmdline()[:4])))
        except psutil.Error:
            continue
    return out


def _alive(entry: tuple[int, float, str]) -> bool:
    pid, created, _ = entry
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _thread_names() -> dict[str, int]:
    """This process's Python threads by name, digits dropped (``paddock-close-3`` -> ``paddock-close-``)."""
    names: Counter[str] = Counter()
    for thread in threading.enumerate():
        names["".join(c for c in thread.name if not c.isdigit())] += 1
    return dict(sorted(names.items()))


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


class Soak:
    """The run: lanes, the fault thread, the sampler, and the final checks (main thread)."""

    def __init__(self, args: argparse.Namespace, tmp: str) -> None:
        self.args = args
        self.seed = args.seed
        self.tmp = tmp
        self.rng = random.Random(f"{args.seed}-faults")
        self.clock = Clock()
        self.violations = Violations(self.clock)
        self.faults = FaultLog(self.clock)
        self.ops = Operations(self.clock)
        self.samples: list[dict[str, Any]] = []
        self.thread_names: list[dict[str, int] | None] = [None, None]  # start window, end window
        self.memory_snapshots: list[Any] = [None, None]  # tracemalloc, with --trace-memory
        self.soak_start = 0.0  # clock times when the fault phase starts and ends
        self.soak_end = float("inf")
        self.pending: list[tuple[float, int, Callable[[], None]]] = []  # (monotonic due, n, action)
        self._pending_n = 0
        self._stopped: dict[int, float] = {}  # SIGSTOPped pid -> create time
        self._ends: dict[str, list[float]] = {}  # instance -> monotonic times of agent-ending faults
        self.deferred: Counter[str] = Counter()  # faults not injected: every instance at its budget
        self._slow: dict[str, threading.Thread] = {}
        self._last_slow: dict[str, float] = {}
        self._faults_on = threading.Event()
        self._sampling = threading.Event()
        self.local: LocalLane | None = None
        self.disk: DiskLane | None = None
        self.server: ServerLane | None = None
        self.endpoint: EndpointLane | None = None
        self.limits: LimitsLane | None = None
        self.mount_point: str | None = None
        self.disk_skip: str | None = None

    # processes
    def expect_dead(self, tree: list[tuple[int, float, str]], lane: str, what: str, grace: float,
                    fault_at: float | None = None) -> None:
        """Each process of ``tree`` must be gone within ``grace`` (checked now, in this thread).
        ``fault_at`` (epoch seconds) is when the tree was hit: each survivor's age then is reported."""
        deadline = time.monotonic() + grace
        alive = [e for e in tree if _alive(e)]
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = [e for e in alive if _alive(e)]
        if alive:
            self.violations.add(
                "no_process_outlives_its_session", lane=lane, problem=f"{what}: still alive", count=len(alive),
                processes=[{"pid": p, "cmd": c, **({"age_at_fault_s": round(fault_at - born, 3)} if fault_at else {})}
                           for p, born, c in alive[:5]],
            )

    def check_no_descendants(self) -> None:
        """After every lane closed: this process has no descendant left."""
        found = _snapshot(psutil.Process().children(recursive=True))
        if found:
            self.violations.add("no_process_outlives_its_session", lane="all",
                                problem="descendants alive after every lane closed",
                                processes=[{"pid": p, "cmd": c} for p, _, c in found[:5]], count=len(found))

    def stop_one_agent_for_close(self) -> bool:
        """SIGSTOP one local agent just before the final close, as a hung agent would be."""
        assert self.local is not None
        agents = self.local.processes("agent")
        if not agents:
            return False
        proc = self.rng.choice(agents)
        with contextlib.suppress(psutil.Error):
            proc.suspend()
            self.faults.log("agent_stop_at_close", "local", pid=proc.pid)
            return True
        return False

    # the fault thread
    def later(self, delay: float, action: Callable[[], None]) -> None:
        self._pending_n += 1
        heapq.heappush(self.pending, (time.monotonic() + delay, self._pending_n, action))

    def _enabled(self) -> list[str]:
        chosen = self.args.faults
        return [k for k in FAULT_WEIGHTS if k not in self.faults.skipped and (not chosen or k in chosen)]

    def _fault_loop(self) -> None:
        interval = self.args.fault_interval
        next_fault = time.monotonic() + self.rng.uniform(0.5, 1.5) * interval
        while self._faults_on.is_set() or self.pending:
            now = time.monotonic()
            while self.pending and self.pending[0][0] <= now:
                _, _, action = heapq.heappop(self.pending)
                try:
                    action()
                except Exception as exc:
                    self.ops.failure("soak", "pending fault action", exc)
            for lane in self.lanes():
                lane.ledger.sweep(TARGETS["turn_end_bound_s"])
            if self._faults_on.is_set() and now >= next_fault:
                kinds = self._enabled()
                kind = self.rng.choices(kinds, weights=[FAULT_WEIGHTS[k] for k in kinds])[0]
                try:
                    self._inject(kind)
                except Exception as exc:
                    self.ops.failure("soak", f"inject {kind}", exc)
                next_fault = now + self.rng.expovariate(1.0 / interval)
            elif not self._faults_on.is_set() and not self.pending:
                break
            wake = min([next_fault] + [self.pending[0][0]] if self.pending else [next_fault])
            time.sleep(max(0.02, min(0.25, wake - time.monotonic())))

    def _may_end(self, instance: str) -> bool:
        """Whether one more agent-ending fault on ``instance`` stays within its budget."""
        now = time.monotonic()
        recent = [t for t in self._ends.get(instance, []) if now - t < AGENT_ENDS_WINDOW_S]
        self._ends[instance] = recent
        return len(recent) < AGENT_ENDS_PER_WINDOW

    def _ended(self, instance: str) -> None:
        self._ends.setdefault(instance, []).append(time.monotonic())

    @staticmethod
    def _instance_of(proc: psutil.Process) -> str:
        """The instance id of a local agent or shim: its working directory is ``<state>/instances/<id>``."""
        try:
            return Path(proc.cwd()).name
        except psutil.Error:
            return ""

    def _inject(self, kind: str) -> None:
        local = self.local
        assert local is not None
        if kind in BACKGROUND_FAULTS:
            _in_background(self, kind, BACKGROUND_FAULTS[kind])
        elif kind in ("agent_kill9", "shim_kill"):
            procs = local.processes("agent" if kind == "agent_kill9" else "shim")
            procs = [p for p in procs if p.pid not in self._stopped and self._may_end(self._instance_of(p))]
            if not procs:
                self.deferred[kind] += 1
                return
            proc = self.rng.choice(procs)
            self._ended(self._instance_of(proc))
            try:
                tree = _snapshot([proc] + proc.children(recursive=True))
                proc.kill()
                killed_at = time.time()
            except psutil.Error:
                return
            self.faults.log(kind, local.name, pid=proc.pid, tree=len(tree))
            bound = TARGETS["orphan_bound_s"]
            self.later(bound, lambda: self.expect_dead(tree, local.name, f"tree of the {kind} victim {proc.pid}", 0,
                                                       fault_at=killed_at))
        elif kind == "agent_stop":
            procs = [p for p in local.processes("agent") if p.pid not in self._stopped]
            if not procs:
                return
            proc = self.rng.choice(procs)
            pause = self.rng.uniform(0.5, TARGETS["stop_pause_max_s"])
            try:
                created = proc.create_time()
                proc.suspend()
            except psutil.Error:
                return
            self._stopped[proc.pid] = created
            self.faults.log(kind, local.name, pid=proc.pid, pause_s=round(pause, 2))
            self.later(pause, lambda: self._resume(proc))
        elif kind == "agent_crash":
            workers = [w for w in local.workers if self._may_end(w.instance) and not w.crash_next.is_set()]
            if not workers:
                self.deferred[kind] += 1
                return
            worker = self.rng.choice(workers)
            self._ended(worker.instance)
            worker.crash_next.set()  # logged when the worker sends it
        elif kind == "subscriber_stall":
            seconds = self.rng.uniform(1.0, 8.0)
            tap = next(t for t in local.taps if t.name == "stall")
            tap.stall(seconds)
            self.faults.log(kind, local.name, subscriber=tap.name, seconds=round(seconds, 2))
        elif kind == "subscriber_disconnect":
            seconds = self.rng.uniform(0.0, 2.0)
            tap = next(t for t in local.taps if t.name == "reconnect")
            tap.disconnect(seconds)
            self.faults.log(kind, local.name, subscriber=tap.name, away_s=round(seconds, 2))
        elif kind in ("disk_fill", "server_restart"):
            running = self._slow.get(kind)
            now = time.monotonic()
            busy = running is not None and running.is_alive()
            if busy or now - self._last_slow.get(kind, -1e9) < SLOW_FAULT_SPACING[kind]:
                return
            self._last_slow[kind] = now
            if kind == "disk_fill":
                assert self.disk is not None
                target: Callable[[float], None] = self.disk.fill_and_free
                seconds = self.rng.uniform(2.0, 6.0)  # held full
            else:
                assert self.server is not None
                target = self.server.restart
                seconds = self.rng.uniform(0.5, 2.0)  # down
            thread = threading.Thread(target=target, args=(seconds,), name=f"paddock-soak-{kind}", daemon=True)
            self._slow[kind] = thread
            thread.start()

    def _resume(self, proc: psutil.Process) -> None:
        created = self._stopped.pop(proc.pid, None)
        with contextlib.suppress(psutil.Error):
            if created is not None and proc.create_time() == created:
                proc.resume()
                self.faults.log("agent_cont", "local", pid=proc.pid)

    # the sampler
    def windows(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """The start and end windows of resource samples (clock times) in the fault phase: each
        15% of it (at least 5 s), the first after a warm-up of 10% (at least 5 s)."""
        start, end = self.soak_start, self.soak_end
        span = end - start
        width = max(5.0, 0.15 * span)
        warm = max(5.0, 0.10 * span)
        return (start + warm, start + warm + width), (end - width, end)

    def _sample_loop(self) -> None:
        import tracemalloc

        me = psutil.Process()
        trim = _malloc_trim() if self.args.trim_memory else None
        (first_lo, first_hi), _ = self.windows()
        middle = (first_lo + first_hi) / 2
        while self._sampling.is_set():
            now = self.clock.now()
            if self.thread_names[0] is None and now >= middle:
                self.thread_names[0] = _thread_names()
                if self.args.trace_memory:
                    self.memory_snapshots[0] = tracemalloc.take_snapshot()
            elif self.thread_names[0] is not None and now <= self.soak_end:
                self.thread_names[1] = _thread_names()
            entry: dict[str, Any] = {"t": self.clock.stamp()}
            with contextlib.suppress(psutil.Error):
                entry["host_rss_mb"] = round(me.memory_info().rss / 2**20, 1)
                entry["py_blocks"] = sys.getallocatedblocks()  # live Python allocations: a leak grows it
                if trim is not None:
                    trim(0)
                    entry["host_rss_trimmed_mb"] = round(me.memory_info().rss / 2**20, 1)
                entry["host_threads"] = me.num_threads()
                entry["descendants"] = len(me.children(recursive=True))
            if self.server is not None:
                server = self.server.sample()
                if server is not None:
                    entry["server"] = server
            self.samples.append(entry)
            time.sleep(1.0)

    def lanes(self) -> list[Lane]:
        return [lane for lane in (self.local, self.disk, self.server, self.endpoint, self.limits) if lane is not None]

    # the run
    def run(self) -> dict[str, Any]:
        args = self.args
        durations: dict[str, Any] = {}
        t_start = time.monotonic()
        if args.trace_memory:
            import tracemalloc

            tracemalloc.start(1)
        self.mount_point, self.disk_skip = DiskLane.mount(self.tmp) if not args.no_disk else (None, "--no-disk")
        if self.mount_point is None:
            self.faults.skipped["disk_fill"] = self.faults.skipped["disk_full_close"] = self.disk_skip or "no tmpfs"
        server_skip = "--no-server" if args.no_server else None
        if server_skip is None:
            try:
                import paddock.client  # noqa: F401
                import paddock.server  # noqa: F401
            except ImportError as exc:
                server_skip = f"needs the server extra ({exc.name} is missing)"
        if server_skip is not None:
            self.faults.skipped["server_restart"] = server_skip
        if args.no_limits:
            self.faults.skipped.update(dict.fromkeys(LIMITS_FAULTS, "--no-limits"))
        try:
            self.local = LocalLane(self, args.sessions, args.instances)
            if self.mount_point is not None:
                self.disk = DiskLane(self, self.mount_point)
            if server_skip is None:
                self.server = ServerLane(self)
            self.endpoint = EndpointLane(self)
            if not args.no_limits:
                self.limits = LimitsLane(self, args.limits_sessions, 2)
            for lane in self.lanes():
                lane.start()
            durations["setup_s"] = round(time.monotonic() - t_start, 3)
            soak_started = time.monotonic()
            self.soak_start = self.clock.now()
            self.soak_end = self.soak_start + args.minutes * 60
            self._sampling.set()
            sampler = threading.Thread(target=self._sample_loop, name="paddock-soak-sampler", daemon=True)
            sampler.start()
            self._faults_on.set()
            fault_thread = threading.Thread(target=self._fault_loop, name="paddock-soak-faults", daemon=True)
            fault_thread.start()
            end = soak_started + args.minutes * 60
            while time.monotonic() < end:
                time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            self._faults_on.clear()
            soak_seconds = time.monotonic() - soak_started
            durations["faults_s"] = round(soak_seconds, 3)
            window_end = self.clock.now()
            if args.trace_memory:
                import tracemalloc

                self.memory_snapshots[1] = tracemalloc.take_snapshot()
                tracemalloc.stop()
            for lane in self.lanes():
                lane.stop.set()  # no new turn; a fault in flight skips its waits
            # pending SIGCONTs and tree checks run now (each stop pause is bounded)
            fault_thread.join(TARGETS["stop_pause_max_s"] + TARGETS["orphan_bound_s"] + 5)
            for thread in self._slow.values():
                thread.join(60)
            t_drain = time.monotonic()
            for lane in self.lanes():
                lane.stop_workload()
            for lane in self.lanes():
                lane.drain(TARGETS["turn_end_bound_s"])
                for tid in lane.ledger.still_open():
                    self.violations.add("turns_end_exactly_once", lane=lane.name, problem="still open after the drain",
                                        **tid)
            durations["drain_s"] = round(time.monotonic() - t_drain, 3)
            self._sampling.clear()
            sampler.join(5)
            for lane in self.lanes():
                for tap in lane.taps:
                    tap.stop()
            t_close = time.monotonic()
            for lane in self.lanes():
                lane.finish()
                lane.finished = True
            durations["close_s"] = round(time.monotonic() - t_close, 3)
            self.check_no_descendants()
            t_check = time.monotonic()
            logs = {lane.name: lane.check_log() for lane in self.lanes()}  # before the tmpfs goes
            if self.endpoint is not None:
                self.endpoint.summary = self.endpoint.check_turns()
            durations["log_check_s"] = round(time.monotonic() - t_check, 3)
        finally:
            self._faults_on.clear()
            self._sampling.clear()
            for lane in self.lanes():
                lane.stop.set()
                if not lane.finished:
                    with contextlib.suppress(Exception):
                        lane.finish()
            self._unmount()
        durations["total_s"] = round(time.monotonic() - t_start, 3)
        return self.document(durations, logs, window_end)

    def _unmount(self) -> None:
        if self.mount_point is None:
            return
        for cmd in (["umount", self.mount_point], ["umount", "-l", self.mount_point]):
            try:
                if subprocess.run(cmd, capture_output=True, timeout=20).returncode == 0:
                    break
            except (OSError, subprocess.SubprocessError):
                continue
        with contextlib.suppress(OSError):
            os.rmdir(self.mount_point)

    # the document
    def _resources(self, window_end: float) -> dict[str, Any]:
        self.soak_end = min(self.soak_end, window_end)
        (a0, a1), (b0, b1) = self.windows()
        first = [s for s in self.samples if a0 <= s["t"] <= a1 and "host_rss_mb" in s]
        last = [s for s in self.samples if b0 <= s["t"] <= b1 and "host_rss_mb" in s]
        rss0, rss1 = _median([s["host_rss_mb"] for s in first]), _median([s["host_rss_mb"] for s in last])
        thr0, thr1 = _median([s["host_threads"] for s in first]), _median([s["host_threads"] for s in last])
        def figure(key: str, start: float | None, end: float | None) -> dict[str, Any]:
            return {"start": start, "end": end,
                    "growth": None if start is None or end is None else round(end - start, 2),
                    "peak": max((s[key] for s in self.samples if key in s), default=None)}

        out: dict[str, Any] = {
            "windows_s": {"start": [round(a0, 1), round(a1, 1)], "end": [round(b0, 1), round(b1, 1)]},
            "host_rss_mb": figure("host_rss_mb", rss0, rss1),
            "host_threads": figure("host_threads", thr0, thr1),
        }
        for key in ("py_blocks", "host_rss_trimmed_mb"):  # diagnosis: Python objects; RSS after malloc_trim
            a = _median([s[key] for s in first if key in s])
            b = _median([s[key] for s in last if key in s])
            if a is not None and b is not None:
                out[key] = figure(key, a, b)
        out["host_thread_names"] = {"start": self.thread_names[0], "end": self.thread_names[1]}
        if self.memory_snapshots[0] is not None and self.memory_snapshots[1] is not None:
            stats = self.memory_snapshots[1].compare_to(self.memory_snapshots[0], "lineno")
            # what Python objects account for; the rest of the RSS growth is native (SQLite, malloc)
            out["traced_growth_total_mb"] = round(sum(st.size_diff for st in stats) / 2**20, 2)
            out["traced_growth_top"] = [
                {"where": f"{st.traceback[0].filename}:{st.traceback[0].lineno}",
                 "size_diff_kb": round(st.size_diff / 1024, 1), "count_diff": st.count_diff}
                for st in stats[:15]
            ]
        step = max(1, len(self.samples) // SAMPLES_MAX)
        out["samples"] = self.samples[::step]
        if rss0 is None or rss1 is None or thr0 is None or thr1 is None:
            self.violations.add("resources_flat", problem="too few samples to compare a start and an end window",
                                samples=len(self.samples))
        else:
            if rss1 - rss0 > TARGETS["host_rss_growth_mb_max"]:
                self.violations.add("resources_flat", problem="host RSS grew", start_mb=rss0, end_mb=rss1)
            if thr1 - thr0 > TARGETS["host_threads_growth_max"]:
                self.violations.add("resources_flat", problem="host threads grew", start=thr0, end=thr1)
        return out

    def document(self, durations: dict[str, Any], logs: dict[str, Any], window_end: float) -> dict[str, Any]:
        resources = self._resources(window_end)
        names = ["turns_end_exactly_once", "subscribers_match_log", "no_process_outlives_its_session",
                 "resources_flat", "close_within_budget", "one_session_exited_per_session", "starts_survive_restarts",
                 "full_disk_close_releases", "dead_endpoint_fails_in_bound", *LIMITS_INVARIANTS]
        invariants = {
            name: {"held": self.violations.counts[name] == 0, "violations": self.violations.counts[name],
                   "details": self.violations.details.get(name, [])}
            for name in names
        }
        lanes: dict[str, Any] = {}
        for lane in self.lanes():
            entry: dict[str, Any] = {
                "sessions": len(lane.workers), "instances": len(lane.instances),
                "turns_accepted": sum(w.turns for w in lane.workers),
                "ledger": {"started": lane.ledger.started, "completed": lane.ledger.completed,
                           "given_up": lane.ledger.given_up, "by_state": dict(lane.ledger.states)},
                "log": logs.get(lane.name),
                "subscribers": [tap.document() for tap in lane.taps],
                "closes": lane.closes,
            }
            if isinstance(lane, (DiskLane, ServerLane, EndpointLane, LimitsLane)):
                entry.update(lane.document())
            lanes[lane.name] = entry
        if self.disk is None:
            lanes["disk"] = {"mounted": False, "skipped": self.disk_skip}
        if self.server is None:
            lanes["server"] = {"skipped": self.faults.skipped.get("server_restart")}
        if self.limits is None:
            lanes["limits"] = {"skipped": "--no-limits"}
        by_state: Counter[str] = Counter()
        for log in logs.values():
            by_state.update(log["completed_by_state"])
        return {
            "benchmark": "soak",
            "seed": self.seed,
            "minutes": self.args.minutes,
            "sessions": self.args.sessions,
            "instances": self.args.instances,
            "fault_interval_s": self.args.fault_interval,
            "durations": durations,
            "faults": {"counts": dict(self.faults.counts),
                       # agent_cont, disk_free and endpoint_back end a fault; logged, not counted as faults
                       "total": sum(n for k, n in self.faults.counts.items() if k not in FAULT_ENDS),
                       "skipped": self.faults.skipped,
                       "deferred_for_restart_intensity": dict(self.deferred),
                       "log": self.faults.entries,
                       "log_dropped": self.faults.dropped},
            "turns": {"started": sum(log["turns_started"] for log in logs.values()),
                      "completed": sum(log["turns_completed"] for log in logs.values()),
                      "never_completed": sum(log["turns_never_completed"] for log in logs.values()),
                      "completed_twice": sum(log["turns_completed_twice"] for log in logs.values()),
                      "by_state": dict(by_state)},
            "operations": self.ops.document(),
            "lanes": lanes,
            "resources": resources,
            "invariants": invariants,
            "targets": TARGETS,
            "meets_targets": all(v["held"] for v in invariants.values()),
        }


def _in_background(soak: Soak, kind: str, fault: Callable[[Soak], None]) -> None:
    """Run ``fault(soak)`` on a thread of its own, unless one of ``kind`` still runs or ran less
    than ``SLOW_FAULT_SPACING[kind]`` seconds ago (fault thread)."""
    running = soak._slow.get(kind)
    now = time.monotonic()
    if (running is not None and running.is_alive()) or now - soak._last_slow.get(kind, -1e9) < SLOW_FAULT_SPACING[kind]:
        return
    soak._last_slow[kind] = now
    thread = threading.Thread(target=fault, args=(soak,), name=f"paddock-soak-{kind}", daemon=True)
    soak._slow[kind] = thread
    thread.start()


def start_race(soak: Soak) -> None:
    """Issue 33 #3: SIGKILL a local-lane agent, then at once start a new thread on its instance;
    the start waits for the restart, a turn runs on it, and the thread is stopped again."""
    local = soak.local
    assert local is not None
    agents = [p for p in local.processes("agent") if p.pid not in soak._stopped]
    agents = [p for p in agents if soak._may_end(soak._instance_of(p))]
    if not agents:
        soak.deferred["start_race"] += 1
        return
    proc = soak.rng.choice(agents)
    instance = soak._instance_of(proc)
    soak._ended(instance)
    thread_id = f"race-{soak.faults.counts['start_race']}"
    try:
        proc.kill()
    except psutil.Error:
        return
    started = time.monotonic()
    soak.faults.log("start_race", local.name, pid=proc.pid, instance=instance, thread_id=thread_id)
    rt = local.client()
    try:
        rt.start_session(thread_id, instance=instance, cwd=local.workspace, timeout=30)
        waited = time.monotonic() - started
        turn = rt.send_turn(thread_id, "@chunks 3\n@reply raced start", timeout=20)
        local.ledger.accepted(turn.turn_id, thread_id, f"{instance}: start_race")
        local.ledger.wait(turn.turn_id, TARGETS["turn_end_bound_s"], local.stop)
        soak.ops.success("start_session (racing a crash)")
        local.ledger.note(turn.turn_id, f"start_session waited {waited:.2f} s for the restart")
    except Exception as exc:
        soak.ops.failure(local.name, "start_session (racing a crash)", exc)
        soak.violations.add("starts_survive_restarts", lane=local.name, thread_id=thread_id,
                            error=f"{type(exc).__name__}: {str(exc)[:200]}")
    finally:
        with contextlib.suppress(Exception):
            rt.stop_session(thread_id, timeout=15)


def client_interrupt(soak: Soak) -> None:
    """Issue 33 #5: a one-shot ``paddock run`` through the server lane, SIGINT mid-turn; it
    exits 130 and its session is stopped in the server (unless the server restarted meanwhile)."""
    server = soak.server
    if server is None:
        soak.faults.skipped.setdefault("client_interrupt", "no server lane")
        return
    incarnation = server.incarnation
    thread_id = f"cli-{soak.faults.counts['client_interrupt']}"
    err = tempfile.TemporaryFile()  # the run's stderr: what it said when it did not exit 130
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PADDOCK_STATE_DIR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "paddock.cli", "run", "--state-dir", server.state_dir, "--instance", server.instances[0],
         "--thread", thread_id, "--cwd", server.workspace, "--approve", "decline",
         "@chunks 2\\n@delay 20\\n@reply interrupted run"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env,
    )
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)  # the first chunk: the turn runs
        if not ready:
            return
        if not os.read(proc.stdout.fileno(), 1):
            # End of file, not a chunk: the run ended before its turn streamed (it found the
            # server restarting): an operation that failed, not an interrupted run.
            err.seek(0)
            said = err.read()[-300:].decode(errors="replace").strip()
            soak.ops.failure(server.name, "paddock run (before SIGINT)", RuntimeError(f"exited {proc.wait()}: {said}"))
            return
        proc.send_signal(signal.SIGINT)
        soak.faults.log("client_interrupt", server.name, thread_id=thread_id, pid=proc.pid)
        code: int | None = proc.wait(20)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    try:
        return _judge_interrupted_run(soak, server, incarnation, thread_id, code, err)
    finally:
        err.close()


def _judge_interrupted_run(soak: Soak, server: ServerLane, incarnation: int, thread_id: str, code: int | None,
                           err: Any) -> None:
    """The invariant of :func:`client_interrupt` (its run's stderr in ``err``, read on a failure)."""
    if server.incarnation != incarnation:
        return  # a server restart came between: its own checks cover that
    problem = None
    if code != 130:
        err.seek(0)
        said = err.read()[-600:].decode(errors="replace").strip()
        problem = f"paddock run exited {code} on SIGINT, not 130 within 20 s; its stderr ended: {said!r}"
    else:
        try:
            if server.client().has_session(thread_id):
                problem = "the interrupted run's session is still live in the server"
        except Exception as exc:
            soak.ops.failure(server.name, "has_session", exc)
    if problem is not None and server.incarnation == incarnation:
        soak.violations.add("no_process_outlives_its_session", lane=server.name, thread_id=thread_id, problem=problem)


def disk_full_close(soak: Soak) -> None:
    """Issue 33 #1: the disk lane's runtime is closed while its disk stays full
    (:meth:`DiskLane.close_while_full`)."""
    if soak.disk is not None:
        soak.disk.close_while_full()


def endpoint_dead(soak: Soak) -> None:
    """Issue 33 #6: the endpoint lane's model endpoint goes dead for 15-25 s (:meth:`EndpointLane.go_dead`)."""
    if soak.endpoint is not None:
        soak.endpoint.go_dead(soak.rng.uniform(15.0, 25.0))


BACKGROUND_FAULTS: dict[str, Callable[[Soak], None]] = {
    "start_race": start_race, "client_interrupt": client_interrupt, "disk_full_close": disk_full_close,
    "endpoint_dead": endpoint_dead,
}
"""Fault kinds that run on a thread of their own, spaced by ``SLOW_FAULT_SPACING``."""


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (returns freed heap pages of every arena to the system), or
    ``None`` where there is none."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


# -- the limits lane (issue 35) --------------------------------------------------------------------


LIMITS = {"memory_mb": 512, "processes": 12}  # the limits lane's instances; 12 forks stay under 512 MB
LIMITS_MAX_RUNNING = 2  # each limits-lane instance's max_running_turns (queue = true)
OVER_LIMIT_PROMPTS = {"limit_memory": f"@alloc {LIMITS['memory_mb'] * 3 // 2}",
                      "limit_processes": f"@fork {LIMITS['processes'] * 5}"}
LIMIT_WARNING_S = 10.0  # from the over-limit turn's end (or the bound) to its instance's limit warning
BURST_SESSIONS = 3  # idle sessions per limits-lane instance that only the queue_burst fault sends on
LIMITS_INVARIANTS = ("queued_turns_end_once_unsent_when_interrupted", "running_turns_within_bound",
                     "over_limit_agents_killed_alone_and_resumed")


class LimitsLedger(TurnLedger):
    """The limits lane's ledger: turns as :class:`TurnLedger`, plus every
    ``process.limit_exceeded`` warning seen live (instance, clock time, message)."""

    def __init__(self, lane: str, clock: Clock, violations: Violations) -> None:
        super().__init__(lane, clock, violations)
        self.warnings: list[tuple[str, float, str]] = []

    def event(self, ev: Any) -> None:
        if ev.type == "runtime.warning" and ev.code == "process.limit_exceeded":
            with self._cond:
                self.warnings.append((ev.instance_id, self._clock.now(), ev.message[:240]))
                self._cond.notify_all()
        super().event(ev)

    def warning_since(self, instance: str, since: float, timeout: float, stop: threading.Event) -> str | None:
        """The message of the first limit warning of ``instance`` seen at or after clock time
        ``since``, waiting up to ``timeout``; ``None`` when none came."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for iid, at, message in self.warnings:
                    if iid == instance and at >= since:
                        return message
                left = deadline - time.monotonic()
                if left <= 0 or stop.is_set():
                    return None
                self._cond.wait(min(left, 0.5))


def judge_limits_log(events: list[Any], max_running: int, interrupted_queued: dict[str, bool],
                     over_limit_instances: set[str]) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """Judge a limits lane's log (its events in ``seq`` order; each has ``type``, ``seq``,
    ``turn_id``, ``instance_id``, and ``state`` on ``turn.completed``, ``code`` on
    ``runtime.warning``): the violations found, as (invariant, detail), and a summary.

    - ``queued_turns_end_once_unsent_when_interrupted``: a turn the log shows queued has exactly
      one ``turn.completed``; one never started ended ``interrupted`` or ``failed`` with no event
      of the agent's between; a turn the workload interrupted while it was queued
      (``interrupted_queued``: turn id -> whether its prompt's marker file exists) that the log
      shows never started left no marker (the agent never saw it);
    - ``running_turns_within_bound``: per instance, turns started and not completed never exceed
      ``max_running``;
    - ``over_limit_agents_killed_alone_and_resumed`` (its log part): every
      ``process.limit_exceeded`` warning names an instance the workload sent an over-limit turn
      to (``over_limit_instances``)."""
    out: list[tuple[str, dict[str, Any]]] = []
    queued: dict[str, int] = {}  # turn id -> seq of its turn.queued
    started: set[str] = set()
    completed: Counter[str] = Counter()
    end_state: dict[str, str] = {}
    agent_events: Counter[str] = Counter()  # events of a turn other than queued/started/completed/runtime.*
    running: dict[str, set[str]] = {}
    peak: dict[str, int] = {}
    for ev in events:
        kind, tid = ev.type, ev.turn_id
        if kind == "turn.queued" and tid:
            queued.setdefault(tid, ev.seq)
        elif kind == "turn.started" and tid:
            started.add(tid)
            if not completed[tid]:
                now = running.setdefault(ev.instance_id, set())
                now.add(tid)
                peak[ev.instance_id] = max(peak.get(ev.instance_id, 0), len(now))
                if len(now) > max_running:
                    out.append(("running_turns_within_bound",
                                {"instance": ev.instance_id, "seq": ev.seq, "running": len(now),
                                 "max_running_turns": max_running, "turns": sorted(now)[:5]}))
        elif kind == "turn.completed" and tid:
            completed[tid] += 1
            end_state.setdefault(tid, ev.state)
            running.get(ev.instance_id, set()).discard(tid)
        elif kind == "runtime.warning" and ev.code == "process.limit_exceeded":
            if ev.instance_id not in over_limit_instances:
                out.append(("over_limit_agents_killed_alone_and_resumed",
                            {"instance": ev.instance_id, "seq": ev.seq,
                             "problem": "a limit warning on an instance no over-limit turn was sent to"}))
        elif tid and not kind.startswith("runtime."):
            agent_events[tid] += 1
    invariant = "queued_turns_end_once_unsent_when_interrupted"
    for tid, seq in queued.items():
        if completed[tid] != 1:
            out.append((invariant, {"turn_id": tid, "queued_seq": seq,
                                    "problem": f"{completed[tid]} turn.completed for a queued turn"}))
        elif tid not in started:
            if end_state[tid] not in ("interrupted", "failed"):
                out.append((invariant, {"turn_id": tid, "problem": f"never started, yet ended {end_state[tid]}"}))
            if agent_events[tid]:
                out.append((invariant, {"turn_id": tid, "events": agent_events[tid],
                                        "problem": "never started, yet events of the agent's in the log"}))
    unsent = 0
    for tid, marked in interrupted_queued.items():
        if tid in started:
            continue  # admitted before the interrupt came: an ordinary interrupted turn
        unsent += 1
        if marked:
            out.append((invariant, {"turn_id": tid, "problem": "interrupted while queued, yet the agent ran it "
                                                               "(its marker file exists)"}))
    summary = {"queued": len(queued), "queued_never_started": sum(1 for t in queued if t not in started),
               "interrupted_while_queued": unsent, "peak_running": peak, "max_running_turns": max_running}
    return out, summary


class LimitsLane(LocalLane):
    """An in-process Runtime whose local instances hold their agents to ``limits``
    (``LIMITS``) and run at most ``LIMITS_MAX_RUNNING`` turns at once (``queue = true``). Its
    workers run short streams; the ``limit_memory`` / ``limit_processes`` faults make a worker's
    next turn ``@alloc`` / ``@fork`` past its instance's limit (one at a time in the lane, within
    the instance's restart budget), and ``queue_burst`` sends at once on an instance's idle burst
    sessions, interrupting some of the turns that were queued."""

    name = "limits"

    def __init__(self, soak: Soak, sessions: int, instances: int) -> None:
        super().__init__(soak, sessions, instances)
        self.warnings = LimitsLedger(self.name, self.clock, self.violations)
        self.ledger = self.warnings
        self.taps = [Tap(self, "ledger", ledger=True)]
        for w in self.workers:
            w.approvals = False
        self.bursts = [f"{self.name}-b{iid}-{k}" for iid in self.instances for k in range(BURST_SESSIONS)]
        self.over_limit: dict[str, str] = {}  # worker thread id -> the fault its next turn carries
        self.over_limit_busy = threading.Lock()  # one over-limit turn at a time in the lane
        self.kills: list[dict[str, Any]] = []
        self.targeted: set[str] = set()  # instances an over-limit turn was sent to
        self.burst_turns: list[dict[str, Any]] = []
        self.interrupted_queued: dict[str, int] = {}  # turn id -> its marker number
        self.summary: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._markers = 0

    def config(self) -> dict[str, Any]:
        config = super().config()
        for entry in config["instances"].values():
            entry.update(limits=dict(LIMITS), max_running_turns=LIMITS_MAX_RUNNING, queue=True)
        return config

    def start(self) -> None:
        super().start()
        for thread_id in self.bursts:
            instance = thread_id.split("-b", 1)[1].rsplit("-", 1)[0]
            self.rt.start_session(thread_id, instance=instance, cwd=self.workspace, runtime_mode="full-access",
                                  timeout=60)

    def agents(self) -> dict[str, tuple[int, float, str]]:
        """Each instance's live agent: instance -> (pid, create time, command)."""
        out = {}
        for proc in self.processes("agent"):
            for entry in _snapshot([proc]):
                out[self.soak._instance_of(proc)] = entry
        return out

    def _prompt(self, w: Worker) -> tuple[str, bool]:
        # few events per turn: the lane is about admission and limits, and the CI soak's host RSS
        # bound (resources_flat) covers every lane's runtime at once
        return f"@chunks {w.rng.randint(2, 10)}\n@delay {w.rng.uniform(0.02, 0.08):.3f}", False

    def _work(self, w: Worker) -> None:
        while not self.stop.is_set():
            kind = self.over_limit.pop(w.thread_id, None)
            if kind is not None:
                try:
                    self._over_limit(w, kind)
                finally:
                    self.over_limit_busy.release()
                continue
            turn_id = self._send(w, self._prompt(w)[0])
            if turn_id is not None:
                self.ledger.wait(turn_id, TARGETS["turn_end_bound_s"], self.stop)
            # a pause between turns: the host RSS the CI soak bounds grows with the turns of every
            # lane; a burst's three sends outnumber its instance's two slots, so some still queue
            self.stop.wait(w.rng.uniform(0.1, 0.5))

    def _send(self, w: Worker, prompt: str) -> str | None:
        try:
            result = self.rt.send_turn(w.thread_id, prompt, timeout=20)
        except Exception as exc:
            self.ops.failure(self.name, "send_turn", exc)
            self.stop.wait(0.3 + w.rng.random() * 0.5)
            return None
        self.ops.success("send_turn")
        w.turns += 1
        self.ledger.accepted(result.turn_id, w.thread_id, self._label(prompt, w.instance))
        return result.turn_id

    def _over_limit(self, w: Worker, kind: str) -> None:
        """Worker thread: send the over-limit turn ``kind``, then judge it: the turn ends (it may
        complete: a fork is fast, the shim's poll sees it a moment later), a
        ``process.limit_exceeded`` warning of its instance comes within ``LIMIT_WARNING_S``, the
        agent is gone and so is every process of its tree (sampled while the turn ran) within
        ``orphan_bound_s`` after that, the session's next turn completes, and every other
        instance's agent is the same process as before
        (``over_limit_agents_killed_alone_and_resumed``, and ``no_process_outlives_its_session``
        for the tree)."""
        bound = TARGETS["turn_end_bound_s"]
        agents = self.agents()
        victim = agents.pop(w.instance, None)
        if victim is None:
            self.soak.deferred[kind] += 1  # the agent is restarting: nothing to hold to a limit
            return
        prompt = OVER_LIMIT_PROMPTS[kind]
        sent = self.clock.now()
        self.targeted.add(w.instance)
        turn_id = self._send(w, prompt)
        if turn_id is None:
            return
        self.faults.log(kind, self.name, thread_id=w.thread_id, instance=w.instance, pid=victim[0], prompt=prompt)
        tree: dict[int, tuple[int, float, str]] = {victim[0]: victim}
        deadline = time.monotonic() + bound
        while self.ledger.outcome(turn_id) is None and time.monotonic() < deadline and not self.stop.is_set():
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(victim[0])
                if proc.create_time() == victim[1]:
                    tree.update((e[0], e) for e in _snapshot(proc.children(recursive=True)))
            time.sleep(0.05)
        self.ledger.wait(turn_id, max(0.0, deadline - time.monotonic()), self.stop)
        outcome = self.ledger.outcome(turn_id)
        record: dict[str, Any] = {"t": self.clock.stamp(), "fault": kind, "instance": w.instance,
                                  "thread_id": w.thread_id, "turn_id": turn_id, "agent_pid": victim[0],
                                  "tree_seen": len(tree), "ended": outcome[0] if outcome else None}
        problems = []
        if outcome is None:
            if self.stop.is_set():
                return  # the soak ended first; the log check judges the turn
            problems.append("the over-limit turn did not end")  # turns_end_exactly_once reports it too
        warning = self.warnings.warning_since(w.instance, sent, LIMIT_WARNING_S, self.stop)
        record["warning"] = warning
        if warning is None and not self.stop.is_set():
            problems.append("no process.limit_exceeded warning of the instance")
        self.soak.expect_dead(list(tree.values()), self.name, f"tree of the agent over its limit ({kind})",
                              grace=TARGETS["orphan_bound_s"])
        if _alive(victim):
            problems.append("the agent over its limit is still alive")
        resumed = None
        while resumed is None and not self.stop.is_set() and time.monotonic() < deadline + bound:
            resumed = self._send(w, "@reply resumed")
        if resumed is not None:
            self.ledger.wait(resumed, bound, self.stop)
            after = self.ledger.outcome(resumed)
            record["resumed"] = after[0] if after else None
            if after is not None and after[0] != "completed":
                problems.append(f"the session's next turn ended {after[0]}: {after[1][:160]}")
        elif not self.stop.is_set():
            problems.append("the session took no turn after the kill")
        touched = [{"instance": iid, "pid": entry[0]} for iid, entry in agents.items() if not _alive(entry)]
        if touched:
            problems.append("an agent of another instance was replaced")
            record["touched"] = touched
        if self.stop.is_set() and outcome is None:
            return
        self.kills.append(record)
        if problems:
            self.violations.add("over_limit_agents_killed_alone_and_resumed", lane=self.name, problems=problems,
                                **record)

    def burst(self, rng: random.Random) -> None:
        """Fault thread of ``queue_burst``: send at once on every burst session of one instance
        (its workers hold its slots, so they queue), interrupt about half of those that were
        queued, and wait for every one to end. Each prompt writes a marker file first: one that
        exists for a turn interrupted while queued means the agent saw it."""
        instance = rng.choice(self.instances)
        sent: list[tuple[str, str, int, int | None]] = []  # (thread, turn id, marker, queue position)
        for thread_id in self.bursts:
            if f"-b{instance}-" not in thread_id:
                continue
            with self._lock:
                self._markers += 1
                marker = self._markers
            prompt = f"@write burst-{marker}.txt queued turn {marker}\n@chunks 5\n@delay 0.05"
            try:
                result = self.rt.send_turn(thread_id, prompt, timeout=20)
            except Exception as exc:
                self.ops.failure(self.name, "send_turn (burst)", exc)
                continue
            self.ops.success("send_turn (burst)")
            self.ledger.accepted(result.turn_id, thread_id, f"{instance}: burst {marker}")
            sent.append((thread_id, result.turn_id, marker, result.queued))
        queued = [s for s in sent if s[3] is not None]
        interrupted = []
        for thread_id, turn_id, marker, _ in queued:
            if rng.random() < 0.5:
                continue
            try:
                self.rt.interrupt_turn(thread_id, turn_id, timeout=15)
                self.ops.success("interrupt_turn (queued)")
            except Exception as exc:
                self.ops.failure(self.name, "interrupt_turn (queued)", exc)
                continue
            interrupted.append(turn_id)
            with self._lock:
                self.interrupted_queued[turn_id] = marker
        self.faults.log("queue_burst", self.name, instance=instance, sent=len(sent), queued=len(queued),
                        interrupted=len(interrupted))
        for _, turn_id, _, _ in sent:
            self.ledger.wait(turn_id, TARGETS["turn_end_bound_s"], self.stop)
        self.burst_turns.append({"t": self.clock.stamp(), "instance": instance, "sent": len(sent),
                                 "queued": len(queued), "interrupted": len(interrupted)})

    def finish(self) -> None:
        self.timed_close(self.rt, "end of the soak")

    def own_fault_mark(self) -> object:
        return len(self.kills), self.over_limit_busy.locked()

    def check_log(self) -> dict[str, Any]:
        """The common log check, then the limits lane's (:func:`judge_limits_log`)."""
        from paddock import StateReader

        out = super().check_log()
        events = []
        end = _log_last_seq(self.state_dir)
        deadline = time.monotonic() + 600
        follower = StateReader(self.state_dir).subscribe(from_seq=1, poll=0.01)
        try:
            last = 0
            while last < end:
                ev = follower.get(timeout=1.0)
                if ev is None:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"lane {self.name}: the log read back stopped at seq {last} of {end}")
                    continue
                last = ev.seq
                if ev.turn_id or ev.type == "runtime.warning":
                    events.append(ev)
        finally:
            follower.close()
        workspace = Path(self.workspace)
        with self._lock:
            markers = {tid: (workspace / f"burst-{n}.txt").exists() for tid, n in self.interrupted_queued.items()}
        found, summary = judge_limits_log(events, LIMITS_MAX_RUNNING, markers, self.targeted)
        for invariant, detail in found:
            self.violations.add(invariant, lane=self.name, **detail)
        written = sum(1 for _ in workspace.glob("burst-*.txt"))
        self.summary = {**summary, "limits": LIMITS, "kills": self.kills[:DETAILS_MAX], "kill_count": len(self.kills),
                        "bursts": len(self.burst_turns), "burst_markers_written": written}
        return out

    def document(self) -> dict[str, Any]:
        return self.summary


def over_limit(kind: str) -> Callable[[Soak], None]:
    """The fault ``kind`` (``limit_memory``, ``limit_processes``): the next turn of a limits-lane
    worker goes over its instance's limit (one at a time in the lane, within the instance's
    budget of agent-ending faults)."""

    def fault(soak: Soak) -> None:
        lane = soak.limits
        if lane is None or not lane.over_limit_busy.acquire(blocking=False):
            return
        workers = [w for w in lane.workers if soak._may_end(w.instance)]
        if not workers:
            lane.over_limit_busy.release()
            soak.deferred[kind] += 1
            return
        worker = soak.rng.choice(workers)
        soak._ended(worker.instance)
        lane.over_limit[worker.thread_id] = kind  # the worker releases over_limit_busy when judged

    return fault


def queue_burst(soak: Soak) -> None:
    """A burst of sends on one limits-lane instance (:meth:`LimitsLane.burst`)."""
    if soak.limits is not None:
        soak.limits.burst(random.Random(soak.rng.random()))


FAULT_WEIGHTS.update({"limit_memory": 2, "limit_processes": 2, "queue_burst": 3})
SLOW_FAULT_SPACING.update({"limit_memory": 8.0, "limit_processes": 8.0, "queue_burst": 3.0})
BACKGROUND_FAULTS.update({"limit_memory": over_limit("limit_memory"), "limit_processes": over_limit("limit_processes"),
                          "queue_burst": queue_burst})
LIMITS_FAULTS = ("limit_memory", "limit_processes", "queue_burst")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench soak", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0, help="length of the fault phase")
    parser.add_argument("--seed", type=int, default=None, help="seed of every random choice (default: random, printed)")
    parser.add_argument("--sessions", type=int, default=12, help="sessions of the local lane")
    parser.add_argument("--instances", type=int, default=3, help="local-agent instances of the local lane")
    parser.add_argument("--fault-interval", type=float, default=2.0, help="mean seconds between two faults")
    parser.add_argument("--no-disk", action="store_true", help="skip the tmpfs disk lane")
    parser.add_argument("--no-server", action="store_true", help="skip the paddock serve lane")
    parser.add_argument("--no-limits", action="store_true", help="skip the limits lane (issue 35)")
    parser.add_argument("--limits-sessions", type=int, default=6,
                        help="worker sessions of the limits lane (on 2 instances, besides its burst sessions)")
    parser.add_argument("--faults", type=lambda v: [k for k in v.split(",") if k], default=[],
                        help=f"inject only these fault kinds (comma-separated; default every one): {', '.join(FAULT_WEIGHTS)}")
    parser.add_argument("--trace-memory", action="store_true",
                        help="diagnosis: tracemalloc for the whole run; the top allocation growth "
                             "between the windows is reported (slows the host)")
    parser.add_argument("--trim-memory", action="store_true",
                        help="diagnosis: after each RSS sample call glibc's malloc_trim(0) and sample again "
                             "(host_rss_trimmed_mb: what the host holds once freed heap pages are returned)")
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.faults) - set(FAULT_WEIGHTS))
    if unknown:
        parser.error(f"unknown fault kinds {unknown}; known: {', '.join(FAULT_WEIGHTS)}")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    args.sessions = max(1, args.sessions)
    args.instances = max(1, min(args.instances, args.sessions))
    with tempfile.TemporaryDirectory(prefix="paddock-bench-soak-") as tmp:
        soak = Soak(args, tmp)
        try:
            doc = soak.run()
        finally:
            if soak.server is not None:
                shutil.rmtree(soak.server.state_dir, ignore_errors=True)
    emit(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
