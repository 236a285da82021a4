"""The embedding API: :class:`Runtime`, a facade over the operation table.

:class:`~paddock._api.RuntimeAPI` (``runtime/_api.py``) holds one method per operation of the
table, shared with :class:`paddock.client.RemoteRuntime`. A Runtime owns an EventHub
(durable, sequenced event log), the instance table (one adapter per configured instance, created
on first use), the thread directory (bindings and live sessions) and the open requests; it
validates each call once against its operation and hands the checked body to the room that does
the work. Every public method is thread-safe, takes an optional keyword-only ``timeout`` in
seconds where it blocks, and raises only ``PaddockError``s. See docs/architecture.md.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from paddock._api import RuntimeAPI
from paddock._operations import _table as ops
from paddock._operations._approval_hook import DEFAULT_HOOK_TIMEOUT, ApprovalHook, HookRunner
from paddock._instances._config import RuntimeConfig, load_config
from paddock._instances._probes import tcp_unreachable
from paddock._instances._table import InstanceInfo, InstanceTable
from paddock._operations._table import Operation
from paddock._operations._pending import PendingRequests
from paddock._state._recovery import claim_state_dir, end_turns_left_open
from paddock._state._dir import StateDirLock, private_file
from paddock._observe._telemetry import SPAN_TYPES, TurnSpans, control_span, tracing_configured
from paddock._threads._admission import admission_gates
from paddock._threads._directory import DEFAULT_TIMEOUT, ThreadDirectory
from paddock._threads._failover import hand_over
from paddock._observe._endpoint_watch import ENDPOINT_UNREACHABLE, EndpointWatch
from paddock._observe._watchdog import StallWatchdog
from paddock._observe._event_reader import EventReader
from paddock._state._budgets import Budgets
from paddock._state._processes import ProcessMeter
from paddock._state._spend import SpendReader
from paddock._state._usage import LEDGER_TYPES, UsageLedger
from paddock._threads._waits import UsageLimitWaits
from paddock._workspaces._files import ThreadFiles
from paddock.actors import EventHub, Subscription
from paddock.contract import (
    PaddockError,
    PersistenceError,
    SessionClosedError,
    TurnStartResult,
    UsageReport,
    ValidationError,
)
from paddock.contract._construct import NoPublicConstructor
from paddock._state._store import BindingStore

__all__ = ["CloseReport", "InstanceInfo", "Runtime", "RuntimeAPI"]


R = TypeVar("R")
_CLOSE_RESERVE = 3.5  # at most these seconds of close()'s budget follow the last-resort kill
_CLOSE_TAIL = 0.5  # seconds of close()'s budget kept for the stores once the log is closed


class CloseReport(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`Runtime.close` did. ``seconds``: how long it took; ``events_given_up``:
    events neither logged nor delivered (the disk refused them, or the log could not take them
    in time), 0 when every event was logged; ``survivors``: pids of processes the runtime
    started that were still alive when it returned (empty unless one could not be killed,
    e.g. in uninterruptible sleep). ``instances_seconds``: how long closing the instances took
    (the graceful close, then the last-resort kill and its check); ``log_seconds``: then the
    bindings and the event log (flush and close)."""

    seconds: float
    events_given_up: int = 0
    survivors: tuple[int, ...] = ()
    instances_seconds: float = 0.0
    log_seconds: float = 0.0


