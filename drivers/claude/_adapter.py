"""ClaudeAdapter: one ``claude`` driver instance (the ProviderAdapter the runtime talks to).

Supervision tree (docs/architecture.md), the root built lazily by the first ``start_session``::

    InstanceSupervisor[<instance>]          one_for_one (Scope)
    └── SessionScope[<thread>]              one_for_all, temporary: one per live session
        ├── process: ProcessActor[claude]   temporary; spawned, `initialize` written
        └── session: ClaudeSessionActor     temporary

One CLI process per session. Neither child is restarted: when the process dies the session
reports it (failed turn, expired requests, ``session.exited`` with exit code and stderr tail),
stops, and its scope closes; the host starts the thread again, which resumes it from the cursor
(``--resume``).

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Any

import pykka

from paddock.actors import Interrupt, Open, ProcessActor, ProcessSpec, Respond, SendTurn, SessionRecord, SessionTable
from paddock.contract import (
    Capabilities,
    CapabilityUnsupportedError,
    DriverError,
    PaddockError,
    ProcessError,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionNotFoundError,
    StartSessionInput,
    ThreadSnapshot,
    TokenUsage,
    TurnStartResult,
)
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext, ChildSpec, ExitReason, Scope, Supervisor, request_shutdown

from ._capabilities import CLAUDE_CAPABILITIES
from ._config import DEFAULT_PERMISSION_MODES, ClaudeConfig
from ._link import ProcessLink
from ._cursor import session_id_of
from ._messages import SessionSettings
from ._session import ClaudeSessionActor

__all__ = ["ClaudeAdapter", "build_argv"]

DRIVER = "claude"


def build_argv(binary: str, config: ClaudeConfig, *, permission_mode: str, model: str | None,
               session_id: str, resume: bool) -> list[str]:
    """The CLI command line (claude-stream-json.md section 1; ids as ``--flag=value``)."""
    argv = [binary, *config.args, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
            "--include-partial-messages", "--permission-prompt-tool", "stdio", "--permission-mode", permission_mode]
    if permission_mode == "bypassPermissions":
        argv.append("--allow-dangerously-skip-permissions")
    if model:
        argv.append(f"--model={model}")
    argv.append(f"--resume={session_id}" if resume else f"--session-id={session_id}")
    if config.max_turns is not None:
        argv += ["--max-turns", str(config.max_turns)]
    if config.system_prompt is not None:
        argv += ["--system-prompt", config.system_prompt]
    if config.append_system_prompt is not None:
        argv += ["--append-system-prompt", config.append_system_prompt]
    return argv


class ClaudeAdapter(SessionTable):
    """One ``claude`` instance. Build it with the registry's ``DriverSpec.create``."""

    def __init__(self, ctx: InstanceContext) -> None:
        super().__init__(DRIVER, ctx.instance_id)
        self._ctx = ctx
        self._config: ClaudeConfig = ctx.config  # type: ignore[assignment]
        self._modes = {**DEFAULT_PERMISSION_MODES, **self._config.permission_modes}
        self._settings = SessionSettings(
            driver=DRIVER, instance_id=ctx.instance_id,
            interrupt_timeout=self._config.interrupt_timeout, permission_modes=self._modes,
        )
        self._start_lock = threading.Lock()
        self._scope: Scope | None = None
        self._usage: dict[str, TokenUsage] = {}
        self._closed = False

    def capabilities(self) -> Capabilities:
        return CLAUDE_CAPABILITIES

    # the supervision tree ------------------------------------------------------------------------

    def _ensure_scope(self) -> Scope:
        with self._start_lock:
            if self._closed:
                raise DriverError(DRIVER, self.instance_id, "the instance is closed")
            scope = self._scope
            if scope is not None and scope.exit_reason is None:
                return scope
            scope = Scope([], name=f"instance:{self.instance_id}", strategy="one_for_one", max_restarts=3, period=60.0)
            scope.start()
            self._scope = scope
            return scope

    def _binary(self) -> str:
        from ._spec import locate

        where = locate(self._ctx)
        if isinstance(where, str):
            raise DriverError(DRIVER, self.instance_id, f"cannot start Claude Code: {where}")
        return where.path

    def _env(self) -> dict[str, str]:
        from paddock.drivers._claude_code import CLAUDE_CODE_QUIET, claude_code_env

        env = dict(self._ctx.env)
        env.pop("CLAUDECODE", None)  # set inside a Claude Code shell; the child must not see it
        # The common model keys and the quiet switches; the instance's own `env` wins.
        for key, value in {**CLAUDE_CODE_QUIET, **claude_code_env(self._ctx.access)}.items():
            env.setdefault(key, value)
        env.setdefault("CLAUDE_CONFIG_DIR", os.path.join(self._ctx.home, "claude"))
        os.makedirs(env["CLAUDE_CONFIG_DIR"], exist_ok=True)
        return env

    def _session_scope_spec(self, record: SessionRecord, argv: list[str], env: dict[str, str]) -> ChildSpec:
        thread_id = record.session.thread_id
        config = self._config
        link = ProcessLink(f"paddock_init_{uuid.uuid4().hex[:8]}")
        record.extra["link"] = link
        spec = ProcessSpec(
            argv=tuple(argv), env=env, cwd=record.session.cwd, name=f"{self.instance_id}:{thread_id}:claude",
            owner=self.instance_id, lease_dir=self._ctx.state_dir, shutdown_timeout=config.shutdown_timeout,
        )

        def start_process(cctx: ChildContext) -> pykka.ActorRef[Any]:
            # Session scope supervisor thread: spawn and write `initialize`, no waiting here (the
            # root supervisor thread is shared by every session start); the caller waits for
            # the answer in _await_ready.
            handle = ProcessActor.open(spec, on_lines=link.on_lines, on_exit=link.on_exit,
                                       on_warning=link.on_warning, context=cctx, timeout=config.start_timeout)
            link.handle = handle
            try:
                handle.write_lines([
                    b'{"type":"control_request","request_id":"%s","request":{"subtype":"initialize","hooks":null}}'
                    % link.init_request_id.encode()
                ], timeout=config.start_timeout)
            except BaseException:
                handle.terminate(2.0)
                raise
            return handle.actor_ref

        emitter = record.extra["emitter"]
        settings = self._settings

        def start_session(cctx: ChildContext) -> pykka.ActorRef[Any]:
            return ClaudeSessionActor.start(record, emitter, link, settings, context=cctx)

        def start_scope(cctx: ChildContext) -> pykka.ActorRef[Any]:
            holder: list[pykka.ActorRef[Any]] = []

            def on_child_exit(child_id: str, reason: ExitReason, restarting: bool) -> None:
                # Session scope supervisor thread: the session ended on its own (its process
                # died, or the actor failed): close the scope, so nothing of it lingers.
                if child_id == "session" and holder:
                    request_shutdown(holder[0], time.monotonic() + config.shutdown_timeout + 2.0)

            ref = Supervisor.start(
                [
                    ChildSpec(id="process", start=start_process, restart="temporary",
                              shutdown=config.shutdown_timeout + 2.0, start_timeout=config.start_timeout + 5.0),
                    ChildSpec(id="session", start=start_session, restart="temporary", shutdown=5.0),
                ],
                strategy="one_for_all", name=f"session:{self.instance_id}:{thread_id}", context=cctx,
                on_child_exit=on_child_exit,
            )
            holder.append(ref)
            return ref

        return ChildSpec(id=thread_id, start=start_scope, restart="temporary",
                         shutdown=config.shutdown_timeout + 10.0, start_timeout=config.start_timeout + 10.0)

    # routing helpers -----------------------------------------------------------------------------

    def _ask_session(self, record: SessionRecord, message: object, operation: str, timeout: float | None) -> Any:
        # Never restarted: a dead session actor is a closed session.
        limit = timeout if timeout is not None else self._config.request_timeout + 5.0
        return self._ask(record, message, operation, limit)

    def _terminate(self, thread_id: str, timeout: float) -> None:
        self._terminate_scope_child(self._scope, thread_id, timeout)

    # ProviderAdapter -----------------------------------------------------------------------------

    def start_session(self, input: StartSessionInput, *, timeout: float | None = None) -> Session:
        """Spawn the thread's CLI process and answer once it is ready (``initialize`` answered).
        With ``input.resume_cursor`` the process starts with ``--resume``; when that fails a
        fresh session starts and says so (``session.started(resume_failed=True)`` plus
        ``runtime.warning`` claude.resume_failed). Returns the live session unchanged when the
        thread already has one."""
        # Two concurrent starts of one thread must not spawn two CLIs.
        with self._thread_start_lock(input.thread_id):
            return self._start_session(input, timeout)

    def _start_session(self, input: StartSessionInput, timeout: float | None) -> Session:
        thread_id = input.thread_id
        self.check_start_input(input)
        live, existing = self._claim(thread_id)
        if live is not None:
            return live
        if existing is not None:  # its process died: keep its history and usage
            self._remember(existing)
        resume_id = None
        # The thread's usage so far (this instance's memory or the cursor's, the larger): token
        # usage never goes backwards within a thread, also across processes.
        candidates = [self._usage.get(thread_id)]
        if input.resume_cursor is not None:
            resume_id, cursor_usage = session_id_of(input.resume_cursor, DRIVER)
            candidates.append(cursor_usage)
        usage = max((u for u in candidates if u is not None), key=lambda u: u.total_tokens or 0, default=None)
        deadline = time.monotonic() + (timeout if timeout is not None else self._config.start_timeout + 15.0)
        scope = self._ensure_scope()
        self._terminate(thread_id, 10.0)  # a session that ended on its own (process died)
        binary = self._binary()
        env = self._env()
        if resume_id is not None:
            try:
                return self._start(scope, input, binary, env, resume_id, True, usage, deadline, None)
            except (ProcessError, DriverError) as exc:
                detail = f"resume of session {resume_id} failed, started a new session: {exc}"
                return self._start(scope, input, binary, env, str(uuid.uuid4()), False, usage, deadline, detail)
        return self._start(scope, input, binary, env, str(uuid.uuid4()), False, usage, deadline, None)

    def _start(self, scope: Scope, input: StartSessionInput, binary: str, env: dict[str, str], session_id: str,
               resume: bool, usage: TokenUsage | None, deadline: float, resume_detail: str | None) -> Session:
        thread_id = input.thread_id
        runtime_mode = self._modes[input.runtime_mode]
        auto_allow = input.runtime_mode == "full-access"
        if runtime_mode == "bypassPermissions" and hasattr(os, "geteuid") and os.geteuid() == 0 \
                and env.get("IS_SANDBOX") != "1":
            # Protocol fact: bypassPermissions is refused as root unless IS_SANDBOX=1; fall back to
            # the default mode and allow every ask ourselves.
            runtime_mode = self._modes["approval-required"]
        permission_mode = self._modes["plan"] if input.interaction_mode == "plan" else runtime_mode
        model = input.model or self._config.model
        argv = build_argv(binary, self._config, permission_mode=permission_mode, model=model,
                          session_id=session_id, resume=resume)
        now = time.time()
        record = SessionRecord(Session(
            thread_id=thread_id, instance_id=self.instance_id, driver=DRIVER, status="starting", cwd=input.cwd,
            runtime_mode=input.runtime_mode, interaction_mode=input.interaction_mode, model=model,
            created_at=now, updated_at=now,
        ))
        record.extra.update(
            input=input if input.model == model else _with_model(input, model), session_id=session_id,
            resumed=resume, resume_failed=resume_detail is not None, resume_detail=resume_detail,
            permission_mode=permission_mode, runtime_permission_mode=runtime_mode, auto_allow=auto_allow, usage=usage,
            emitter=self._ctx.hub.emitter(DRIVER, self.instance_id, thread_id),
        )
        with self._lock:
            self._records[thread_id] = record
            self._stopped.pop(thread_id, None)
        spec = self._session_scope_spec(record, argv, env)
        try:
            scope.start_child(spec, timeout=max(0.1, deadline - time.monotonic()))  # typed errors (Scope)
            self._await_ready(record.extra["link"], min(deadline, time.monotonic() + self._config.start_timeout))
            return self._ask_session(record, Open(), "start_session", max(0.1, deadline - time.monotonic()))
        except BaseException as exc:
            with self._lock:
                if self._records.get(thread_id) is record:
                    self._records.pop(thread_id, None)
            record.closed = True
            self._terminate(thread_id, 5.0)
            if isinstance(exc, ProcessError):
                raise DriverError(DRIVER, self.instance_id, f"could not start Claude Code: {exc}",
                                  thread_id=thread_id) from None
            if isinstance(exc, PaddockError):
                raise
            raise DriverError(DRIVER, self.instance_id, f"start_session failed: {exc!r}", thread_id=thread_id) from exc

    def _await_ready(self, link: ProcessLink, deadline: float) -> None:
        """Block the caller until the CLI answered ``initialize`` (readiness is that answer, not
        ``system/init``); raise ProcessError when it exited or refused first."""
        if not link.init_done.wait(max(0.0, deadline - time.monotonic())):
            tail = link.handle.stderr_tail()[-2048:] if link.handle is not None else ""
            raise ProcessError(f"Claude Code did not answer initialize within {self._config.start_timeout:g} s",
                               stderr_tail=tail)
        response = link.init_response
        if response is None:
            info = link.exit_info
            if info is not None:
                raise info.error("Claude Code exited before answering initialize")
            raise ProcessError("Claude Code exited before answering initialize")
        if response.get("subtype") != "success":
            raise ProcessError(f"Claude Code refused initialize: {response.get('error')}")

    def send_turn(self, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        """Write the user message and return once it is written (``turn.started`` first); the
        turn's progress and its one ``turn.completed`` arrive as events. Raises ValidationError
        while a turn is running."""
        self.check_turn_input(input)
        return self._ask_session(self._record(input.thread_id), SendTurn(input), "send_turn", timeout)

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        """Send ``interrupt``; ``turn.aborted`` follows at once and the turn ends ``interrupted``.
        A no-op when no turn (or not ``turn_id``) is running."""
        self._ask_session(self._record(thread_id), Interrupt(turn_id), "interrupt_turn", timeout)

    def steer_turn(self, thread_id: str, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        raise CapabilityUnsupportedError("turns.steer", "the claude driver cannot add input to a running turn; "
                                         "interrupt it and send a new one", **self._where, thread_id=thread_id)

    def respond_to_request(self, thread_id: str, request_id: str, decision: str, *, timeout: float | None = None) -> None:
        """Answer a ``can_use_tool`` request: accept -> allow, accept_for_session -> allow with the
        CLI's permission suggestions, decline -> deny, cancel -> deny and interrupt."""
        self._ask_session(self._record(thread_id), Respond(request_id, decision), "respond_to_request", timeout)

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Stop the session: a running turn is cancelled, open requests are cancelled,
        ``session.exited(reason="stopped")`` is emitted, then the CLI's stdin is closed (SIGTERM,
        then SIGKILL at the deadline). The session can be resumed later from its cursor."""
        with self._lock:
            record = self._records.get(thread_id)
            if record is None:
                if thread_id in self._stopped:
                    raise SessionClosedError(thread_id, **self._where)
                raise SessionNotFoundError(thread_id, **self._where)
            self._records.pop(thread_id, None)
            self._stopped[thread_id] = record.thread
        self._terminate(thread_id, timeout if timeout is not None else self._config.shutdown_timeout + 10.0)
        self._remember(record)

    def _remember(self, record: SessionRecord) -> None:
        with self._lock:
            self._stopped[record.session.thread_id] = record.thread
            usage = record.extra.get("usage")
            if usage is not None:
                self._usage[record.session.thread_id] = usage

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        raise CapabilityUnsupportedError("threads.rollback", "Claude Code stream-json has no request to drop turns",
                                         **self._where, thread_id=thread_id)

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop every session (each emits ``session.exited``), then their processes. Afterwards no
        process of the instance is alive. Idempotent."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            scope, self._scope = self._scope, None
            records = list(self._records.values())
            self._records.clear()
        if scope is not None:
            scope.close(deadline)
        for record in records:
            record.closed = True
            self._remember(record)

    def __repr__(self) -> str:
        return f"<ClaudeAdapter {self.instance_id}>"


def _with_model(input: StartSessionInput, model: str | None) -> StartSessionInput:
    import msgspec

    return msgspec.structs.replace(input, model=model)
