"""OpencodeAdapter: one ``opencode`` driver instance (the ProviderAdapter the runtime talks to).

Supervision tree (docs/architecture.md), built by the first ``start_session``::

    InstanceSupervisor[<instance>]            one_for_one (Scope)
    ├── server: ProcessActor[opencode serve]  permanent (spawned mode only): restarted after a crash
    ├── session:<thread>: OpencodeSessionActor  temporary, one per live session
    └── ...

One server per instance carries every session. When the server process dies, each session fails
its running turn, expires its open requests and reports ``session.state.changed`` (starting);
the supervisor restarts the server (same HOME/XDG dirs, so the same sessions) and the sessions
report ``ready`` again. In external mode there is no process: the event stream reconnects with
backoff and a turn that ended meanwhile is read back from the server.

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from typing import Any

import msgspec

from paddock.actors import Interrupt, LineTap, Open, Respond, SendTurn, SessionRecord, SessionTable, http_available
from paddock.contract import (
    Capabilities,
    CapabilityUnsupportedError,
    DriverError,
    OperationTimeout,
    PaddockError,
    ProcessError,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionNotFoundError,
    StartSessionInput,
    ThreadSnapshot,
    TurnStartResult,
)
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildSpec, Scope

from ._capabilities import OPENCODE_CAPABILITIES
from ._config import API_KEY_VAR, QUIET_ENV, OpencodeConfig, server_config
from ._cursor import cursor_for
from ._messages import AnswerUserInput, Compact, Fork, NativeMessages, SessionSettings
from ._server import ServerLink
from ._session import OpencodeSessionActor

__all__ = ["DRIVER", "OpencodeAdapter"]

DRIVER = "opencode"


class OpencodeAdapter(SessionTable):
    """One ``opencode`` instance. Build it with the registry's ``DriverSpec.create``; ``tap``
    (tests, ``paddock record``) sees every HTTP exchange and SSE event."""

    _user_input_note = ""

    def __init__(self, ctx: InstanceContext, *, tap: LineTap | None = None) -> None:
        SessionTable.__init__(self, DRIVER, ctx.instance_id)
        self._ctx = ctx
        assert isinstance(ctx.config, OpencodeConfig)
        self._config: OpencodeConfig = ctx.config
        self._tap = tap
        self._up_lock = threading.Lock()
        self._scope: Scope | None = None
        self._link: ServerLink | None = None
        self._closed = False
        self._settings = SessionSettings(
            driver=DRIVER, instance_id=ctx.instance_id, request_timeout=self._config.request_timeout,
            interrupt_timeout=self._config.interrupt_timeout, endpoint=ctx.access.endpoint is not None,
            agent=self._config.agent,
        )

    def capabilities(self) -> Capabilities:
        return OPENCODE_CAPABILITIES

    # the server ----------------------------------------------------------------------------------

    def _password(self) -> str | None:
        if self._config.password:
            return self._config.password
        if self._config.server_url is not None:
            return None
        return secrets.token_urlsafe(24)  # spawned: a fresh password per instance run

    def _spawn_env(self, password: str) -> tuple[list[str], dict[str, str], str]:
        from paddock.drivers import find_binary

        found = find_binary(self._config.binary, peer="opencode", env=self._ctx.env)
        if isinstance(found, str):
            raise DriverError(DRIVER, self.instance_id, f"cannot start OpenCode: {found}")
        home = self._ctx.home
        env = dict(self._ctx.env)
        for key, value in QUIET_ENV.items():
            env.setdefault(key, value)
        access = self._ctx.access
        config_dir = os.path.join(home, "opencode-paddock")
        os.makedirs(config_dir, mode=0o700, exist_ok=True)
        path = os.path.join(config_dir, "opencode.json")
        config = server_config(access)
        if access.endpoint is None and "OPENCODE_CONFIG" in env:
            path = env["OPENCODE_CONFIG"]  # the instance env names its own config: keep it
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(config, f, indent=2)
            env["OPENCODE_CONFIG"] = path
        if access.api_key:
            env[API_KEY_VAR] = access.api_key
        env["OPENCODE_SERVER_PASSWORD"] = password
        env.pop("OPENCODE_SERVER_USERNAME", None)  # Basic auth as `opencode`, the server's default
        workdir = os.path.join(home, "opencode-cwd")
        os.makedirs(workdir, mode=0o700, exist_ok=True)
        return [*found.argv, *self._config.args], env, workdir

    def _ensure_link(self, deadline: float) -> tuple[Scope, ServerLink]:
        """Start the instance's scope and its server (spawned) or connect to it (external); the
        first caller waits, later ones get it at once. Caller's thread."""
        with self._up_lock:
            if self._closed:
                raise DriverError(DRIVER, self.instance_id, "the instance is closed")
            scope, link = self._scope, self._link
            if scope is not None and link is not None and scope.exit_reason is None:
                return scope, link
            missing = http_available()
            if missing is not None:
                raise DriverError(DRIVER, self.instance_id, missing)
            config = self._config
            password = self._password()
            if config.server_url is not None:
                link = ServerLink(driver=DRIVER, instance_id=self.instance_id, password=password,
                                  request_timeout=config.request_timeout, start_timeout=config.start_timeout,
                                  shutdown_timeout=config.shutdown_timeout, url=config.server_url, tap=self._tap,
                                  instance_warning=self._instance_warning)
                try:
                    link.connect_external()
                except PaddockError as exc:
                    link.close()
                    raise DriverError(DRIVER, self.instance_id, f"cannot reach the OpenCode server at "
                                      f"{config.server_url}: {exc}") from None
                children: list[ChildSpec] = []
            else:
                assert password is not None
                link = ServerLink(driver=DRIVER, instance_id=self.instance_id, password=password,
                                  request_timeout=config.request_timeout, start_timeout=config.start_timeout,
                                  shutdown_timeout=config.shutdown_timeout, spawn=self._spawn_env(password),
                                  lease_dir=self._ctx.state_dir, tap=self._tap,
                                  instance_warning=self._instance_warning)
                children = [link.child_spec()]
            scope = Scope(children, name=f"instance:{self.instance_id}", strategy="one_for_one", max_restarts=3,
                          period=60.0, start_timeout=max(1.0, deadline - time.monotonic()) + 10.0)
            try:
                scope.start()
            except BaseException as exc:
                link.close()
                if isinstance(exc, ProcessError):
                    raise DriverError(DRIVER, self.instance_id, f"could not start OpenCode: {exc}") from None
                raise
            self._scope, self._link = scope, link
            return scope, link

    # ProviderAdapter -----------------------------------------------------------------------------

    def start_session(self, input: StartSessionInput, *, timeout: float | None = None) -> Session:
        """Start (or, with ``input.resume_cursor``, resume) the thread's OpenCode session on the
        instance's server, starting the server first if needed. Returns the live session
        unchanged when the thread already has one."""
        self.check_start_input(input)
        with self._thread_start_lock(input.thread_id):
            return self._start_session(input, timeout)

    def _start_session(self, input: StartSessionInput, timeout: float | None) -> Session:
        thread_id = input.thread_id
        limit = timeout if timeout is not None else self._config.start_timeout + self._config.request_timeout
        deadline = time.monotonic() + limit
        live, _ = self._claim(thread_id)
        if live is not None:
            return live
        scope, link = self._ensure_link(deadline)
        model = input.model or self._ctx.access.model
        now = time.time()
        record = SessionRecord(Session(
            thread_id=thread_id, instance_id=self.instance_id, driver=DRIVER, status="starting", cwd=input.cwd,
            runtime_mode=input.runtime_mode, interaction_mode=input.interaction_mode, model=model, created_at=now,
            updated_at=now,
        ))
        record.extra["input"] = msgspec.structs.replace(input, model=model)
        emitter = self._ctx.hub.emitter(DRIVER, self.instance_id, thread_id)
        settings = self._settings

        def start(cctx: Any) -> Any:
            return OpencodeSessionActor.start(record, emitter, link, settings, context=cctx)

        with self._lock:
            self._records[thread_id] = record
            self._stopped.pop(thread_id, None)
        spec = ChildSpec(id=f"session:{thread_id}", start=start, restart="temporary", shutdown=10.0)
        try:
            try:
                scope.start_child(spec, timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                raise OperationTimeout("start_session", limit, **self._where, thread_id=thread_id) from None
            return self._ask(record, Open(), "start_session", max(0.1, deadline - time.monotonic()))
        except BaseException:
            with self._lock:
                if self._records.get(thread_id) is record:
                    self._records.pop(thread_id, None)
            record.closed = True
            self._terminate(thread_id, 5.0)
            raise

    def _terminate(self, thread_id: str, timeout: float) -> None:
        try:
            self._terminate_scope_child(self._scope, f"session:{thread_id}", timeout)
        except Exception:  # pykka.Timeout / ActorDeadError: the child is gone or going
            pass

    def _limit(self, timeout: float | None) -> float:
        return timeout if timeout is not None else self._config.request_timeout + 5.0

    def send_turn(self, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        """``prompt_async`` the turn and return once the server took it (204; ``turn.started``
        first); the turn's progress and its one ``turn.completed`` arrive as events."""
        self.check_turn_input(input)
        return self._ask(self._record(input.thread_id), SendTurn(input), "send_turn", self._limit(timeout))

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        """``POST /session/{id}/abort``; ``turn.aborted`` follows at once and the turn ends
        ``interrupted`` (at the server's idle, or after ``interrupt_timeout``)."""
        self._ask(self._record(thread_id), Interrupt(turn_id), "interrupt_turn", self._limit(timeout))

    def steer_turn(self, thread_id: str, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        raise CapabilityUnsupportedError("turns.steer", "the opencode driver cannot add input to a running turn; "
                                         "interrupt it and send a new one", **self._where, thread_id=thread_id)

    def respond_to_request(self, thread_id: str, request_id: str, decision: str, *,
                           timeout: float | None = None) -> None:
        """``POST /permission/{id}/reply``: accept -> once, accept_for_session -> always,
        decline and cancel -> reject."""
        self._ask(self._record(thread_id), Respond(request_id, decision), "respond_to_request", self._limit(timeout))

    def respond_to_user_input(self, thread_id: str, request_id: str, answers: dict[str, Any], *,
                              timeout: float | None = None) -> None:
        """``POST /question/{id}/reply``; ``answers`` maps question ids (``q0``, ...) or question
        texts to a label, a list of labels, or free text."""
        self._ask(self._record(thread_id), AnswerUserInput(request_id, answers), "respond_to_user_input",
                  self._limit(timeout))

    def native_messages(self, thread_id: str, *, limit: int | None = None,
                        timeout: float | None = None) -> list[dict[str, Any]]:
        """The thread's OpenCode session as the server keeps it (``{id, role, text}``, oldest
        first): a resumed session lists its earlier messages here."""
        return self._ask(self._record(thread_id), NativeMessages(limit), "native_messages", self._limit(timeout))

    def fork_thread(self, thread_id: str, new_thread_id: str, *, runtime_mode: str | None = None,
                    timeout: float | None = None) -> Session:
        """Fork the thread's OpenCode session on the server (``/session/{id}/fork``: a new
        session with the same history) and start ``new_thread_id`` on it (resumed, same cwd).
        Refused while a turn runs (:class:`ValidationError`)."""
        record = self._record(thread_id)
        sid = self._ask(record, Fork(), "fork_thread", self._limit(timeout))
        source = record.session
        return self.start_session(StartSessionInput(
            thread_id=new_thread_id, cwd=source.cwd, runtime_mode=runtime_mode or source.runtime_mode,  # type: ignore[arg-type]
            interaction_mode=source.interaction_mode, model=source.model,
            resume_cursor=cursor_for(DRIVER, sid, source.cwd)), timeout=timeout)

    def compact_thread(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Summarize the thread's session on the server (``/session/{id}/summarize``, one model
        call with the session's model): later turns carry the summary instead of the full
        history. Refused while a turn runs."""
        limit = timeout if timeout is not None else self._config.request_timeout + 5.0
        self._ask(self._record(thread_id), Compact(), "compact_thread", limit)

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Stop the session: a running turn is aborted and cancelled, open requests are cancelled
        (rejected on the server), ``session.exited(reason="stopped")`` is emitted. The OpenCode
        session stays on the server: the cursor resumes it."""
        with self._lock:
            record = self._records.get(thread_id)
            if record is None:
                if thread_id in self._stopped:
                    raise SessionClosedError(thread_id, **self._where)
                raise SessionNotFoundError(thread_id, **self._where)
            self._records.pop(thread_id, None)
        self._terminate(thread_id, timeout if timeout is not None else 15.0)
        with self._lock:
            self._stopped[thread_id] = record.thread

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        raise CapabilityUnsupportedError("threads.rollback", "the opencode driver does not wire /revert to rollback",
                                         **self._where, thread_id=thread_id)

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

    def _instance_warning(self, code: str, message: str, detail: dict[str, Any]) -> None:
        # Stream thread: a transport warning before any session is routed is the instance's.
        self._ctx.hub.instance_warning(DRIVER, self.instance_id, code, message, detail)

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop every session (each emits ``session.exited``), then the server (SIGTERM to its
        group, SIGKILL after ``shutdown_timeout``); an external server is left running.
        Afterwards no process of the instance is alive. Idempotent."""
        deadline = time.monotonic() + timeout
        with self._up_lock:
            with self._lock:
                self._closed = True
                scope, self._scope = self._scope, None
                link, self._link = self._link, None
                records = list(self._records.values())
                self._records.clear()
        if scope is not None:
            # Sessions first (reverse start order), while the server still answers their aborts.
            scope.close(deadline)
        if link is not None:
            link.close()
        with self._lock:
            for record in records:
                record.closed = True
                self._stopped[record.session.thread_id] = record.thread

    def __repr__(self) -> str:
        return f"<OpencodeAdapter {self.instance_id}>"

