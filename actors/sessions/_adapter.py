"""SessionAdapter: the one implementation of ``ProviderAdapter`` every driver instance runs
(docs/architecture.md, "The adapter contract").

It owns what every driver answers the same way: the table of the instance's sessions
(:class:`SessionRecord` per thread), session record creation and its rollback when a start
fails, the forwarding of each operation to the session actor as a control message
(:mod:`._control`), the capability gates (an operation the driver's capabilities lack is refused
with :class:`CapabilityUnsupportedError` before anything reaches a process), stop, close and
listing. The process model is a subclass in this package: one shared process per instance
(:class:`~._shared.SharedProcessAdapter`), one process per session
(:class:`~._per_session.ProcessPerSessionAdapter`), one HTTP server per instance
(:class:`~._server.ServerAdapter`). A driver subclasses one of them and supplies only what its
protocol makes different: spawn and readiness, its session actor, its capabilities, and the
optional hooks (models, auth, home preparation).

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import msgspec
import pykka

from paddock.contract import (
    INTERACTION_MODES,
    MAX_PROMPT_CHARS,
    RUNTIME_MODES,
    Capabilities,
    CapabilityUnsupportedError,
    DriverError,
    ModelInfo,
    OperationTimeout,
    PaddockError,
    ProcessError,
    ResumeCursor,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionNotFoundError,
    StartSessionInput,
    ThreadSnapshot,
    TurnStartResult,
    ValidationError,
    check_attachments_allowed,
)
from paddock.supervisors import Scope, map_exceptions

from ..events import HubHandle
from ._control import AnswerUserInput, Compact, FailTurn, Fork, Interrupt, Open, Respond, Rollback, SendTurn, Steer
from ._idle import IdleStopper
from ._session import SessionRecord

__all__ = ["SessionAdapter", "StoppedSnapshots"]

S = TypeVar("S")
R = TypeVar("R")

_GATES: dict[str, tuple[Callable[[Capabilities], bool], str]] = {
    "turns.steer": (lambda c: c.turns.steer, "adding input to a running turn; interrupt it and send a new one"),
    "approvals.user_input": (lambda c: c.approvals.user_input, "answering structured user input"),
    "threads.rollback": (lambda c: c.threads.rollback, "dropping turns from a thread"),
    "sessions.fork": (lambda c: c.sessions.fork, "forking a thread"),
    "context.compaction": (lambda c: c.context.compaction, "compacting a thread"),
}


class StoppedSnapshots(dict[str, ThreadSnapshot]):
    """The last snapshots of stopped sessions, keeping only the ``limit`` most recent (a host
    that runs sessions for months must not grow without bound; the event log keeps the rest)."""

    def __init__(self, limit: int = 1024) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, thread_id: str, snapshot: ThreadSnapshot) -> None:
        self.pop(thread_id, None)
        super().__setitem__(thread_id, snapshot)
        while len(self) > self.limit:
            del self[next(iter(self))]


class SessionAdapter(Generic[S]):
    """One driver instance: the ``ProviderAdapter`` the runtime talks to. ``S`` is the driver's
    per-session state (``SessionRecord.state``).

    A process model (subclass in this package) implements :meth:`_start` (start the thread's
    session actor through :meth:`_launch`), :meth:`_terminate` and :meth:`_close_tree`; a
    driver implements :meth:`capabilities` and the process model's hooks. Tables:
    ``_records`` (thread id -> live :class:`SessionRecord`), ``_stopped`` (thread id -> the
    last snapshot of a stopped session), both guarded by ``_lock``; reads are thread-safe.
    """

    process_per_session: ClassVar[bool] = False
    """Each session runs its own agent process (its confinement can include the session's cwd);
    otherwise one process serves every session of the instance."""
    _refusals: ClassVar[Mapping[str, str]] = {}
    """Capability -> why this driver lacks it (the protocol fact), for the refusal's message."""
    _await_restart: ClassVar[bool] = False
    """A dead session actor restarts with its process (wait for it) instead of being closed."""
    _scope: Scope | None = None
    """The root of the instance's supervision tree while it runs (set by the process model)."""
    _process_name: ClassVar[str | None] = None
    """When set, a :class:`ProcessError` while starting a session becomes
    ``DriverError("could not start <name>: ...")``."""

    def __init__(self, driver: str, instance_id: str, *, hub: HubHandle, request_timeout: float,
                 idle_timeout: float | None = None) -> None:
        self.driver = driver
        self.instance_id = instance_id
        self._hub = hub
        self._request_timeout = request_timeout
        self._records: dict[str, SessionRecord[S]] = {}
        self._stopped = StoppedSnapshots()
        self._where: dict[str, str] = {"driver": driver, "instance_id": instance_id}
        self._lock = threading.RLock()
        self._start_locks: dict[str, tuple[threading.Lock, list[int]]] = {}  # lock, users
        self._closed = False
        self._models: tuple[ModelInfo, ...] | None = None
        self._idle = IdleStopper(idle_timeout, instance_id, self._is_idle, self._stop_idle_tree)
        """Stops the instance's shared process after ``idle_timeout`` s without a session."""

    # hooks ---------------------------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        raise NotImplementedError

    def _start(self, input: StartSessionInput, timeout: float | None) -> Session:
        """Start the thread's session (caller's thread, under the thread's start lock, after the
        table held no live session for it): build its record and actor with :meth:`_launch`."""
        raise NotImplementedError

    def _terminate(self, thread_id: str, timeout: float) -> None:
        """Best effort: stop the thread's session actor (and its process, if it owns one)."""
        raise NotImplementedError

    def _close_tree(self, deadline: float) -> None:
        """Stop every session actor, then every process of the instance, by ``deadline``."""
        raise NotImplementedError

    def models(self) -> tuple[ModelInfo, ...] | None:
        """The model catalog the agent last reported (its handshake or a session's start), or
        ``None`` before it reported one. Thread-safe."""
        return self._models

    def record_models(self, models: Sequence[ModelInfo]) -> None:
        """Keep the catalog the agent reported (any thread; the value is replaced whole)."""
        self._models = tuple(models)

    def list_models(self, *, timeout: float) -> tuple[ModelInfo, ...] | None:
        """Hook: the catalog, fetched without a session where the protocol allows it (Codex's
        ``model/list`` on its handshake, OpenCode's providers); ``None`` means the agent reports
        it only when a session starts, and the runtime opens a throwaway one. Default: what was
        reported so far. Thread: the caller's; may start the instance's process."""
        return self._models

    def _stop_idle_tree(self, still_idle: Callable[[], bool]) -> None:
        """Hook (a thread of its own): stop the instance's shared process, which served no
        session for ``idle_timeout`` seconds, if ``still_idle()`` (checked under ``_lock``,
        after the model's start lock is taken) says no session came meanwhile; the next start
        spawns it again. Default: nothing (no shared process)."""

    def _is_idle(self) -> bool:
        with self._lock:
            return not self._closed and not self._start_locks and all(r.closed for r in self._records.values())

    def _stop_timeout(self) -> float:
        """How long ``stop_session`` waits when the caller gives no timeout."""
        return 10.0

    def _ended(self, record: SessionRecord[S]) -> None:
        """A session left the table (stopped, closed, or ended on its own and replaced): keep
        what must outlive it (caller's thread). Default: its last snapshot."""
        with self._lock:
            self._stopped[record.session.thread_id] = record.thread

    # records -------------------------------------------------------------------------------------

    def _launch(self, input: StartSessionInput, model: str | None, state: S,
                start: Callable[[SessionRecord[S]], None], open_limit: Callable[[], float]) -> Session:
        """Create the thread's record (``input`` with ``model`` resolved, ``state``), start its
        actor with ``start(record)``, then ask it to open the native session within
        ``open_limit()`` seconds. On any failure the record is rolled back (out of the table,
        closed, its actor stopped) and a :class:`PaddockError` raised."""
        thread_id = input.thread_id
        now = time.time()
        if input.model != model:
            input = msgspec.structs.replace(input, model=model)
        record = SessionRecord(
            Session(thread_id=thread_id, instance_id=self.instance_id, driver=self.driver, status="starting",
                    cwd=input.cwd, runtime_mode=input.runtime_mode, interaction_mode=input.interaction_mode,
                    model=model, resume_cursor=input.resume_cursor, created_at=now, updated_at=now),
            input, self._hub.emitter(self.driver, self.instance_id, thread_id, confinement=input.confinement), state,
        )
        record.report_models = self.record_models
        with self._lock:
            self._records[thread_id] = record
            self._stopped.pop(thread_id, None)
        self._idle.touch()
        try:
            start(record)
            session: Session = self._ask(record, Open(), "start_session", open_limit(),
                                         await_restart=self._await_restart)
            return session
        except BaseException as exc:
            with self._lock:
                if self._records.get(thread_id) is record:
                    self._records.pop(thread_id, None)
            record.closed = True
            self._terminate(thread_id, 5.0)
            if isinstance(exc, ProcessError) and self._process_name is not None:
                raise DriverError(self.driver, self.instance_id, f"could not start {self._process_name}: {exc}",
                                  thread_id=thread_id) from None
            if isinstance(exc, PaddockError):
                raise
            if isinstance(exc, TimeoutError):
                raise OperationTimeout("start_session", open_limit(), **self._where, thread_id=thread_id) from None
            if isinstance(exc, pykka.ActorDeadError):
                raise DriverError(self.driver, self.instance_id, "start_session failed: the session stopped while "
                                  "it started (its agent process exited)", thread_id=thread_id) from None
            raise DriverError(self.driver, self.instance_id, f"start_session failed: {exc!r}",
                              thread_id=thread_id) from exc

    def _record(self, thread_id: str) -> SessionRecord[S]:
        """The live record of ``thread_id``: :class:`SessionClosedError` when it stopped,
        :class:`SessionNotFoundError` when this instance never had it."""
        record = self._records.get(thread_id)
        if record is None or record.closed:
            if record is not None or thread_id in self._stopped:
                raise SessionClosedError(thread_id, **self._where)
            raise SessionNotFoundError(thread_id, **self._where)
        return record

    @contextlib.contextmanager
    def _thread_start_lock(self, thread_id: str) -> Iterator[None]:
        # Two concurrent starts of one thread must not start two sessions: the second waits,
        # then returns the session the first one started. The lock lives while a start holds or
        # waits for it, so the table does not grow with every thread an instance ever started.
        with self._lock:
            entry = self._start_locks.setdefault(thread_id, (threading.Lock(), [0]))
            entry[1][0] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1][0] -= 1
                if not entry[1][0]:
                    del self._start_locks[thread_id]
            self._idle.arm()  # a start that failed may leave the instance with no session

    @staticmethod
    def _terminate_scope_child(scope: Scope | None, child_id: str, timeout: float) -> None:
        """Best effort: stop ``child_id`` of ``scope`` unless the scope is gone or over."""
        if scope is None or scope.exit_reason is not None:
            return
        try:
            scope.terminate_child(child_id, timeout=timeout)
        except (PaddockError, pykka.ActorDeadError, pykka.Timeout):
            pass

    def check_start_input(self, input: StartSessionInput) -> None:
        """Refuse an unknown runtime or interaction mode, or a cwd that is not an existing
        absolute directory (:class:`ValidationError`)."""
        if input.runtime_mode not in RUNTIME_MODES:
            raise ValidationError("start_session", f"unknown runtime mode {input.runtime_mode!r}", **self._where)
        if input.interaction_mode not in INTERACTION_MODES:
            raise ValidationError("start_session", f"unknown interaction mode {input.interaction_mode!r}", **self._where)
        if not os.path.isabs(input.cwd) or not os.path.isdir(input.cwd):
            raise ValidationError("start_session", f"cwd {input.cwd!r} is not an existing absolute directory", **self._where)

    def check_turn_input(self, input: SendTurnInput) -> None:
        """Refuse an empty or oversized prompt, or an unknown interaction mode, before anything
        reaches a process (:class:`ValidationError`)."""
        if not input.text.strip():
            raise ValidationError("send_turn", "the prompt is empty", **self._where, thread_id=input.thread_id)
        if len(input.text) > MAX_PROMPT_CHARS:
            raise ValidationError(
                "send_turn", f"the prompt has {len(input.text)} characters (limit {MAX_PROMPT_CHARS})",
                **self._where, thread_id=input.thread_id,
            )
        if input.interaction_mode is not None and input.interaction_mode not in INTERACTION_MODES:
            raise ValidationError("send_turn", f"unknown interaction mode {input.interaction_mode!r}", **self._where)
        self.check_attachments(input, steering=False)

    def check_attachments(self, input: SendTurnInput, *, steering: bool) -> None:
        """Refuse what ``turns.attachments`` / ``turns.steer_attachments`` deny
        (:class:`CapabilityUnsupportedError`), before anything reaches a process."""
        check_attachments_allowed(self.capabilities().turns, input.attachments, steering=steering,
                                  driver=self.driver, instance_id=self.instance_id, thread_id=input.thread_id)

    # asking session actors -----------------------------------------------------------------------

    def _ask(self, record: SessionRecord[S], message: object, operation: str, limit: float, *,
             await_restart: bool = False) -> Any:
        """Ask the session actor, waiting at most ``limit`` seconds (:class:`OperationTimeout`).
        A dead actor means :class:`SessionClosedError`, unless ``await_restart``: then (the
        session restarts with its agent process) wait for the next incarnation until the
        deadline. Thread: any (the caller's)."""
        thread_id = record.session.thread_id
        where = {**self._where, "thread_id": thread_id}
        deadline = time.monotonic() + limit
        while True:
            ref = record.ref
            if record.closed:
                raise SessionClosedError(thread_id, **self._where)
            if ref is not None and ref.is_alive():
                dead = None if await_restart else SessionClosedError(thread_id, **self._where)
                try:
                    with map_exceptions(operation, limit, dead=dead, where=where):
                        return ref.ask(message, timeout=max(0.0, deadline - time.monotonic()))
                except pykka.ActorDeadError:
                    pass  # await_restart: the next incarnation is on its way
            elif not await_restart:
                raise SessionClosedError(thread_id, **self._where)
            if time.monotonic() >= deadline:
                raise OperationTimeout(operation, limit, **where)
            time.sleep(0.01)

    def _forward(self, thread_id: str, message: object, operation: str, timeout: float | None) -> Any:
        limit = timeout if timeout is not None else self._request_timeout + 5.0
        return self._ask(self._record(thread_id), message, operation, limit, await_restart=self._await_restart)

    def _gate(self, capability: str, thread_id: str) -> None:
        has, what = _GATES[capability]
        if not has(self.capabilities()):
            why = self._refusals.get(capability) or f"the {self.driver} driver does not support {what}"
            raise CapabilityUnsupportedError(capability, why, **self._where, thread_id=thread_id)

    # ProviderAdapter -----------------------------------------------------------------------------

    def start_session(self, input: StartSessionInput, *, timeout: float | None = None) -> Session:
        """Start (or resume, from ``input.resume_cursor``) the thread's native session. Returns
        the thread's live session unchanged when it already has one on this instance."""
        self.check_start_input(input)
        thread_id = input.thread_id
        with self._thread_start_lock(thread_id):
            with self._lock:
                existing = self._records.get(thread_id)
                if existing is not None and not existing.closed:
                    return existing.session
                if existing is not None:  # it ended on its own (its process died): keep its history
                    self._records.pop(thread_id, None)
            if existing is not None:
                self._ended(existing)
                self._terminate(thread_id, 5.0)
            return self._start(input, timeout)

    def send_turn(self, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        """Start a turn; returns once the agent accepted it (``turn.started`` is emitted first).
        Its progress and its one ``turn.completed`` arrive as events."""
        self.check_turn_input(input)
        result: TurnStartResult = self._forward(input.thread_id, SendTurn(input), "send_turn", timeout)
        return result

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        """Interrupt the running turn; returns once the interrupt is under way, the turn then
        ends ``interrupted``. A no-op when no turn (or not ``turn_id``) is running."""
        self._forward(thread_id, Interrupt(turn_id), "interrupt_turn", timeout)

    def fail_turn(self, thread_id: str, turn_id: str, code: str, message: str, *,
                  detail: dict[str, Any] | None = None, timeout: float | None = None) -> None:
        """End the running turn ``turn_id`` ``failed`` with ``message``, for a cause the runtime
        found outside the agent: one ``runtime.error`` ``code``, then the agent is asked to stop
        (:class:`~._control.FailTurn`). Returns once that is under way; a no-op when the turn
        is not running."""
        self._forward(thread_id, FailTurn(turn_id, code, message, detail), "fail_turn", timeout)

    def steer_turn(self, thread_id: str, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        """Add ``input`` to the running turn (``turns.steer``); returns that turn's id."""
        self._gate("turns.steer", thread_id)
        self.check_turn_input(input)
        self.check_attachments(input, steering=True)
        result: TurnStartResult = self._forward(thread_id, Steer(input), "steer_turn", timeout)
        return result

    def respond_to_request(self, thread_id: str, request_id: str, decision: str, *, decided_by: str = "person",
                           surface: str | None = None, timeout: float | None = None) -> None:
        """Answer an open ``request.opened`` with ``decision``, once; ``decided_by`` and
        ``surface`` are recorded on its ``request.resolved``."""
        self._forward(thread_id, Respond(request_id, decision, decided_by, surface), "respond_to_request", timeout)

    def respond_to_user_input(self, thread_id: str, request_id: str, answers: dict[str, Any], *,
                              timeout: float | None = None) -> None:
        """Answer an open ``user-input.requested`` (question id or text -> answer text or list
        of texts; ``approvals.user_input``)."""
        self._gate("approvals.user_input", thread_id)
        self._forward(thread_id, AnswerUserInput(request_id, answers), "respond_to_user_input", timeout)

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        """Drop the last ``num_turns`` turns from the native history (``threads.rollback``).
        Files the turns changed stay changed."""
        self._gate("threads.rollback", thread_id)
        snapshot: ThreadSnapshot = self._forward(thread_id, Rollback(num_turns), "rollback_thread", timeout)
        return snapshot

    def fork_native(self, thread_id: str, *, at_turn: int | None = None, timeout: float | None = None) -> ResumeCursor:
        """Copy the thread's native session (``sessions.fork``), through turn ``at_turn`` (1-based)
        where the driver forks from a turn (``sessions.fork_kind == "from_turn"``; elsewhere
        ``at_turn`` is refused with :class:`CapabilityUnsupportedError`); the copy's cursor, for
        a new session to resume from. The Runtime's ``fork_thread`` binds that session."""
        self._gate("sessions.fork", thread_id)
        if at_turn is not None and self.capabilities().sessions.fork_kind != "from_turn":
            raise CapabilityUnsupportedError("sessions.fork_kind", f"the {self.driver} driver forks whole "
                                             "sessions only, not from a past turn", **self._where, thread_id=thread_id)
        cursor: ResumeCursor = self._forward(thread_id, Fork(at_turn), "fork_thread", timeout)
        return cursor

    def fork_thread(self, thread_id: str, new_thread_id: str, *, at_turn: int | None = None,
                    runtime_mode: str | None = None, timeout: float | None = None) -> Session:
        """:meth:`fork_native`, then start ``new_thread_id`` on the copy (same cwd, modes, model,
        MCP servers and preamble; ``runtime_mode`` overrides) as its own, unbound session."""
        base = self._record(thread_id).input
        cursor = self.fork_native(thread_id, at_turn=at_turn, timeout=timeout)
        return self.start_session(StartSessionInput(
            thread_id=new_thread_id, cwd=base.cwd, runtime_mode=runtime_mode or base.runtime_mode,  # type: ignore[arg-type]
            interaction_mode=base.interaction_mode, model=base.model, resume_cursor=cursor,
            workspace_roots=base.workspace_roots, mcp_servers=base.mcp_servers, preamble=base.preamble,
            preamble_reminder=base.preamble_reminder), timeout=timeout)

    def compact_thread(self, thread_id: str, *, timeout: float | None = None) -> TurnStartResult | None:
        """Summarize the thread's native history to free context (``context.compaction``): the
        driver's compaction turn's result, or ``None`` when it is not a turn (its progress then
        shows as events)."""
        self._gate("context.compaction", thread_id)
        result: TurnStartResult | None = self._forward(thread_id, Compact(), "compact_thread", timeout)
        return result

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Stop the session: a running turn is interrupted, open requests are cancelled and
        ``session.exited(reason="stopped")`` is emitted. The thread can be resumed later."""
        with self._lock:
            record = self._records.get(thread_id)
            if record is None:
                if thread_id in self._stopped:
                    raise SessionClosedError(thread_id, **self._where)
                raise SessionNotFoundError(thread_id, **self._where)
            self._records.pop(thread_id, None)
            record.closed = True
            self._stopped[thread_id] = record.thread
        self._terminate(thread_id, timeout if timeout is not None else self._stop_timeout())
        self._ended(record)
        self._idle.arm()

    def stop_all(self, *, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else 15.0)
        for thread_id in list(self._records):
            try:
                self.stop_session(thread_id, timeout=max(0.1, deadline - time.monotonic()))
            except (SessionNotFoundError, SessionClosedError):
                pass

    def list_sessions(self) -> list[Session]:
        return [r.session for r in list(self._records.values()) if not r.closed]

    def has_session(self, thread_id: str) -> bool:
        record = self._records.get(thread_id)
        return record is not None and not record.closed

    def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot:
        """The turns this instance saw on the thread (also after the session stopped)."""
        record = self._records.get(thread_id)
        if record is not None:
            return record.thread
        if thread_id in self._stopped:
            return self._stopped[thread_id]
        raise SessionNotFoundError(thread_id, **self._where)

    def request_close(self, deadline: float) -> None:
        """Start closing and return at once (thread: any): no session starts from now on, and the
        instance's supervisors restart nothing and stop their children by ``deadline`` (a
        ``time.monotonic()`` value; one already passed kills them at once). :meth:`close` does
        the rest: the sessions' ``session.exited`` and the wait."""
        with self._lock:
            self._closed = True
            scope = self._scope
        if scope is not None:
            scope.request_close(deadline)

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop every session (each emits ``session.exited``), then every process of the
        instance, within ``timeout`` seconds. Afterwards no process of the instance is alive.
        Idempotent."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            records = list(self._records.values())
            self._records.clear()
            for record in records:
                record.closed = True
                self._stopped[record.session.thread_id] = record.thread
        self._close_tree(deadline)
        self._idle.join(deadline)
        for record in records:
            self._ended(record)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.driver}/{self.instance_id}>"
