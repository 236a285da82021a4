"""AcpAdapter: one ACP driver instance (the ProviderAdapter the runtime talks to).

Supervision tree (docs/architecture.md), built lazily by the first ``start_session``::

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
import time
from importlib import metadata
from typing import Any

import msgspec
import pykka

from paddock.actors import (
    Interrupt,
    JsonRpcConnection,
    ProcessSpec,
    Respond,
    SendTurn,
    SessionRecord,
    SharedProcessAdapter,
    TransportWarning,
)
from paddock.contract import (
    Capabilities,
    CapabilityUnsupportedError,
    DriverError,
    PaddockError,
    SendTurnInput,
    ThreadSnapshot,
    TurnStartResult,
)
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext

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


class AcpAdapter(SharedProcessAdapter[AgentLink]):
    """One instance of an ACP flavor. Build it with the flavor's ``DriverSpec.create``."""

    _user_input_note = " (ACP agents ask none)"
    _process_child = "agent"
    _process_noun = "the agent"
    _failed_noun = "the agent process"
    _log_name = "ACP"
    _error_prefix = "acp"

    def __init__(self, ctx: InstanceContext, flavor: AcpFlavor) -> None:
        config: AcpConfig = ctx.config  # type: ignore[assignment]
        super().__init__(flavor.kind, ctx.instance_id, hub=ctx.hub, request_timeout=config.request_timeout,
                         start_timeout=config.start_timeout)
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

    def _start_process(self, cctx: ChildContext) -> pykka.ActorRef[Any]:
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

    def _start_session_actor(self, record: SessionRecord, emitter: Any, cctx: ChildContext) -> pykka.ActorRef[Any]:
        return AcpSessionActor.start(
            record, emitter, self._settings, self._get_link, report_modes=self._report_modes, context=cctx
        )

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

    # ProviderAdapter -----------------------------------------------------------------------------

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

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        raise CapabilityUnsupportedError("threads.rollback", "ACP has no method to drop turns from a session",
                                         **self._where, thread_id=thread_id)

    def __repr__(self) -> str:
        return f"<AcpAdapter {self.driver}/{self.instance_id}>"