class Runtime(RuntimeAPI, metaclass=NoPublicConstructor):
    """Run agent sessions and publish what they do as one canonical event stream.

    Build one with :meth:`open`; use it as a context manager or call :meth:`close`. Closing stops
    every session (each emits ``session.exited``) and every process the runtime started.
    """

    _public_factory = "Runtime.open(...)"

    def __init__(self, *, config: RuntimeConfig, state_dir: Path, owner: StateDirLock,
                 approval_hook: ApprovalHook | None = None, approval_hook_timeout: float = DEFAULT_HOOK_TIMEOUT,
                 ) -> None:
        self.state_dir = state_dir
        self._owner = owner
        self._closed = False
        self._lock = threading.Lock()
        try:
            store = BindingStore(private_file(state_dir / "paddock.db"))
        except BaseException:
            owner.release()
            raise
        try:
            self._ledger = UsageLedger(state_dir / "paddock.db", config.pricing)
        except BaseException:
            store.close()
            owner.release()
            raise
        try:
            log_path = private_file(state_dir / "events.db") if config.settings.event_log else None
            self._hub = EventHub.start(log_path=str(log_path) if log_path is not None else None,
                                       max_bytes=config.settings.event_log_max_bytes)
        except BaseException:
            self._ledger.close()
            store.close()
            owner.release()
            raise
        try:
            end_turns_left_open(self._hub, store)
            self._instances = InstanceTable(config, state_dir=state_dir, hub=self._hub)
            files = ThreadFiles(state_dir, self._hub, keep=config.settings.checkpoints_kept)
            files.sweep({b.thread_id for b in store.list()})  # worktrees and refs of deleted threads
            self._meter = ProcessMeter(state_dir)
            turn_gate, session_gate = admission_gates(config, self._meter.rss)
            self._threads = ThreadDirectory(store, self._instances, self._hub, config.settings, files,
                                            turn_gate=turn_gate, session_gate=session_gate)
            self._pending = PendingRequests(self._hub)
            hub = self._hub
            self._budgets = Budgets(
                self._ledger, runtime=config.settings.budgets,
                instances={e.instance_id: e.budget for e in config.instances if e.budget is not None},
                emit=lambda evs: hub.emitter(evs[0].driver, evs[0].instance_id, evs[0].thread_id).emit(evs),
                interrupt=self._stop_for_budget,
                instance_of=lambda t: b.instance_id if (b := store.get(t)) is not None else None)
            self._threads.budget_of = self._budgets.thread_budget
            # The ledger's reader: it resumes the log after what the ledger folded (all of it
            # when the ledger is missing), so the ledger is rebuilt from the events.
            folded = self._ledger.folded_seq
            self._spend = SpendReader(self._ledger, self._budgets, self._meter)
            self._usage_reader = EventReader(
                lambda: hub.subscribe(types=LEDGER_TYPES, from_seq=folded + 1 if log_path is not None else None),
                "paddock-usage", self._spend.fold, most=4096, tick=0.1, on_wake=self._spend.tick, linger=0.02)
            self._usage_reader.start()
            self._handlers = self._bind_handlers()
            policies = {e.instance_id: e.on_usage_limit for e in config.instances if e.on_usage_limit is not None}
            default_policy = config.settings.on_usage_limit
            targets = {e.instance_id: e.failover for e in config.instances if e.failover is not None}
            threads = self._threads
            self._waits = UsageLimitWaits(
                hub, state_dir / "paddock.db", policy=lambda i: policies.get(i, default_policy),
                send=lambda thread_id, text: self.send_turn(thread_id, text),
                failover=lambda i: targets.get(i, config.settings.failover),
                hand_over=lambda thread_id, turn_id, target: hand_over(threads, thread_id, turn_id, target)).start()
            self._threads.start()
            after = config.settings.stall_warning
            table = self._instances
            endpoints = None
            if any(table.endpoint_of(entry.instance_id) is not None for entry in config.instances):
                threads = self._threads
                endpoints = EndpointWatch(table.endpoint_of, tcp_unreachable, lambda thread_id, turn_id, message, detail:
                                          threads.fail_turn(thread_id, turn_id, ENDPOINT_UNREACHABLE, message, detail))
            self._watchdog = (StallWatchdog(hub, after or None, endpoints=endpoints).start()
                              if after or endpoints is not None else None)
            # Turn and request spans only when the host configured an OpenTelemetry SDK.
            self._spans = TurnSpans(lambda: hub.subscribe(types=SPAN_TYPES)).start() if tracing_configured() else None
            self._hook = HookRunner(hub, approval_hook, self._answer_as_host, timeout=approval_hook_timeout,
                                    skip=self._threads.is_ephemeral).start() if approval_hook is not None else None
        except BaseException:
            self._hub.close()
            self._ledger.close()
            store.close()
            owner.release()
            raise
        _open_runtimes.add(self)

    @classmethod
    def open(
        cls,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        *,
        state_dir: str | os.PathLike[str] | None = None,
        approval_hook: ApprovalHook | None = None,
        approval_hook_timeout: float = DEFAULT_HOOK_TIMEOUT,
    ) -> Runtime:
        """Open a runtime.

        ``config`` is a TOML path, a mapping of the same shape, or ``None`` for one built-in
        ``local`` instance. ``state_dir`` (default ``$PADDOCK_STATE_DIR`` or ``./.paddock``) holds
        the binding store, the event log and each instance's private home. Raises
        :class:`ConfigError` for malformed configuration; an instance whose driver is unknown or
        whose binary is missing is listed as unavailable instead.

        When called in the main thread of a host that left SIGTERM and SIGHUP at their defaults,
        those signals raise ``SystemExit`` there, so ``with`` blocks unwind and every open
        runtime closes in order (an interpreter exit closes them too). A host with its own
        handlers keeps them.

        ``approval_hook(request)`` decides the approval requests no rule decided, before a
        person: it gets the ``request.opened`` and returns a decision the request offered, or
        ``None`` (a person decides). It runs on one of a few daemon workers of its own, never an
        actor's; a call that takes longer than ``approval_hook_timeout`` seconds leaves the
        request to a person (``runtime.warning`` ``approval.hook_timeout``) and its late answer
        is dropped. Its answers are audited ``decided_by = "host"``.
        """
        if approval_hook_timeout <= 0:
            raise ValidationError("open", f"approval_hook_timeout must be positive, got {approval_hook_timeout!r}")
        cfg = load_config(config if not isinstance(config, os.PathLike) else os.fspath(config))
        folder = Path(state_dir or os.environ.get("PADDOCK_STATE_DIR") or ".paddock").resolve()
        return cls._create(config=cfg, state_dir=folder, owner=claim_state_dir(folder), approval_hook=approval_hook,
                           approval_hook_timeout=approval_hook_timeout)

    # events -------------------------------------------------------------------------------------

    def subscribe(
        self,
        thread_id: str | None = None,
        instance_id: str | None = None,
        types: Iterable[str] | None = None,
        from_seq: int | None = None,
        assistant_delivery: Literal["streaming", "buffered"] = "streaming",
        *,
        max_buffered: int | None = None,
    ) -> Subscription:
        """Subscribe to canonical events, optionally filtered; ``from_seq`` replays from the log
        first, then continues live with no gap and no duplicate. See :class:`paddock.actors.Subscription`.

        ``max_buffered`` bounds the events held in memory for this subscriber (default 20,000).
        Beyond it a subscriber that falls behind reads the event log to catch up; with the log
        off, the newest events are dropped for it and a ``runtime.warning``
        (``subscription.gap``) says how many.

        Not in the operation table: a stream, served as SSE (``GET /v1/events``)."""
        a = ops.subscribe_arguments(locals())
        self._check_open()
        return self._hub.subscribe(thread_id=a.thread_id, instance_id=a.instance_id, types=a.types, from_seq=a.from_seq,
                                   assistant_delivery=a.assistant_delivery, max_buffered=a.max_buffered)

    # closing ------------------------------------------------------------------------------------

    def close(self, *, timeout: float = 10.0) -> CloseReport:
        """Stop every session and process, flush the event log, and release the state directory.

        Returns within ``timeout`` + 1 s whatever the agents, the hub or the disk do, and never
        raises. After it returns no process the runtime started is alive (the last-resort kill
        is confirmed, with its own bound; :attr:`CloseReport.survivors` names any that could
        not be killed), every live session has emitted ``session.exited`` unless its events had
        to be given up, and the state directory is released (its lock and databases closed):
        the next :meth:`open` of it succeeds. Events the disk still refused, or that the log
        could not take in time, are given up and counted in :attr:`CloseReport.events_given_up`;
        the next open's recovery ends the turns they leave open. Bindings stay (status
        ``closed``) so threads resume on demand after the next :meth:`open`. Idempotent: a
        second call returns an empty report.
        """
        with self._lock:
            if self._closed:
                return CloseReport(seconds=0.0)
            self._closed = True
        started = time.monotonic()
        deadline = started + timeout
        # The graceful close has until kill_at; then every process still alive is SIGKILLed at
        # once and that is confirmed by confirm_until; the log and the stores get the rest. The
        # kill starts at a point fixed by the deadline, not after the graceful steps used it up
        # (at 200 instances under load the kill and its check took up to 1.5 s).
        reserve = min(_CLOSE_RESERVE, timeout * 0.35)
        kill_at = deadline - reserve
        confirm_until = kill_at + reserve * 0.4
        instances_done = log_done = started
        survivors: tuple[int, ...] = ()
        given_up = 0
        try:
            self._waits.close(timeout=max(0.05, min(1.0, timeout / 4)))  # no turn goes again while closing
            self._threads.end_queued()  # nor does a queued one start
            live = self._threads.halt()
            try:
                survivors = self._instances.close_all(kill_at, confirm_until)
            finally:
                instances_done = time.monotonic()
                self._threads.mark_closed(live)
            if self._hub.refused is None and self._hub.failure is None:
                try:  # a disk that refuses the log would only make this wait
                    self._hub.flush(timeout=max(0.05, deadline - _CLOSE_TAIL - time.monotonic()))
                except PaddockError:
                    pass
            self._threads.stop_tracking()
            if self._hook is not None:
                self._hook.close(timeout=max(0.05, deadline - _CLOSE_TAIL - time.monotonic()))
            self._pending.close()
        finally:
            try:
                given_up = self._hub.close(timeout=max(0.05, deadline - _CLOSE_TAIL - time.monotonic()))
                log_done = time.monotonic()
                for reader in (self._spans, self._watchdog, self._usage_reader):
                    if reader is not None:
                        reader.close(timeout=max(0.05, deadline - time.monotonic()))
                if not self._usage_reader.running:  # it read the subscription to its end: every event
                    self._ledger.read_up_to(self._hub.last_seq)
                self._budgets.close()
                self._ledger.close()
                self._threads.close(timeout=max(0.1, deadline - time.monotonic()))
            finally:
                self._owner.release()  # last: the next owner finds the log and bindings complete
                _open_runtimes.discard(self)
        return CloseReport(seconds=time.monotonic() - started, events_given_up=given_up, survivors=survivors,
                           instances_seconds=instances_done - started, log_seconds=log_done - instances_done)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # internals ----------------------------------------------------------------------------------

    def _call(self, op: Operation[R], args: Mapping[str, Any]) -> R:
        """Validate ``args`` once against ``op`` and run it in the room that holds its work (thread:
        the caller's). A closed runtime refuses the operations that need it open, first."""
        if op.needs_open:
            self._check_open()
        with control_span(op.name, args):
            result: R = self._handlers[op](op.parse(args))
        return result

    def _bind_handlers(self) -> dict[Operation[Any], Callable[[Any], Any]]:
        """Operation -> what runs its checked body."""
        instances, threads, pending = self._instances, self._threads, self._pending
        return {
            ops.INSTANCES: lambda a: instances.infos(),
            ops.DIAGNOSE: lambda a: instances.diagnose(a.timeout),
            ops.START_SESSION: self._start_session,
            ops.SEND_TURN: self._send_turn,
            ops.INTERRUPT_TURN: threads.interrupt_turn,
            ops.STEER_TURN: self._steer_turn,
            ops.RESPOND_TO_REQUEST: threads.respond_to_request,
            ops.RESPOND_TO_USER_INPUT: threads.respond_to_user_input,
            ops.STOP_SESSION: threads.stop_session,
            ops.STOP_ALL: threads.stop_all,
            ops.LIST_SESSIONS: lambda a: threads.list_sessions(),
            ops.HAS_SESSION: lambda a: threads.has_session(a.thread_id),
            ops.READ_THREAD: threads.read_thread,
            ops.ROLLBACK_THREAD: threads.rollback_thread,
            ops.FORK_THREAD: threads.fork_thread,
            ops.COMPACT_THREAD: threads.compact_thread,
            ops.PENDING_REQUESTS: lambda a: pending.snapshot(
                a.thread_id, timeout=DEFAULT_TIMEOUT if a.timeout is None else a.timeout),
            ops.LIST_THREADS: lambda a: threads.list_threads(),
            ops.QUEUE: lambda a: threads.queue(a.instance),
            ops.GENERATE_TEXT: threads.generate_text,
            ops.COMPACT_EVENTS: lambda a: self._hub.compact(a.before_seq),
            ops.MODELS: threads.models,
            ops.RESTORE_FILES: threads.restore_files,
            ops.DIFF: threads.diff,
            ops.DELETE_THREAD: threads.delete_thread,
            ops.USAGE: self._usage,
            ops.SET_BUDGET: lambda a: self._budgets.put(a.budget, thread_id=a.thread_id, instance=a.instance),
        }

    def _answer_as_host(self, thread_id: str, request_id: str, decision: str) -> None:
        """The approval hook's answer (thread: a hook worker), audited as the host's."""
        self._check_open()
        self._threads.respond_to_request(ops.RespondToRequestBody(
            thread_id=thread_id, request_id=request_id, decision=decision), decided_by="host")  # type: ignore[arg-type]

    # spend (see paddock._state._usage, _budgets and paddock._threads._waits) --------------------

    def _stop_for_budget(self, thread_id: str, turn_id: str) -> None:
        """Interrupt a turn whose budget is spent (a thread of its own: it may wait on the agent)."""
        try:
            self._threads.interrupt_turn(ops.InterruptTurnBody(thread_id=thread_id, turn_id=turn_id or None))
        except PaddockError:
            pass  # the turn ended, or the session went away: nothing left to stop

    def _usage(self, a: ops.UsageBody) -> UsageReport:
        self._spend.sample_soon()  # the reader's next wake samples the processes: sync waits for it
        self._fold_all(a.timeout, wake=True)
        return self._ledger.report(a.thread_id, a.instance, a.since)

    def _fold_all(self, timeout: float | None, *, wake: bool = False) -> bool:
        """Let the ledger fold every event published so far (the caller's thread); False when
        the hub is closing (what was folded stands)."""
        limit = 30.0 if timeout is None else timeout
        try:
            self._hub.flush(timeout=limit)
        except PaddockError:
            return False
        self._usage_reader.sync(limit, wake=wake)
        return True

    def _start_session(self, a: ops.StartSessionBody) -> Any:
        if a.budget is not None:
            self._budgets.put(a.budget, thread_id=a.thread_id)
        return self._threads.start_session(a)

    def _send_turn(self, a: ops.SendTurnBody) -> TurnStartResult:
        self._check_budget(a.thread_id, a.timeout)
        return self._threads.send_turn(a)

    def _steer_turn(self, a: ops.SteerTurnBody) -> TurnStartResult:
        self._check_budget(a.thread_id, a.timeout)  # steering spends too (or starts a new turn)
        return self._threads.steer_turn(a)

    def _check_budget(self, thread_id: str, timeout: float | None) -> None:
        """BudgetExceededError when a budget over the thread is spent, judged on every event
        published before this call: a turn the host saw complete has its usage folded first
        (only where a budget exists; the ledger's reader lingers after small batches)."""
        if self._budgets.any:
            self._fold_all(timeout)
        self._budgets.check(thread_id)

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(None, "the runtime is closed")
        failed = self._threads.hub_failed or self._hub.failure
        if failed is not None:
            # Without the hub no event can be logged or delivered: refuse work instead of losing it.
            raise PersistenceError("publish events", f"{failed}; close this runtime and open it again")
        refused = self._hub.refused
        if refused is not None:
            # The disk refuses the log: what is under way is held and written when it allows;
            # new work waits for that instead of growing the held events.
            raise PersistenceError("publish events", f"{refused}; try again once the disk has room")

    def _adapter(self, instance_id: str) -> Any:
        """The instance's adapter, created on first use. For recorders and tests that set or read
        a driver's own attributes (``tap``, ``server_pid``): hence not typed as the protocol."""
        self._check_open()
        return self._instances.adapter(instance_id)


_open_runtimes: weakref.WeakSet[Runtime] = weakref.WeakSet()


@atexit.register
def _close_open_runtimes() -> None:
    for rt in list(_open_runtimes):
        try:
            rt.close(timeout=5.0)
        except Exception:
            pass
