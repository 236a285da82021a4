"""SharedProcessAdapter: the adapter plumbing of a driver whose one process serves every session
of the instance (Codex app-server, ACP agents).

Supervision tree, built lazily by the first ``start_session``::

    InstanceSupervisor[<instance>]          rest_for_one, at most 3 restarts in 60 s, backoff
    ├── <process child>: the shared process  (its handshake done before "started")
    └── sessions: Supervisor                one_for_one
        └── <session actor>[<thread>]       transient, one per live session

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Generic, TypeVar

import pykka

from paddock.contract import DriverError, PaddockError, RuntimeErrorEvent, Session, StartSessionInput
from paddock.supervisors import ChildContext, ChildSpec, Scope, Supervisor, map_exceptions

from ._control import Open
from ._session import SessionRecord, SessionTable
from ..events import HubHandle

__all__ = ["SharedProcessAdapter"]

log = logging.getLogger(__name__)

L = TypeVar("L")


class SharedProcessAdapter(SessionTable, Generic[L]):
    """The instance supervisor (the shared process + the session supervisor), the restart-aware
    session routing, ``start_session``/``stop_session``/``close``. A subclass sets the class
    attributes naming its process and implements :meth:`_start_process` (ChildSpec factory that
    sets ``_link``) and :meth:`_start_session_actor`; :meth:`_prepare_start` and
    :meth:`_session_model` are optional hooks. ``L`` is the link type sessions reach the process
    through (``_get_link``)."""

    _process_child: str = "process"
    """The supervisor child id of the shared process."""
    _process_noun: str = "the process"
    """What start errors call the process (``could not start <noun>``)."""
    _failed_noun: str = "the process"
    """What the restart-limit error calls the process (``<noun> failed too often``)."""
    _log_name: str = "shared-process"
    """The log prefix (``<name> instance <id> gave up``)."""
    _error_prefix: str = "driver"
    """The prefix of the ``<prefix>.restart_limit`` error code."""

    def __init__(self, driver: str, instance_id: str, *, hub: HubHandle, request_timeout: float,
                 start_timeout: float) -> None:
        super().__init__(driver, instance_id)
        self._hub = hub
        self._request_timeout = request_timeout
        self._start_timeout = start_timeout
        self._start_lock = threading.Lock()
        self._handshake_timeout = start_timeout
        self._scope: Scope | None = None
        self._link: L | None = None
        self._generation = 0
        self._sessions_ref: pykka.ActorRef[Any] | None = None
        self._closed = False

    # hooks ---------------------------------------------------------------------------------------

    def _prepare_start(self) -> None:
        """Before a new tree starts (caller's thread, under the start lock): e.g. write the home."""

    def _start_process(self, cctx: ChildContext) -> pykka.ActorRef[Any]:
        """ChildSpec factory (root supervisor thread): spawn the process, do its handshake within
        ``_handshake_timeout``, set ``_link`` (under ``_lock``) and return the process's actor."""
        raise NotImplementedError

    def _start_session_actor(self, record: SessionRecord, emitter: Any, cctx: ChildContext) -> pykka.ActorRef[Any]:
        """Start the session actor of ``record`` (session supervisor thread)."""
        raise NotImplementedError

    def _session_model(self, input: StartSessionInput) -> str | None:
        return input.model

    # the supervision tree ------------------------------------------------------------------------

    def _ensure_started(self, timeout: float | None) -> None:
        # Not under self._lock: the supervisor thread takes it while starting the children.
        with self._start_lock:
            if self._closed:
                raise DriverError(self.driver, self.instance_id, "the instance is closed")
            scope = self._scope
            if scope is not None and scope.exit_reason is None:
                return
            self._prepare_start()
            limit = self._start_timeout if timeout is None else min(timeout, self._start_timeout)
            self._handshake_timeout = limit
            scope = Scope(
                [
                    ChildSpec(id=self._process_child, start=self._start_process, restart="permanent", shutdown=5.0,
                              start_timeout=limit + 5.0),
                    ChildSpec(id="sessions", start=self._start_sessions, restart="permanent", shutdown=10.0),
                ],
                name=f"instance:{self.instance_id}",
                strategy="rest_for_one",
                max_restarts=3,
                period=60.0,
                on_escalate=self._on_escalate,
                start_timeout=limit + 10.0,
            )
            try:
                scope.start()
            except PaddockError as exc:
                scope.close(timeout=5.0)
                raise DriverError(self.driver, self.instance_id, f"could not start {self._process_noun}: {exc}") from None
            finally:
                # Restarts (no caller waiting) get the configured start timeout.
                self._handshake_timeout = self._start_timeout
            self._scope = scope

    def _start_sessions(self, cctx: ChildContext) -> pykka.ActorRef[Any]:
        """ChildSpec factory (root supervisor thread): a session supervisor holding one actor
        per live session, so a restart brings every live session back."""
        with self._lock:
            specs = [self._session_spec(r) for r in self._records.values() if not r.closed]
        ref = Supervisor.start(specs, strategy="one_for_one", name=f"sessions:{self.instance_id}", context=cctx)
        self._sessions_ref = ref
        return ref

    def _session_spec(self, record: SessionRecord) -> ChildSpec:
        emitter = record.extra["emitter"]

        def start(cctx: ChildContext) -> pykka.ActorRef[Any]:
            return self._start_session_actor(record, emitter, cctx)

        return ChildSpec(id=record.session.thread_id, start=start, restart="transient", shutdown=5.0)

    def _get_link(self) -> L | None:
        return self._link

    def _on_escalate(self, error: BaseException) -> None:
        # Root supervisor thread: the restart budget is spent; every session is over.
        log.error("%s instance %s gave up: %s", self._log_name, self.instance_id, error)
        with self._lock:
            for record in self._records.values():
                record.closed = True
                self._stopped[record.session.thread_id] = record.thread
                record.extra["emitter"].emit([
                    RuntimeErrorEvent(
                        driver=self.driver, instance_id=self.instance_id, thread_id=record.session.thread_id,
                        code=f"{self._error_prefix}.restart_limit",
                        message=f"{self._failed_noun} failed too often ({error}); the session is closed",
                    )
                ])
            self._records.clear()
            self._link = None

    # routing helpers -----------------------------------------------------------------------------

    def _ask_session(self, record: SessionRecord, message: object, operation: str, timeout: float | None) -> Any:
        # A session actor restarts with the shared process: wait for the next incarnation.
        limit = timeout if timeout is not None else self._request_timeout + 5.0
        return self._ask(record, message, operation, limit, await_restart=True)

    def _terminate_child(self, thread_id: str, timeout: float) -> None:
        ref = self._sessions_ref
        if ref is None:
            return
        try:
            ref.proxy().terminate_child(thread_id).get(timeout=timeout)
        except (pykka.ActorDeadError, pykka.Timeout):
            pass  # best effort: the session is closed either way

    # ProviderAdapter -----------------------------------------------------------------------------

    def start_session(self, input: StartSessionInput, *, timeout: float | None = None) -> Session:
        """Start (or resume, from ``input.resume_cursor``) the thread's native session. Returns
        the thread's live session unchanged when it already has one on this instance."""
        thread_id = input.thread_id
        self.check_start_input(input)
        live, existing = self._claim(thread_id)
        if live is not None:
            return live
        if existing is not None:
            self._terminate_child(thread_id, 5.0)  # a session closed from inside (e.g. a failed reload)
        self._ensure_started(timeout)
        now = time.time()
        record = SessionRecord(
            Session(
                thread_id=thread_id, instance_id=self.instance_id, driver=self.driver, status="starting",
                cwd=input.cwd, runtime_mode=input.runtime_mode, interaction_mode=input.interaction_mode,
                model=self._session_model(input), resume_cursor=input.resume_cursor, created_at=now, updated_at=now,
            )
        )
        record.extra["input"] = input
        record.extra["emitter"] = self._hub.emitter(self.driver, self.instance_id, thread_id)
        with self._lock:
            if thread_id in self._records:
                return self._records[thread_id].session
            self._records[thread_id] = record
            self._stopped.pop(thread_id, None)
        limit = timeout if timeout is not None else self._request_timeout + 5.0
        try:
            assert self._sessions_ref is not None  # _ensure_started started the tree
            try:
                with map_exceptions("start_session", limit, where={**self._where, "thread_id": thread_id}):
                    self._sessions_ref.proxy().start_child(self._session_spec(record)).get(timeout=limit)
            except ValueError:
                pass  # a concurrent restart of the session supervisor already started it
            return self._ask_session(record, Open(), "start_session", timeout)
        except BaseException as exc:
            with self._lock:
                self._records.pop(thread_id, None)
            record.closed = True
            self._terminate_child(thread_id, 5.0)
            if isinstance(exc, PaddockError):
                raise
            raise DriverError(self.driver, self.instance_id, f"start_session failed: {exc!r}", thread_id=thread_id) from exc

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Stop the session: a running turn is interrupted, open requests are cancelled and
        ``session.exited(reason="stopped")`` is emitted. The thread can be resumed later."""
        with self._lock:
            record = self._record(thread_id)
            record.closed = True
            self._records.pop(thread_id, None)
            self._stopped[thread_id] = record.thread
        self._terminate_child(thread_id, timeout if timeout is not None else 10.0)

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop every session, then the shared process (graceful step, SIGTERM, SIGKILL at the
        deadline). Afterwards no process of the instance is alive. Idempotent."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            scope, self._scope = self._scope, None
            for record in self._records.values():
                record.closed = True
                self._stopped[record.session.thread_id] = record.thread
            self._records.clear()
        if scope is not None:
            scope.close(deadline)
        self._link = None
