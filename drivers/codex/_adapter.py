"""CodexAdapter: one ``codex`` instance (the ProviderAdapter the runtime talks to).

Supervision tree (docs/architecture.md), built lazily by the first ``start_session``::

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
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import msgspec
import pykka

from paddock.actors import Interrupt, JsonRpcConnection, LineTap, ProcessSpec, Respond, SendTurn, SessionRecord, SharedProcessAdapter
from paddock.contract import (
    Capabilities,
    DriverError,
    ModelInfo,
    PaddockError,
    SendTurnInput,
    Session,
    StartSessionInput,
    ThreadSnapshot,
    TurnStartResult,
)
from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext

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


class CodexAdapter(SharedProcessAdapter[ServerLink]):
    """One ``codex`` instance. Build it with the registry's ``DriverSpec.create``; ``tap`` (a
    :class:`~paddock.actors.LineTap`, e.g. a transcript recorder) sees every line exchanged with
    the app-server."""

    _user_input_note = ""
    _process_child = "server"
    _process_noun = "the app-server"
    _failed_noun = "the app-server"
    _log_name = "codex"
    _error_prefix = "codex"

    def __init__(self, ctx: InstanceContext, *, tap: LineTap | None = None) -> None:
        config: CodexConfig = ctx.config  # type: ignore[assignment]
        super().__init__("codex", ctx.instance_id, hub=ctx.hub, request_timeout=config.request_timeout,
                         start_timeout=config.start_timeout)
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

    def _prepare_start(self) -> None:
        # Caller's thread, under the start lock: CODEX_HOME and the process spec of the new tree.
        env = self._prepare_home()
        argv = self._command()
        self._spec = ProcessSpec(
            argv=tuple(argv), env=env, cwd=str(self.codex_home), name=f"{self.instance_id}:codex-app-server",
            owner=self.instance_id, lease_dir=self._ctx.state_dir, shutdown_timeout=self._config.shutdown_timeout,
            # The app-server writes (and flushes) one line per delta: read them in batches.
            read_coalesce=self._config.read_coalesce,
        )

    def _start_process(self, cctx: ChildContext) -> pykka.ActorRef[Any]:
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

    def _start_session_actor(self, record: SessionRecord, emitter: Any, cctx: ChildContext) -> pykka.ActorRef[Any]:
        return CodexSessionActor.start(record, emitter, self._settings, self._get_link, context=cctx)

    def _session_model(self, input: StartSessionInput) -> str | None:
        return input.model or self._ctx.access.model

    def _on_warning(self, code: str, message: str, detail: dict[str, Any]) -> None:
        # Reader thread: a transport problem (malformed or over-long line) of the shared process,
        # which names no thread: published as the instance's runtime.warning, not only logged.
        log.warning("codex instance %s: %s", self.instance_id, message)
        self._ctx.hub.instance_warning(self.driver, self.instance_id, "transport." + code.rsplit(".", 1)[-1],
                                       message, detail)

    # ProviderAdapter -----------------------------------------------------------------------------

    def start_session(self, input: StartSessionInput, *, timeout: float | None = None) -> Session:
        """Start (or resume, from ``input.resume_cursor``) the thread's Codex thread. Returns the
        thread's live session unchanged when it already has one on this instance. Raises
        :class:`ConfigError` when the shadow home is refused."""
        return super().start_session(input, timeout=timeout)

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

    def __repr__(self) -> str:
        return f"<CodexAdapter codex/{self.instance_id}>"

