"""The embedding API: :class:`Runtime`, a facade over the operation table.

:class:`RuntimeAPI` holds one method per operation of :mod:`paddock._operations._table` (the signatures
users read), shared with :class:`paddock.client.RemoteRuntime`. A Runtime owns an EventHub
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from paddock._operations import _table as ops
from paddock._instances._config import RuntimeConfig, load_config
from paddock._instances._table import InstanceInfo, InstanceTable
from paddock._operations._table import Operation
from paddock._operations._pending import PendingRequest, PendingRequests
from paddock._state._recovery import claim_state_dir, end_turns_left_open
from paddock._state._dir import StateDirLock, private_file
from paddock._observe._telemetry import SPAN_TYPES, TurnSpans, control_span, tracing_configured
from paddock._threads._directory import DEFAULT_TIMEOUT, ThreadDirectory
from paddock._observe._watchdog import StallWatchdog
from paddock._observe._event_reader import EventReader
from paddock._state._budgets import Budgets
from paddock._state._processes import ProcessMeter
from paddock._state._usage import LEDGER_TYPES, UsageLedger
from paddock._threads._waits import UsageLimitWaits
from paddock.actors import EventHub, Subscription
from paddock.contract import (
    Attachment,
    Budget,
    Decision,
    InteractionMode,
    McpServer,
    ModelInfo,
    PaddockError,
    PersistenceError,
    RuntimeMode,
    Session,
    SessionClosedError,
    ThreadSnapshot,
    TurnStartResult,
    UsageReport,
    ValidationError,
)
from paddock.contract._construct import NoPublicConstructor
from paddock._state._store import Binding, BindingStore

__all__ = ["InstanceInfo", "Runtime", "RuntimeAPI"]

R = TypeVar("R")
_METER_EVERY = 2.0  # seconds between samples of the agent processes' CPU and RSS
_CLOSE_RESERVE = 1.5  # seconds of close()'s budget kept for the last-resort kill and the log


class RuntimeAPI:
    """The operations of the table as methods, for a runtime in this process (:class:`Runtime`)
    or behind ``paddock serve`` (:class:`paddock.client.RemoteRuntime`): each passes its arguments
    to :meth:`_call` with its operation. Every method is thread-safe, takes an optional
    keyword-only ``timeout`` in seconds where it blocks, and raises only ``PaddockError``s."""

    def _call(self, op: Operation[R], args: Mapping[str, Any]) -> R:
        """Run ``op`` with ``args`` (the method's ``locals()``)."""
        raise NotImplementedError

    # instances ----------------------------------------------------------------------------------

    def instances(self) -> list[InstanceInfo]:
        """Every configured instance with its status and, once known, its capabilities."""
        return self._call(ops.INSTANCES, locals())

    def diagnose(self, *, timeout: float = 10.0) -> list[dict[str, Any]]:
        """For each instance: id, driver, status, reason, binary, version, auth state and home.

        Uses the driver's ``diagnose`` hook when it has one, else runs ``<binary> --version``.
        Never starts a session.
        """
        return self._call(ops.DIAGNOSE, locals())

    def models(self, instance: str, *, refresh: bool = False, timeout: float = 120.0) -> list[ModelInfo]:
        """The instance's model catalog: id, display name, default, reasoning efforts, input kinds.

        Cached per instance for five minutes; ``refresh`` asks the agent again. Where the agent
        lists models only when a session starts (Claude, ACP agents), a throwaway session is
        started and stopped in an empty private folder. Empty when the agent lists none.
        """
        return self._call(ops.MODELS, locals())

    # sessions -----------------------------------------------------------------------------------

    def start_session(
        self,
        thread_id: str,
        *,
        instance: str,
        cwd: str | os.PathLike[str],
        runtime_mode: RuntimeMode = "full-access",
        interaction_mode: InteractionMode = "default",
        model: str | None = None,
        resume: Literal["auto", "require", "never"] | None = None,
        mcp_servers: Sequence[McpServer] | None = None,
        preamble: str | None = None,
        preamble_reminder: str | None = None,
        require: Sequence[str] = (),
        budget: Budget | None = None,
        timeout: float | None = None,
    ) -> Session:
        """Bind ``thread_id`` to ``instance`` and start its session.

        A thread that has a binding resumes from its cursor (``session.started`` has
        ``resumed=True``). A failed resume emits ``runtime.warning`` and starts fresh, unless
        ``resume="require"`` (or the config's ``[runtime] resume``) where it raises.
        ``require`` names capability paths the host needs (``"approvals.commands"``,
        ``"turns.steer"``, ``"sessions.resume"``, ``"tools.mcp_transports.http"``, ...): an
        instance without one, or one that cannot honour ``runtime_mode``, is refused with
        :class:`CapabilityUnsupportedError` naming it before any process starts. ACP agents are
        judged by the instance's cached negotiation (its last ``initialize`` answer), else by
        what the flavor declares its agent answers; no process is started to ask. A thread live on
        another instance is stopped there first; one live on this instance with the same cwd,
        modes, model and hand-off is returned as it is, and restarted from its cursor when they
        differ. Returns when the session is ready.

        ``mcp_servers`` join the instance's configured ones (an entry wins by name); ``None``
        keeps what the thread had, so every resume (also in a new host process) starts with the
        same servers. Their ``env`` and ``headers`` values are secrets: masked everywhere and
        written only to a 0600 file in the instance's home. ``preamble`` (else the instance's)
        rides the first turn of each live session incarnation as a delimited prefix of the
        user's text; ``preamble_reminder`` (one line) rides every later turn. A preamble over
        the instance's ``preamble_max_chars`` (default 70,000) is omitted with a
        ``runtime.warning``, never cut. ``budget`` bounds what the thread spends (see
        :meth:`set_budget`); ``None`` keeps the one it had. Raises :class:`ValidationError` for a
        bad server (a name given twice, an empty command, a non-HTTP url) or a reminder of more
        than one line; :class:`BudgetExceededError` never (``send_turn`` does).
        """
        return self._call(ops.START_SESSION, locals())

    def send_turn(
        self,
        thread_id: str,
        text: str,
        *,
        interaction_mode: InteractionMode | None = None,
        model: str | None = None,
        attachments: Sequence[Attachment] = (),
        timeout: float | None = None,
    ) -> TurnStartResult:
        """Send a user message; returns when the agent accepted the turn.

        ``attachments`` (:class:`~paddock.contract.ImageAttachment`,
        :class:`~paddock.contract.FileAttachment`) ride the turn where ``turns.attachments``
        takes their kind; others are refused with :class:`CapabilityUnsupportedError` before any
        process is touched. Paths resolve against the session's cwd and must stay inside its
        workspace roots; count and size are bounded (``MAX_ATTACHMENTS``,
        ``MAX_ATTACHMENT_BYTES``): :class:`ValidationError` otherwise. ``model`` (like
        ``start_session``'s) must be in the instance's catalog where one is known
        (:meth:`models`): :class:`ValidationError` naming the close matches otherwise.

        The turn's progress arrives as events carrying ``turn_id``. A thread whose session was
        reaped or closed (or whose host died) resumes transparently. Raises
        :class:`ValidationError` for an empty or oversized prompt, an invalid mode, or a turn
        sent while another runs; :class:`SessionNotFoundError` for an unknown thread;
        :class:`SessionClosedError` for a thread stopped with ``stop_session``;
        :class:`BudgetExceededError` while a budget over the thread (its own, its instance's, the
        runtime's) is spent (``steer_turn`` too).
        """
        return self._call(ops.SEND_TURN, locals())

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        """Ask the agent to stop the running turn (``turn_id`` or the current one). The turn then
        ends with ``turn.completed(state="interrupted")``; a finished turn is left alone."""
        return self._call(ops.INTERRUPT_TURN, locals())

    def steer_turn(self, thread_id: str, text: str, *, attachments: Sequence[Attachment] = (),
                   timeout: float | None = None) -> TurnStartResult:
        """Add ``text`` to the running turn, following ``decide_steering``: steer it when the agent
        can, else interrupt it, wait for its completion and start a new turn with ``text``."""
        return self._call(ops.STEER_TURN, locals())

    def respond_to_request(self, thread_id: str, request_id: str, decision: Decision, *,
                           timeout: float | None = None) -> None:
        """Answer an open ``request.opened``. Raises :class:`ValidationError` for an unknown
        decision and :class:`RequestError` for an unknown or already resolved request."""
        return self._call(ops.RESPOND_TO_REQUEST, locals())

    def respond_to_user_input(self, thread_id: str, request_id: str, answers: Mapping[str, Any], *,
                              timeout: float | None = None) -> None:
        """Answer an open ``user-input.requested`` with ``answers`` keyed by question id."""
        return self._call(ops.RESPOND_TO_USER_INPUT, locals())

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Stop the thread's session on purpose. Its binding stays (status ``stopped``):
        ``start_session`` resumes it, ``send_turn`` raises :class:`SessionClosedError`."""
        return self._call(ops.STOP_SESSION, locals())

    def stop_all(self, *, timeout: float | None = None) -> None:
        """Stop every live session (bindings stay, status ``stopped``)."""
        return self._call(ops.STOP_ALL, locals())

    def list_sessions(self) -> list[Session]:
        """The live sessions of every instance."""
        return self._call(ops.LIST_SESSIONS, locals())

    def has_session(self, thread_id: str) -> bool:
        """Whether ``thread_id`` has a live session."""
        return self._call(ops.HAS_SESSION, locals())

    def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot:
        """The thread's turns and their items, folded from the event log by
        :func:`paddock.contract.fold_thread` (works for every driver, live or not; an item not
        completed yet shows its last status and the text streamed so far). Raises
        :class:`SessionNotFoundError` for a thread never started."""
        return self._call(ops.READ_THREAD, locals())

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        """Drop the last ``num_turns`` turns, where the agent supports it
        (``threads.rollback``); raises :class:`CapabilityUnsupportedError` otherwise."""
        return self._call(ops.ROLLBACK_THREAD, locals())

    def fork_thread(self, thread_id: str, new_thread_id: str, *, at_turn: int | None = None,
                    instance: str | None = None, timeout: float | None = None) -> Session:
        """Copy ``thread_id`` into the new thread ``new_thread_id`` (keeping turns 1..``at_turn``
        where given) and return the new thread's live session; the new thread has its own binding.

        On the source's instance the agent copies its session where it can (``sessions.fork``;
        with ``at_turn`` only where ``sessions.fork_kind`` is ``from_turn``). Otherwise, and
        always when ``instance`` names another instance, it is a hand-off: a new session whose
        first turn carries the source's transcript as its preamble (the most recent turns that
        fit the instance's ``preamble_max_chars``, saying so when earlier ones are left out).
        Raises :class:`ValidationError` when ``new_thread_id`` is already bound."""
        return self._call(ops.FORK_THREAD, locals())

    def compact_thread(self, thread_id: str, *, timeout: float | None = None) -> TurnStartResult | None:
        """Summarize the thread's native history to free context (``context.compaction``), resuming
        the session first when it is not live. Returns the compaction turn's result where the agent
        runs it as a turn (its progress and summary arrive as events), else ``None``. Raises
        :class:`CapabilityUnsupportedError` before touching a process where the agent cannot."""
        return self._call(ops.COMPACT_THREAD, locals())

    # pending requests and thread bindings (what `paddock requests` and `paddock sessions` list) ---

    def pending_requests(self, thread_id: str | None = None, *, timeout: float | None = None) -> list[PendingRequest]:
        """The approval (``request.opened``) and user-input (``user-input.requested``) requests
        still open, across threads or for ``thread_id``, oldest first. Every request opened before
        the call is included; one resolved, whose turn completed or whose session exited is not."""
        return self._call(ops.PENDING_REQUESTS, locals())

    def list_threads(self) -> list[Binding]:
        """Every thread bound in the state directory (live or not), as persisted."""
        return self._call(ops.LIST_THREADS, locals())

    def generate_text(self, instance: str, prompt: str, *, model: str | None = None,
                      timeout: float = 120.0) -> str:
        """One-shot text (a title, a commit message, a summary): run ``prompt`` in an ephemeral
        session of ``instance`` with no tool approved (runtime mode ``approval-required``, every
        request declined) and return the assistant's text of that turn.

        It leaves no binding, nothing in :meth:`list_sessions` or :meth:`list_threads`, and no
        process beyond those the instance already ran. Raises :class:`OperationTimeout` after
        ``timeout`` seconds, :class:`DriverError` when the turn fails or answers no text, and
        :class:`InstanceNotFoundError` for an unknown or unavailable instance.
        """
        return self._call(ops.GENERATE_TEXT, locals())

    # events -------------------------------------------------------------------------------------

    def compact_events(self, before_seq: int) -> int:
        """Delete logged events with ``seq < before_seq``; returns how many were removed."""
        return self._call(ops.COMPACT_EVENTS, locals())

    # spend --------------------------------------------------------------------------------------

    def usage(self, thread_id: str | None = None, instance: str | None = None, since: float | None = None, *,
              timeout: float = 5.0) -> UsageReport:
        """What the turns started at or after ``since`` (Unix time; all when ``None``) spent, from
        the usage ledger: tokens by kind, cost and its source, turns and their wall time, in total,
        per instance and per thread, and per turn when ``thread_id`` is given. It includes every
        event published before the call (it waits up to ``timeout`` seconds for the ledger to
        fold them). The ledger lives in the state directory and survives restarts."""
        return self._call(ops.USAGE, locals())

    def set_budget(self, budget: Budget | None, thread_id: str | None = None, instance: str | None = None) -> None:
        """Set the budget of a thread, of an instance, or (neither given) of the runtime; ``None``
        removes it (the config's applies again). Persisted. Raising a spent budget lets
        ``send_turn`` through again."""
        return self._call(ops.SET_BUDGET, locals())


class Runtime(RuntimeAPI, metaclass=NoPublicConstructor):
    """Run agent sessions and publish what they do as one canonical event stream.

    Build one with :meth:`open`; use it as a context manager or call :meth:`close`. Closing stops
    every session (each emits ``session.exited``) and every process the runtime started.
    """

    _public_factory = "Runtime.open(...)"

    def __init__(self, *, config: RuntimeConfig, state_dir: Path, owner: StateDirLock) -> None:
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
            self._threads = ThreadDirectory(store, self._instances, self._hub, config.settings)
            self._pending = PendingRequests(self._hub)
            hub = self._hub
            self._meter = ProcessMeter(state_dir)
            self._budgets = Budgets(
                self._ledger, runtime=config.settings.budgets,
                instances={e.instance_id: e.budget for e in config.instances if e.budget is not None},
                emit=lambda evs: hub.emitter(evs[0].driver, evs[0].instance_id, evs[0].thread_id).emit(evs),
                interrupt=self._stop_for_budget,
                instance_of=lambda t: b.instance_id if (b := store.get(t)) is not None else None)
            # The ledger's reader: it resumes the log after what the ledger folded (all of it
            # when the ledger is missing), so the ledger is rebuilt from the events.
            folded = self._ledger.folded_seq
            self._usage_reader = EventReader(
                lambda: hub.subscribe(types=LEDGER_TYPES, from_seq=folded + 1 if log_path is not None else None),
                "paddock-usage", self._fold_usage, most=4096, tick=0.1, on_wake=self._budget_tick)
            self._usage_reader.start()
            self._handlers = self._bind_handlers()
            policies = {e.instance_id: e.on_usage_limit for e in config.instances if e.on_usage_limit is not None}
            default_policy = config.settings.on_usage_limit
            self._waits = UsageLimitWaits(
                hub, state_dir / "paddock.db", policy=lambda i: policies.get(i, default_policy),
                send=lambda thread_id, text: self.send_turn(thread_id, text)).start()
            self._threads.start()
            after = config.settings.stall_warning
            self._watchdog = StallWatchdog(hub, after).start() if after else None
            # Turn and request spans only when the host configured an OpenTelemetry SDK.
            self._spans = TurnSpans(lambda: hub.subscribe(types=SPAN_TYPES)).start() if tracing_configured() else None
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
        """
        cfg = load_config(config if not isinstance(config, os.PathLike) else os.fspath(config))
        folder = Path(state_dir or os.environ.get("PADDOCK_STATE_DIR") or ".paddock").resolve()
        return cls._create(config=cfg, state_dir=folder, owner=claim_state_dir(folder))

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
        args = {k: v for k, v in locals().items() if k not in ("self", "types")}
        self._check_open()
        try:
            ops.check_text("thread_id", thread_id)
            ops.check_text("instance_id", instance_id)
        except ValueError as exc:
            raise ValidationError("subscribe", str(exc)) from None
        return self._hub.subscribe(**args, types=tuple(types) if types is not None else None)

    # closing ------------------------------------------------------------------------------------

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop every session and process, flush the event log, and release the state directory.

        After it returns no process the runtime started is alive and every live session has
        emitted ``session.exited``. Bindings stay (status ``closed``) so threads resume on demand
        after the next :meth:`open`. Idempotent.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        deadline = time.monotonic() + timeout
        self._waits.close(timeout=max(0.25, timeout / 4))  # no turn goes again while closing
        live = self._threads.halt()
        # The instances close under the budget less a reserve: at its end every leased process
        # still alive is SIGKILLed (the last resort), and that kill, the instances' bookkeeping
        # and the log's last writes fit inside the budget (at 200 instances the kill alone took
        # 1.6 s on a loaded 2-core machine when it started at the deadline).
        self._instances.close_all(deadline - min(_CLOSE_RESERVE, timeout / 4))
        self._threads.mark_closed(live)
        try:
            self._hub.flush(timeout=max(0.25, deadline - time.monotonic()))
        except PaddockError:
            pass
        self._threads.stop_tracking()
        self._pending.close()
        self._hub.close(timeout=max(0.25, deadline - time.monotonic()))
        for reader in (self._spans, self._watchdog, self._usage_reader):
            if reader is not None:
                reader.close(timeout=max(0.25, deadline - time.monotonic()))
        if not self._usage_reader.running:  # it read the subscription to its end: every event
            self._ledger.read_up_to(self._hub.last_seq)
        self._budgets.close()
        self._ledger.close()
        self._threads.close()
        self._owner.release()  # last: the next owner finds the log and bindings complete
        _open_runtimes.discard(self)

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
            ops.GENERATE_TEXT: threads.generate_text,
            ops.COMPACT_EVENTS: lambda a: self._hub.compact(a.before_seq),
            ops.MODELS: threads.models,
            ops.USAGE: self._usage,
            ops.SET_BUDGET: lambda a: self._budgets.put(a.budget, thread_id=a.thread_id, instance=a.instance),
        }

    def _fold_usage(self, batch: list[Any]) -> None:
        """The ledger's reader thread: fold a batch, then judge the budgets it touched."""
        touched = self._ledger.fold(batch)
        if touched and self._budgets.any:
            like = {e.thread_id: (e.driver, e.instance_id, e.thread_id, e.turn_id) for e in batch}
            self._budgets.after(touched, like)

    def _budget_tick(self) -> None:
        """The ledger's reader thread, after each wake: judge time budgets (every 0.5 s) and
        sample the agent processes (every 2 s)."""
        now = time.monotonic()
        if self._budgets.any and now - self._budget_ticked >= 0.5:
            self._budget_ticked = now
            self._budgets.tick()
        if now - self._metered >= _METER_EVERY:
            self._metered = now
            self._ledger.note_processes(self._meter.sample())

    _budget_ticked = 0.0
    _metered = 0.0

    def _stop_for_budget(self, thread_id: str, turn_id: str) -> None:
        """Interrupt a turn whose budget is spent (a thread of its own: it may wait on the agent)."""
        try:
            self._threads.interrupt_turn(ops.InterruptTurnBody(thread_id=thread_id, turn_id=turn_id or None))
        except PaddockError:
            pass  # the turn ended, or the session went away: nothing left to stop

    def _usage(self, a: ops.UsageBody) -> UsageReport:
        try:
            self._hub.flush(timeout=a.timeout)
        except PaddockError:
            pass  # a closing hub: what was folded so far
        else:
            self._metered = 0.0  # the reader samples the processes at its next wake
            self._usage_reader.sync(a.timeout)
        return self._ledger.report(a.thread_id, a.instance, a.since)

    def _start_session(self, a: ops.StartSessionBody) -> Session:
        if a.budget is not None:
            self._budgets.put(a.budget, thread_id=a.thread_id)
        return self._threads.start_session(a)

    def _send_turn(self, a: ops.SendTurnBody) -> TurnStartResult:
        self._budgets.check(a.thread_id)
        return self._threads.send_turn(a)

    def _steer_turn(self, a: ops.SteerTurnBody) -> TurnStartResult:
        self._budgets.check(a.thread_id)  # steering spends too (or starts a new turn)
        return self._threads.steer_turn(a)

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
