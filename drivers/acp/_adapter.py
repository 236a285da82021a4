"""AcpAdapter: one ACP driver instance on the shared-process model (one agent process serves
every session; ``paddock.actors.SharedProcessAdapter``, docs/architecture.md).

The agent's handshake before it counts as started: ``initialize``, then ``authenticate`` when
the flavor names a method. When it dies, the instance supervisor restarts it and the next
``send_turn`` on each live thread reloads its native session (``session/load``) transparently;
an agent that cannot load sessions closes them (see :mod:`._session`).

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from paddock.actors import (
    JsonRpcConnection,
    JsonRpcRequest,
    Mailbox,
    ProcessSpec,
    SessionRecord,
    SharedProcessAdapter,
    TransportWarning,
)
from paddock.contract import Capabilities, DriverError, StartSessionInput
from paddock.drivers._registry import InstanceContext, client_version
from paddock.supervisors import ChildContext

from . import _wire as w
from ._agent import AgentLink, Router
from ._capabilities import base_capabilities, negotiate, with_modes
from ._config import AcpConfig
from ._flavor import AcpFlavor
from ._session import AcpSessionActor
from ._settings import AcpState, SessionSettings

__all__ = ["AcpAdapter"]

_init_decoder = msgspec.json.Decoder(w.InitializeResult)


class AcpAdapter(SharedProcessAdapter[AcpState, AgentLink]):
    """One instance of an ACP flavor. Build it with the flavor's ``DriverSpec.create``."""

    _refusals = {
        "turns.steer": "ACP has no way to add input to a running turn; interrupt it and send a new one",
        "threads.rollback": "ACP has no method to drop turns from a session",
        "approvals.user_input": "ACP agents ask no structured user input",
    }
    _process_child = "agent"
    _process_noun = "the agent"
    _failed_noun = "the agent process"
    _label = "ACP"
    _protocol = "ACP"
    _error_prefix = "acp"

    def __init__(self, ctx: InstanceContext, flavor: AcpFlavor) -> None:
        config = ctx.config
        assert isinstance(config, AcpConfig)
        super().__init__(flavor.kind, ctx.instance_id, hub=ctx.hub, request_timeout=config.request_timeout,
                         start_timeout=config.start_timeout, idle_timeout=config.idle_timeout)
        self._ctx = ctx
        self._flavor = flavor
        client_fs = flavor.client_fs if config.client_fs is None else config.client_fs
        client_terminal = flavor.client_terminal if config.client_terminal is None else config.client_terminal
        self._settings = SessionSettings(
            driver=flavor.kind, instance_id=ctx.instance_id, cursor_driver=flavor.kind, auto_allow=flavor.auto_allow,
            native_modes={**flavor.native_modes, **config.native_modes},
            cancel_guard=flavor.cancel_guard if config.cancel_guard is None else config.cancel_guard,
            cancel_timeout=config.cancel_timeout, request_timeout=config.request_timeout, client_fs=client_fs,
            client_terminal=client_terminal, terminal_output_limit=config.terminal_output_limit, env=dict(ctx.env),
            cancel_retry=flavor.cancel_retry, failed_text=flavor.failed_text, resume_hint=flavor.resume_hint,
            cancel_meta=dict(flavor.cancel_meta), set_model=flavor.set_model, home=ctx.home,
            mcp_stdio=flavor.mcp_stdio, title_is_command=flavor.title_is_command,
            unlisted_modes=flavor.unlisted_modes, confinement=ctx.confinement,
        )
        self._base_caps = self._override(base_capabilities(client_fs=client_fs, client_terminal=client_terminal))
        self._caps = self._base_caps

    def _override(self, caps: Capabilities) -> Capabilities:
        hook = self._flavor.capability_overrides
        return hook(caps) if hook is not None else caps

    def capabilities(self) -> Capabilities:
        """ACP defaults, then (once the agent answered ``initialize``) the negotiated flags, then
        the flavor's overrides."""
        return self._caps

    # the shared-process model's hooks ------------------------------------------------------------

    def _process_spec(self) -> ProcessSpec:
        try:
            argv = self._flavor.argv(self._ctx)
        except LookupError as exc:
            raise DriverError(self.driver, self.instance_id, f"cannot start the agent: {exc}") from None
        return ProcessSpec(
            argv=tuple(argv), env=self._flavor.child_env(self._ctx), cwd=self._ctx.home,
            name=f"{self.instance_id}:{os.path.basename(argv[0])}", owner=self.instance_id,
            lease_dir=self._ctx.state_dir, shutdown_timeout=5.0, confinement=self._ctx.confinement,
        )

    def _router(self, reject: Callable[[JsonRpcRequest], None]) -> Router:
        return Router(reject)

    def _handshake(self, conn: JsonRpcConnection, left: Callable[[], float]) -> w.InitializeResult:
        s = self._settings
        raw = conn.request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": s.client_fs, "writeTextFile": s.client_fs}, "terminal": s.client_terminal,
            },
            "clientInfo": {"name": "paddock", "version": client_version()},
        }, timeout=left()).result(left() + 1.0)
        init = _init_decoder.decode(raw)
        method = self._flavor.auth_for(self._ctx)
        if method:
            conn.request("authenticate", {"methodId": method}, timeout=left()).result(left() + 1.0)
        return init

    def _connected(self, link: AgentLink) -> None:
        self._caps = self._override(negotiate(self._base_caps, link.init))

    def _initial_state(self, input: StartSessionInput) -> AcpState:
        return AcpState()

    def _start_session_actor(self, record: SessionRecord[AcpState], cctx: ChildContext) -> pykka.ActorRef[Any]:
        return AcpSessionActor.start(record, self._settings, self._get_link, report_modes=self._report_modes,
                                     context=cctx)

    def _report_modes(self, mode_ids: list[str]) -> None:
        # Inside a session actor (a dispatcher worker): the agent's modes decide planning.plan_mode.
        with self._lock:
            self._caps = with_modes(self._caps, mode_ids, self._settings.native_modes.get("plan"))

    def _on_warning(self, sessions: list[Mailbox], code: str, message: str, detail: dict[str, Any]) -> None:
        # Reader thread: tell every session of this process. Before the first session exists
        # (garbage or an oversized line before `initialize`) it is the instance's own warning,
        # published with an empty thread_id: nothing is dropped silently.
        notice = TransportWarning(code, message, detail)
        for ref in sessions:
            ref.tell(notice)
        if not sessions:
            self._hub.instance_warning(self.driver, self.instance_id, "transport." + code.rsplit(".", 1)[-1],
                                       message, detail)
