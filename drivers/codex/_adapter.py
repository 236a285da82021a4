"""CodexAdapter: one ``codex`` instance (the ProviderAdapter the runtime talks to).

Supervision tree (ARCHITECTURE.md), built lazily by the first ``start_session``::

    InstanceSupervisor[<instance>]          rest_for_one, at most 3 restarts in 60 s, backoff
    ├── server: ProcessActor[codex app-server] + JsonRpcConnection (initialize, initialized,
    │           model/list before "started")
    └── sessions: Supervisor                one_for_one
        └── CodexSessionActor[<thread>]     transient, one per live session

One app-server serves every thread of the instance. When it dies (SIGKILL, a non-zero exit),
rest_for_one stops the sessions (each reports its failed turn, expired requests and
``session.exited(recoverable=True)``), restarts the app-server with backoff, then a session actor
for every live session. The sessions stay registered: the next ``send_turn`` on such a thread
resumes it on the new process (``thread/resume``) and emits ``session.started(resumed=True)``.
Past the restart budget the instance escalates: every session is closed and the next
``start_session`` starts a fresh tree.

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import msgspec
import pykka

from paddock.actors import Interrupt, JsonRpcConnection, LineTap, Open, ProcessSpec, Respond, SendTurn, SessionRecord, SessionTable
from paddock.contract import (
    Capabilities,
    DriverError,
    ModelInfo,
    PaddockError,
    RuntimeErrorEvent,
    SendTurnInput,
    Session,
    StartSessionInput,
    ThreadSnapshot,
    TurnStartResult,
)
from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext, ChildSpec, Scope, Supervisor, map_exceptions

from . import _wire as w
from ._capabilities import CODEX_CAPABILITIES
from ._config import DEFAULT_APPROVAL_POLICIES, DEFAULT_SANDBOX_MODES, CodexConfig
from ._home import API_KEY_VAR, build_config, prepare_home, write_config
from ._server import Router, ServerLink
from ._session import CodexSessionActor, Compact, Fork, RespondInput, Rollback, Steer
from ._settings import SessionSettings

__all__ = ["CodexAdapter", "codex_home_of"]

log = logging.getLogger(__name__)

_init_decoder = msgspec.json.Decoder(w.InitializeResult)
_models_decoder = msgspec.json.Decoder(w.ModelListResult)
CLIENT_NAME = "paddock"


def _client_version() -> str:
    try:
        return metadata.version("agent-paddock")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


def codex_home_of(ctx: InstanceContext) -> tuple[Path, Path | None]:
    """``(CODEX_HOME, main home or None)`` of an instance: the shadow and the main home it
    shadows, or ``<instance home>/codex`` alone."""
    config: CodexConfig = ctx.config  # type: ignore[assignment]
    if config.shadow_home:
        return Path(os.path.abspath(os.path.expanduser(config.shadow_home))), Path(ctx.home)
    return Path(ctx.home) / "codex", None


class CodexAdapter(SessionTable):
    """One ``codex`` instance. Build it with the registry's ``DriverSpec.create``; ``tap`` (a
    :class:`~paddock.actors.LineTap`, e.g. a transcript recorder) sees every line exchanged with
    the app-server."""

    _user_input_note = ""

    def __init__(self, ctx: InstanceContext, *, tap: LineTap | None = None) -> None:
        super().__init__("codex", ctx.instance_id)
        config: CodexConfig = ctx.config  # type: ignore[assignment]
        self._ctx = ctx
        self._config = config
        self._tap = tap
        self._settings = SessionSettings(
            driver="codex",
            instance_id=ctx.instance_id,
            approval_policies={**DEFAULT_APPROVAL_POLICIES, **config.approval_policies},
            sandbox_modes={**DEFAULT_SANDBOX_MODES, **config.sandbox_modes},
            model=ctx.access.model,
            request_timeout=config.request_timeout,
            interrupt_timeout=config.interrupt_timeout,
        )
        self._lock = threading.RLock()
        self._start_lock = threading.Lock()
        self._handshake_timeout = config.start_timeout
        self._scope: Scope | None = None
        self._link: ServerLink | None = None
        self._generation = 0
        self._sessions_ref: pykka.ActorRef[Any] | None = None
        self._closed = False
        self._models: tuple[ModelInfo, ...] | None = None
        self.codex_home, self._main_home = codex_home_of(ctx)

    def capabilities(self) -> Capabilities:
        return CODEX_CAPABILITIES

    def models(self) -> tuple[ModelInfo, ...] | None:
        """The model catalog (``model/list``) of the running app-server, ``None`` before it ran."""
        return self._models

    @property
    def link(self) -> ServerLink | None:
        """The current app-server incarnation (``None`` before the first session or while it
        restarts)."""
        return self._link

    # home, config, process -----------------------------------------------------------------------

    def _prepare_home(self) -> dict[str, str]:
        """Create ``CODEX_HOME`` (or the shadow), write ``config.toml``, and return the child env.
        Raises :class:`ConfigError` for a refused shadow home. Thread: the caller's."""
        home = prepare_home(self.codex_home, self._main_home)
        access = self._ctx.access
        data = build_config(
            endpoint=access.base_url("/v1"), has_key=access.api_key is not None, model=access.model,
            sqlite_home=str(self._main_home) if self._main_home is not None else None, overrides=self._config.config,
        )
        write_config(home, data)
        env = dict(self._ctx.env)
        env["CODEX_HOME"] = str(home)
        if self._main_home is not None and env.get("HOME") == str(self._ctx.home):
            # With a shadow home the instance's `home` is the MAIN Codex home, shared with other
            # instances: give the process (and the commands it runs) a private HOME instead.
            private = home / ".home"
            for key, sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                             ("XDG_STATE_HOME", ".local/state"), ("XDG_CACHE_HOME", ".cache"), ("TMPDIR", "tmp")):
                path = private / sub if sub else private
                path.mkdir(parents=True, exist_ok=True, mode=0o700)
                env[key] = str(path)
        if access.api_key is not None:
            env[API_KEY_VAR] = access.api_key
        env.setdefault("RUST_LOG", "warn")
        return env

    def _command(self) -> list[str]:
        found = find_binary(self._config.binary, peer="codex", env=self._ctx.env)
        if not isinstance(found, BinaryLocation):
            raise DriverError(self.driver, self.instance_id, f"cannot start the app-server: {found}")
        return [*found.argv, *self._config.args, "app-server"]

    def _ensure_started(self, timeout: float | None) -> None:
        # Not under self._lock: the supervisor thread takes it while starting the children.
        with self._start_lock:
            if self._closed:
                raise DriverError(self.driver, self.instance_id, "the instance is closed")
            scope = self._scope
            if scope is not None and scope.exit_reason is None:
                return
            env = self._prepare_home()
            argv = self._command()
            self._spec = ProcessSpec(
                argv=tuple(argv), env=env, cwd=str(self.codex_home), name=f"{self.instance_id}:codex-app-server",
                owner=self.instance_id, lease_dir=self._ctx.state_dir, shutdown_timeout=self._config.shutdown_timeout,
                # The app-server writes (and flushes) one line per delta: read them in batches.
                read_coalesce=self._config.read_coalesce,
            )
            limit = self._config.start_timeout if timeout is None else min(timeout, self._config.start_timeout)
            self._handshake_timeout = limit
            scope = Scope(
                [
                    ChildSpec(id="server", start=self._start_server, restart="permanent", shutdown=5.0,
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
                raise DriverError(self.driver, self.instance_id, f"could not start the app-server: {exc}") from None
            finally:
                self._handshake_timeout = self._config.start_timeout
            self._scope = scope

    def _start_server(self, cctx: ChildContext) -> pykka.ActorRef[Any]:
        """ChildSpec factory (root supervisor thread): spawn ``codex app-server``, ``initialize``,
        ``initialized``, read ``model/list``; the child counts as started only after that."""
        holder: dict[str, JsonRpcConnection] = {}
        router = Router(reject=lambda req: holder["conn"].reject(req))
        deadline = time.monotonic() + self._handshake_timeout
        conn = JsonRpcConnection.open(
            self._spec, handler=router.on_batch, on_warning=self._on_warning, tap=self._tap,
            jsonrpc_field=False,  # the app-server omits "jsonrpc" (codex-app-server.md section 1)
            context=cctx, timeout=self._handshake_timeout,
        )
        holder["conn"] = conn

        def left() -> float:
            return max(0.1, deadline - time.monotonic())

        try:
            params = w.InitializeParams(
                clientInfo=w.ClientInfo(name=CLIENT_NAME, title="Paddock", version=_client_version()),
                capabilities=w.InitializeCapabilities(experimentalApi=self._config.experimental_api),
            )
            init = _init_decoder.decode(conn.request("initialize", params, timeout=left()).result(left() + 1.0))
            conn.notify("initialized")
            models = _models_decoder.decode(conn.request("model/list", {}, timeout=left()).result(left() + 1.0))
        except BaseException as exc:
            conn.close(timeout=2.0)
            if isinstance(exc, PaddockError):
                raise DriverError(self.driver, self.instance_id, f"app-server handshake failed: {exc}") from None
            if isinstance(exc, (TimeoutError, msgspec.DecodeError)):
                raise DriverError(self.driver, self.instance_id, f"app-server handshake failed: {exc!r}") from None
            raise
        with self._lock:
            self._generation += 1
            link = ServerLink(conn, router, init, self._generation, self._where)
            link.models = models.data
            self._link = link
            self._models = tuple(
                ModelInfo(id=m.id, display_name=m.displayName, description=m.description, is_default=m.isDefault,
                          hidden=m.hidden)
                for m in models.data
            )
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
            return CodexSessionActor.start(record, emitter, settings, self._get_link, context=cctx)

        return ChildSpec(id=record.session.thread_id, start=start, restart="transient", shutdown=5.0)

    def _get_link(self) -> ServerLink | None:
        return self._link

    def _on_warning(self, code: str, message: str, detail: dict[str, Any]) -> None:
        # Reader thread: a transport problem (malformed or over-long line) of the shared process,
        # which names no thread: published as the instance's runtime.warning, not only logged.
        log.warning("codex instance %s: %s", self.instance_id, message)
        self._ctx.hub.instance_warning(self.driver, self.instance_id, "transport." + code.rsplit(".", 1)[-1],
                                       message, detail)

    def _on_escalate(self, error: BaseException) -> None:
        # Root supervisor thread: the restart budget is spent; every session is over.
        log.error("codex instance %s gave up: %s", self.instance_id, error)
        with self._lock:
            for record in self._records.values():
                record.closed = True
                self._stopped[record.session.thread_id] = record.thread
                record.extra["emitter"].emit([
                    RuntimeErrorEvent(
                        driver=self.driver, instance_id=self.instance_id, thread_id=record.session.thread_id,
                        code="codex.restart_limit",
                        message=f"the app-server failed too often ({error}); the session is closed",
                    )
                ])
            self._records.clear()
            self._link = None

    # ProviderAdapter -----------------------------------------------------------------------------

    def _ask_session(self, record: SessionRecord, message: object, operation: str, timeout: float | None) -> Any:
        # A session actor restarts with the app-server: wait for the next incarnation.
        limit = timeout if timeout is not None else self._config.request_timeout + 5.0
        return self._ask(record, message, operation, limit, await_restart=True)

    def start_session(self, input: StartSessionInput, *, timeout: float | None = None) -> Session:
        """Start (or resume, from ``input.resume_cursor``) the thread's Codex thread. Returns the
        thread's live session unchanged when it already has one on this instance. Raises
        :class:`ConfigError` when the shadow home is refused."""
        thread_id = input.thread_id
        self.check_start_input(input)
        with self._lock:
            existing = self._records.get(thread_id)
            if existing is not None and not existing.closed:
                return existing.session
            if existing is not None:
                self._records.pop(thread_id, None)
        if existing is not None:
            self._terminate_child(thread_id, 5.0)
        self._ensure_started(timeout)
        now = time.time()
        record = SessionRecord(
            Session(
                thread_id=thread_id, instance_id=self.instance_id, driver=self.driver, status="starting",
                cwd=input.cwd, runtime_mode=input.runtime_mode, interaction_mode=input.interaction_mode,
                model=input.model or self._ctx.access.model, resume_cursor=input.resume_cursor, created_at=now,
                updated_at=now,
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
        """``turn/start``; returns once Codex accepted the turn (``turn.started`` is emitted
        first). After an app-server restart the thread is resumed first."""
        self.check_turn_input(input)
        return self._ask_session(self._record(input.thread_id), SendTurn(input), "send_turn", timeout)

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        """``turn/interrupt``: returns once it is sent; the turn then ends ``interrupted``. A no-op
        when no turn (or not ``turn_id``) is running."""
        self._ask_session(self._record(thread_id), Interrupt(turn_id), "interrupt_turn", timeout)

    def steer_turn(self, thread_id: str, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        """``turn/steer``: add ``input`` to the running turn; returns that turn's id."""
        self.check_turn_input(input)
        return self._ask_session(self._record(thread_id), Steer(input), "steer_turn", timeout)

    def respond_to_request(self, thread_id: str, request_id: str, decision: str, *, timeout: float | None = None) -> None:
        """Answer a ``request.opened``: the decision goes back verbatim (``accept``,
        ``acceptForSession``, ``decline``, ``cancel``; the legacy requests' equivalents)."""
        self._ask_session(self._record(thread_id), Respond(request_id, decision), "respond_to_request", timeout)

    def respond_to_user_input(self, thread_id: str, request_id: str, answers: dict[str, Any], *,
                              timeout: float | None = None) -> None:
        """Answer a ``user-input.requested`` (question id -> answer text or list of texts)."""
        self._ask_session(self._record(thread_id), RespondInput(request_id, answers), "respond_to_user_input", timeout)

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        """``thread/revert`` before the ``num_turns``-th last turn: the persisted history (what
        the model sees next) loses those turns. Files the turns changed stay changed."""
        return self._ask_session(self._record(thread_id), Rollback(num_turns), "rollback_thread", timeout)

    def fork_thread(self, thread_id: str, new_thread_id: str, *, timeout: float | None = None) -> Session:
        """``thread/fork``: a new host thread ``new_thread_id`` continuing a copy of
        ``thread_id``'s history (same cwd and modes), started as its own session. Driver-level
        (``sessions.fork``); the Runtime has no fork operation yet."""
        record = self._record(thread_id)
        cursor = self._ask_session(record, Fork(), "fork_thread", timeout)
        base: StartSessionInput = record.extra["input"]
        return self.start_session(
            StartSessionInput(thread_id=new_thread_id, cwd=base.cwd, runtime_mode=base.runtime_mode,
                              interaction_mode=base.interaction_mode, model=base.model, resume_cursor=cursor,
                              workspace_roots=base.workspace_roots),
            timeout=timeout,
        )

    def compact_thread(self, thread_id: str, *, timeout: float | None = None) -> TurnStartResult:
        """``thread/compact/start``: Codex summarizes the thread's history to free context
        (``context.compaction``). It runs as a turn (``turn.started`` ... ``turn.completed``, no
        input text) whose id is returned. Driver-level: the Runtime has no compaction operation
        yet."""
        return self._ask_session(self._record(thread_id), Compact(), "compact_thread", timeout)

    def _terminate_child(self, thread_id: str, timeout: float) -> None:
        ref = self._sessions_ref
        if ref is None:
            return
        try:
            ref.proxy().terminate_child(thread_id).get(timeout=timeout)
        except (pykka.ActorDeadError, pykka.Timeout):
            pass  # best effort: the session is closed either way

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
        """Stop every session, then the app-server (close stdin, SIGTERM, SIGKILL at the
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
        return f"<CodexAdapter codex/{self.instance_id}>"

