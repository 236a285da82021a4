"""CodexAdapter: one ``codex`` instance on the shared-process model (the app-server serves every
thread; ``paddock.actors.SharedProcessAdapter``, docs/architecture.md).

The app-server's handshake before it counts as started: ``initialize``, ``initialized``,
``model/list``. When it dies, the instance supervisor restarts it and each live thread resumes on
the new process at its next turn (``thread/resume``; see :mod:`._session`).

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from paddock.actors import JsonRpcConnection, JsonRpcRequest, LineTap, ProcessSpec, SessionRecord, SharedProcessAdapter
from paddock.contract import Capabilities, ModelInfo, StartSessionInput
from paddock.drivers._registry import InstanceContext, client_version
from paddock.supervisors import ChildContext

from . import _wire as w
from ._capabilities import CODEX_CAPABILITIES
from ._config import DEFAULT_APPROVAL_POLICIES, DEFAULT_SANDBOX_MODES, CodexConfig
from ._process import codex_home_of, process_spec
from ._server import Router, ServerLink
from ._session import CodexSessionActor
from ._settings import CodexState, SessionSettings

__all__ = ["CodexAdapter", "codex_home_of"]

_init_decoder = msgspec.json.Decoder(w.InitializeResult)
_models_decoder = msgspec.json.Decoder(w.ModelListResult)
CLIENT_NAME = "paddock"


class CodexAdapter(SharedProcessAdapter[CodexState, ServerLink]):
    """One ``codex`` instance. Build it with the registry's ``DriverSpec.create``; ``tap`` (a
    :class:`~paddock.actors.LineTap`, e.g. a transcript recorder) sees every line exchanged with
    the app-server."""

    _process_child = "server"
    _process_noun = "the app-server"
    _failed_noun = "the app-server"
    _label = "app-server"
    _protocol = "Codex"
    _error_prefix = "codex"
    _jsonrpc_field = False  # the app-server omits "jsonrpc" (codex-app-server.md section 1)

    def __init__(self, ctx: InstanceContext, *, tap: LineTap | None = None) -> None:
        config = ctx.config
        assert isinstance(config, CodexConfig)
        super().__init__("codex", ctx.instance_id, hub=ctx.hub, request_timeout=config.request_timeout,
                         start_timeout=config.start_timeout, idle_timeout=config.idle_timeout, tap=tap)
        self._ctx = ctx
        self._config = config
        self._settings = SessionSettings(
            driver="codex", instance_id=ctx.instance_id,
            approval_policies={**DEFAULT_APPROVAL_POLICIES, **config.approval_policies},
            sandbox_modes={**DEFAULT_SANDBOX_MODES, **config.sandbox_modes}, model=ctx.access.model,
            request_timeout=config.request_timeout, interrupt_timeout=config.interrupt_timeout,
        )
        self._spec: ProcessSpec | None = None
        self.codex_home, _ = codex_home_of(ctx)

    def capabilities(self) -> Capabilities:
        return CODEX_CAPABILITIES

    def list_models(self, *, timeout: float) -> tuple[ModelInfo, ...] | None:
        """The app-server's ``model/list`` (asked in its handshake): starts it when not running."""
        self._ensure_started(timeout)
        return self.models()

    # the shared-process model's hooks ------------------------------------------------------------

    def _prepare_start(self) -> None:
        # Caller's thread, under the start lock: CODEX_HOME (ConfigError for a refused shadow
        # home reaches the caller) and the process spec of the new tree.
        self._spec = process_spec(self._ctx)

    def _process_spec(self) -> ProcessSpec:
        assert self._spec is not None  # _prepare_start ran
        return self._spec

    def _router(self, reject: Callable[[JsonRpcRequest], None]) -> Router:
        return Router(reject=reject)

    def _handshake(self, conn: JsonRpcConnection, left: Callable[[], float]) -> w.InitializeResult:
        params = w.InitializeParams(
            clientInfo=w.ClientInfo(name=CLIENT_NAME, title="Paddock", version=client_version()),
            capabilities=w.InitializeCapabilities(experimentalApi=self._config.experimental_api),
        )
        init = _init_decoder.decode(conn.request("initialize", params, timeout=left()).result(left() + 1.0))
        conn.notify("initialized")
        models = _models_decoder.decode(conn.request("model/list", {}, timeout=left()).result(left() + 1.0))
        self.record_models([
            ModelInfo(id=m.id, display_name=m.displayName, description=m.description, is_default=m.isDefault,
                      hidden=m.hidden, reasoning_efforts=tuple(e.reasoningEffort for e in m.supportedReasoningEfforts),
                      input_kinds=tuple(k for k in ("text", "image") if k in m.inputModalities))  # type: ignore[misc]
            for m in models.data
        ])
        return init

    def _initial_state(self, input: StartSessionInput) -> CodexState:
        return CodexState()

    def _session_model(self, input: StartSessionInput) -> str | None:
        return input.model or self._ctx.access.model

    def _start_session_actor(self, record: SessionRecord[CodexState], cctx: ChildContext) -> pykka.ActorRef[Any]:
        return CodexSessionActor.start(record, self._settings, self._get_link, context=cctx)
