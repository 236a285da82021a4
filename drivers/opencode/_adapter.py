"""OpencodeAdapter: one ``opencode`` driver instance on the server model (one server per
instance, spawned or external; ``paddock.actors.ServerAdapter``, docs/architecture.md).

When a spawned server dies, each session fails its running turn, expires its open requests and
reports ``session.state.changed`` (starting); the supervisor restarts the server (same HOME/XDG
dirs, so the same sessions) and the sessions report ``ready`` again. In external mode there is
no process: the event stream reconnects with backoff and a turn that ended meanwhile is read
back from the server.

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pykka

from paddock.actors import LineTap, ServerAdapter, SessionRecord, http_available
from paddock.contract import Capabilities, DriverError, ModelInfo, PaddockError, StartSessionInput
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext, ChildSpec

from ._models import catalog_of
from ._capabilities import OPENCODE_CAPABILITIES
from ._config import OpencodeConfig
from ._messages import NativeMessages, OpencodeState, SessionSettings
from ._server import ServerLink, spawn_command
from ._session import OpencodeSessionActor

__all__ = ["DRIVER", "OpencodeAdapter"]

DRIVER = "opencode"


class OpencodeAdapter(ServerAdapter[OpencodeState, ServerLink]):
    """One ``opencode`` instance. Build it with the registry's ``DriverSpec.create``; ``tap``
    (tests, ``paddock record``) sees every HTTP exchange and SSE event."""

    _refusals = {"threads.rollback": "the opencode driver does not wire /revert to rollback"}
    _server_name = "OpenCode"

    def __init__(self, ctx: InstanceContext, *, tap: LineTap | None = None) -> None:
        config = ctx.config
        assert isinstance(config, OpencodeConfig)
        super().__init__(DRIVER, ctx.instance_id, hub=ctx.hub, request_timeout=config.request_timeout,
                         start_timeout=config.start_timeout, idle_timeout=config.idle_timeout)
        self._ctx = ctx
        self._config = config
        self._tap = tap
        self._settings = SessionSettings(
            driver=DRIVER, instance_id=ctx.instance_id, request_timeout=config.request_timeout,
            interrupt_timeout=config.interrupt_timeout, endpoint=ctx.access.endpoint is not None, agent=config.agent,
        )

    def capabilities(self) -> Capabilities:
        return OPENCODE_CAPABILITIES

    # the server model's hooks --------------------------------------------------------------------

    def _open_server(self) -> tuple[ServerLink, list[ChildSpec]]:
        missing = http_available()
        if missing is not None:
            raise DriverError(DRIVER, self.instance_id, missing)
        config = self._config
        # Spawned: a fresh password per instance run.
        password = config.password or (None if config.server_url is not None else secrets.token_urlsafe(24))
        spawn = None
        if config.server_url is None:
            assert password is not None
            spawn = spawn_command(self._ctx, config, password)
        link = ServerLink(
            driver=DRIVER, instance_id=self.instance_id, password=password, request_timeout=config.request_timeout,
            start_timeout=config.start_timeout, shutdown_timeout=config.shutdown_timeout, url=config.server_url,
            spawn=spawn, lease_dir=self._ctx.state_dir if spawn is not None else None, tap=self._tap,
            instance_warning=self._instance_warning, confinement=self._ctx.confinement,
        )
        if spawn is not None:
            return link, [link.child_spec()]
        try:
            link.connect_external()
        except PaddockError as exc:
            link.close()
            raise DriverError(DRIVER, self.instance_id, f"cannot reach the OpenCode server at "
                              f"{config.server_url}: {exc}") from None
        return link, []

    def list_models(self, *, timeout: float) -> tuple[ModelInfo, ...] | None:
        """``GET /config/providers`` on the instance's server (started when not running)."""
        _, link = self._ensure_link(time.monotonic() + timeout)
        self.record_models(catalog_of(link.require().json("GET", "/config/providers", timeout=timeout)))
        return self.models()

    def _session_model(self, input: StartSessionInput) -> str | None:
        return input.model or self._ctx.access.model

    def _initial_state(self, input: StartSessionInput) -> OpencodeState:
        return OpencodeState()

    def _start_session_actor(self, record: SessionRecord[OpencodeState], link: ServerLink,
                             cctx: ChildContext) -> pykka.ActorRef[Any]:
        return OpencodeSessionActor.start(record, link, self._settings, context=cctx)

    def _instance_warning(self, code: str, message: str, detail: dict[str, Any]) -> None:
        # Stream thread: a transport warning before any session is routed is the instance's.
        self._hub.instance_warning(DRIVER, self.instance_id, code, message, detail)

    # driver-level operations ---------------------------------------------------------------------

    def native_messages(self, thread_id: str, *, limit: int | None = None,
                        timeout: float | None = None) -> list[dict[str, Any]]:
        """The thread's OpenCode session as the server keeps it (``{id, role, text}``, oldest
        first): a resumed session lists its earlier messages here."""
        messages: list[dict[str, Any]] = self._forward(thread_id, NativeMessages(limit), "native_messages", timeout)
        return messages

    @property
    def server_url(self) -> str | None:
        """Where the instance's server listens (``None`` before the first session)."""
        link = self._link
        return link.url if link is not None else None

    @property
    def server_pid(self) -> int | None:
        """The spawned server's pid (``None`` in external mode or before the first session)."""
        link = self._link
        handle = link.handle if link is not None else None
        return handle.pid if handle is not None else None
