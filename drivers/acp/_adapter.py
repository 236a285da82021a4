"""AcpAdapter: one ACP driver instance (the ProviderAdapter the runtime talks to).

Supervision tree (ARCHITECTURE.md), built lazily by the first ``start_session``::

    InstanceSupervisor[<instance>]        rest_for_one, at most 3 restarts in 60 s, backoff
    ├── agent: ProcessActor + JsonRpcConnection  (initialize + authenticate before "started")
    └── sessions: Supervisor              one_for_one
        └── AcpSessionActor[<thread>]     transient, one per live session

One agent process serves every session of the instance (``sessions.shared_process``). When it
dies, rest_for_one stops the sessions (each reports its failed turn, expired requests and
``session.exited(recoverable=<agent can session/load>)``), restarts the agent with backoff, then
restarts a session actor for every live session. The sessions stay registered: the next
``send_turn`` on such a thread reloads its native session (``session/load``) transparently and
emits ``session.started(resumed=True)``. If the agent cannot load sessions, that ``send_turn``
raises :class:`SessionClosedError`. Past the restart budget the instance escalates: every session
is closed and the next ``start_session`` starts a fresh tree.

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from importlib import metadata
from typing import Any

import msgspec
import pykka

from paddock.actors import (
    Interrupt,
    JsonRpcConnection,
    Open,
    ProcessSpec,
    Respond,
    SendTurn,
    SessionRecord,
    SessionTable,
    TransportWarning,
)
from paddock.contract import (
    Capabilities,
    CapabilityUnsupportedError,
    DriverError,
    PaddockError,
    RuntimeErrorEvent,
    SendTurnInput,
    Session,
    StartSessionInput,
    ThreadSnapshot,
    TurnStartResult,
)
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext, ChildSpec, Scope, Supervisor, map_exceptions

from . import _wire as w
from ._agent import AgentLink, Router
from ._capabilities import base_capabilities, negotiate, with_modes
from ._config import AcpConfig
from ._flavor import AcpFlavor
from ._session import AcpSessionActor
from ._settings import SessionSettings

__all__ = ["AcpAdapter"]

log = logging.getLogger(__name__)

_init_decoder = msgspec.json.Decoder(w.InitializeResult)


def _client_version() -> str:
    try:
        return metadata.version("agent-paddock")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


class AcpAdapter(SessionTable):
    """One instance of an ACP flavor. Build it with the flavor's ``DriverSpec.create``."""

    _user_input_note = " (ACP agents ask none)"

    def __init__(self, ctx: InstanceContext, flavor: AcpFlavor) -> None:
        super().__init__(flavor.kind, ctx.instance_id)
        config: AcpConfig = ctx.config  # type: ignore[assignment]
        self._ctx = ctx
        self._flavor = flavor
        self._config = config
        client_fs = flavor.client_fs if config.client_fs is None else config.client_fs
        client_terminal = flavor.client_terminal if config.client_terminal is None else config.client_terminal
        self._settings = SessionSettings(
            driver=flavor.kind,
            instance_id=ctx.instance_id,
            cursor_driver=flavor.kind,
            auto_allow=flavor.auto_allow,
            native_modes={**flavor.native_modes, **config.native_modes},
            cancel_guard=flavor.cancel_guard if config.cancel_guard is None else config.cancel_guard,
            cancel_timeout=config.cancel_timeout,
            request_timeout=config.request_timeout,
            client_fs=client_fs,
            client_terminal=client_terminal,
            terminal_output_limit=config.terminal_output_limit,
            env=dict(ctx.env),
            cancel_retry=flavor.cancel_retry,
            failed_text=flavor.failed_text,
            resume_hint=flavor.resume_hint,
            cancel_meta=dict(flavor.cancel_meta),
            set_model=flavor.set_model,
        )
        self._base_caps = self._override(base_capabilities(client_fs=client_fs, client_terminal=client_terminal))
        self._caps = self._base_caps
        self._start_lock = threading.Lock()
        self._handshake_timeout = config.start_timeout
        self._scope: Scope | None = None
        self._link: AgentLink | None = None
        self._generation = 0
        self._sessions_ref: pykka.ActorRef[Any] | None = None
        self._closed = False
        self.tap: Any = None
        """A line tap (``paddock.actors.LineTap``, e.g. ``paddock.testing.Recorder``) for the
        agent's next process; set it before the first session (the transcript recorder does)."""

    # capabilities --------------------------------------------------------------------------------

    def _override(self, caps: Capabilities) -> Capabilities:
        hook = self._flavor.capability_overrides
        return hook(caps) if hook is not None else caps

    def capabilities(self) -> Capabilities:
        """ACP defaults, then (once the agent answered ``initialize``) the negotiated flags, then
        the flavor's overrides."""
        return self._caps

    # the supervision tree ------------------------------------------------------------------------

    def _ensure_started(self, timeout: float | None) -> None:
        # Not under self._lock: the supervisor thread takes it while starting the children.
        with self._start_lock:
            if self._closed:
                raise DriverError(self.driver, self.instance_id, "the instance is closed")
            scope = self._scope
            if scope is not None and scope.exit_reason is None:
                return
            limit = self._config.start_timeout if timeout is None else min(timeout, self._config.start_timeout)
            self._handshake_timeout = limit
            scope = Scope(
                [
                    ChildSpec(id="agent", start=self._start_agent, restart="permanent", shutdown=5.0,
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
                raise DriverError(self.driver, self.instance_id, f"could not start the agent: {exc}") from None
            finally:
                # Restarts (no caller waiting) get the configured start timeout.
                self._handshake_timeout = self._config.start_timeout
            self._scope = scope

    def _start_agent(self, cctx: ChildContext) -> pykka.ActorRef[Any]:
        """ChildSpec factory (root supervisor thread): spawn the agent, ``initialize`` it and
        ``authenticate`` when configured; the child counts as started only after that."""
        ctx, flavor, config = self._ctx, self._flavor, self._config
        try:
            argv = flavor.argv(ctx)
        except LookupError as exc:
            raise DriverError(self.driver, self.instance_id, f"cannot start the agent: {exc}") from None
        env = flavor.child_env(ctx)
        spec = ProcessSpec(
            argv=tuple(argv), env=env, cwd=ctx.home, name=f"{self.instance_id}:{os.path.basename(argv[0])}",
            owner=self.instance_id, lease_dir=ctx.state_dir, shutdown_timeout=5.0,
        )
        holder: dict[str, JsonRpcConnection] = {}
        router = Router(reject=lambda req: holder["conn"].reject(req))
        deadline = time.monotonic() + self._handshake_timeout
        conn = JsonRpcConnection.open(
            spec, handler=router.on_batch, on_warning=lambda c, m, d: self._on_warning(router, c, m, d),
            context=cctx, timeout=self._handshake_timeout, tap=self.tap,
        )
        holder["conn"] = conn

        def left() -> float:
            return max(0.1, deadline - time.monotonic())

        try:
            s = self._settings
            raw = conn.request(
                "initialize",
                {
                    "protocolVersion": 1,
                    "clientCapabilities": {
                        "fs": {"readTextFile": s.client_fs, "writeTextFile": s.client_fs},
                        "terminal": s.client_terminal,
                    },
                    "clientInfo": {"name": "paddock", "version": _client_version()},
                },
                timeout=left(),
            ).result(left() + 1.0)
            init = _init_decoder.decode(raw)
            method = flavor.auth_for(ctx)
            if method:
                conn.request("authenticate", {"methodId": method}, timeout=left()).result(left() + 1.0)
        except BaseException as exc:
            conn.close(timeout=2.0)
            if isinstance(exc, PaddockError):
                raise DriverError(self.driver, self.instance_id, f"ACP handshake failed: {exc}") from None
            if isinstance(exc, (TimeoutError, msgspec.DecodeError)):
                raise DriverError(self.driver, self.instance_id, f"ACP handshake failed: {exc!r}") from None
            raise
        with self._lock:
            self._generation += 1
            self._link = AgentLink(conn, router, init, self._generation, self._where)
            self._caps = self._override(negotiate(self._base_caps, init))
        return conn.actor_ref

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
        settings = self._settings

        def start(cctx: ChildContext) -> pykka.ActorRef[Any]:
            return AcpSessionActor.start(
                record, emitter, settings, self._get_link, report_modes=self._report_modes, context=cctx
            )

        return ChildSpec(id=record.session.thread_id, start=start, restart="transient", shutdown=5.0)

    def _get_link(self) -> AgentLink | None:
        return self._link

    def _report_modes(self, mode_ids: list[str]) -> None:
        # Inside a session actor (a dispatcher worker): the agent's modes decide planning.plan_mode.
        with self._lock:
            self._caps = with_modes(self._caps, mode_ids, self._settings.native_modes.get("plan"))

    def _on_warning(self, router: Router, code: str, message: str, detail: dict[str, Any]) -> None:
        # Reader thread: tell every session of this process. Before the first session exists
        # (garbage or an oversized line before `initialize`) it is the instance's own warning,
        # published with an empty thread_id: nothing is dropped silently.
        notice = TransportWarning(code, message, detail)
        refs = router.refs()
        for ref in refs:
            ref.tell(notice)
        if not refs:
            self._ctx.hub.instance_warning(self.driver, self.instance_id, "transport." + code.rsplit(".", 1)[-1],
                                           message, detail)

    def _on_escalate(self, error: BaseException) -> None:
        # Root supervisor thread: the restart budget is spent; every session is over.
        log.error("ACP instance %s gave up: %s", self.instance_id, error)
        with self._lock:
            for record in self._records.values():
                record.closed = True
                self._stopped[record.session.thread_id] = record.thread
                record.extra["emitter"].emit([
                    RuntimeErrorEvent(
                        driver=self.driver, instance_id=self.instance_id, thread_id=record.session.thread_id,
                        code="acp.restart_limit",
                        message=f"the agent process failed too often ({error}); the session is closed",
                    )
                ])
            self._records.clear()
            self._link = None

    # routing helpers -----------------------------------------------------------------------------

    def _ask_session(self, record: SessionRecord, message: object, operation: str, timeout: float | None) -> Any:
        # A session actor restarts with its agent process: wait for the next incarnation.
        limit = timeout if timeout is not None else self._config.request_timeout + 5.0
        return self._ask(record, message, operation, limit, await_restart=True)

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
            self._terminate_child(thread_id, 5.0)  # a session closed from inside (failed reload)
        self._ensure_started(timeout)
        now = time.time()
        record = SessionRecord(
            Session(
                thread_id=thread_id, instance_id=self.instance_id, driver=self.driver, status="starting",
                cwd=input.cwd, runtime_mode=input.runtime_mode, interaction_mode=input.interaction_mode,
                model=input.model, resume_cursor=input.resume_cursor, created_at=now, updated_at=now,
            )
        )
        record.extra["input"] = input
        record.extra["emitter"] = self._ctx.hub.emitter(self.driver, self.instance_id, thread_id)
        with self._lock:
            if thread_id in self._records:
                return self._records[thread_id].session
            self._records[thread_id] = record
            self._stopped.pop(thread_id, None)
        limit = timeout if timeout is not None else self._config.request_timeout + 5.0
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

    def send_turn(self, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        """Send the prompt and return as soon as it is written (``turn.started`` is emitted
        first); the turn's progress and its ``turn.completed`` arrive as events."""
        self.check_turn_input(input)
        record = self._record(input.thread_id)
        return self._ask_session(record, SendTurn(input), "send_turn", timeout)

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        """Cancel the running turn (``session/cancel``, after the flavor's start-evidence guard).
        Returns once the cancel is under way; the turn then ends ``interrupted``. A no-op when
        no turn (or not ``turn_id``) is running."""
        self._ask_session(self._record(thread_id), Interrupt(turn_id), "interrupt_turn", timeout)

    def steer_turn(self, thread_id: str, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        raise CapabilityUnsupportedError(
            "turns.steer", "ACP has no way to add input to a running turn; interrupt it and send a new one",
            **self._where, thread_id=thread_id,
        )

    def respond_to_request(self, thread_id: str, request_id: str, decision: str, *, timeout: float | None = None) -> None:
        """Answer a ``request.opened`` permission request; the option is chosen by kind
        (accept -> allow_once, accept_for_session -> allow_always, decline -> reject_once,
        cancel -> the cancelled outcome)."""
        self._ask_session(self._record(thread_id), Respond(request_id, decision), "respond_to_request", timeout)

    def _terminate_child(self, thread_id: str, timeout: float) -> None:
        ref = self._sessions_ref
        if ref is None:
            return
        try:
            ref.proxy().terminate_child(thread_id).get(timeout=timeout)
        except (pykka.ActorDeadError, pykka.Timeout):
            pass  # best effort: the session is closed either way

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Stop the session: a running turn is cancelled, open requests are cancelled and
        ``session.exited(reason="stopped")`` is emitted. The native session can be resumed later
        from the cursor."""
        with self._lock:
            record = self._record(thread_id)
            record.closed = True
            self._records.pop(thread_id, None)
            self._stopped[thread_id] = record.thread
        self._terminate_child(thread_id, timeout if timeout is not None else 10.0)

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        raise CapabilityUnsupportedError("threads.rollback", "ACP has no method to drop turns from a session",
                                         **self._where, thread_id=thread_id)

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop every session, then the agent process (graceful step, SIGTERM, SIGKILL at the
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

    def __repr__(self) -> str:
        return f"<AcpAdapter {self.driver}/{self.instance_id}>"
