"""ClaudeAdapter: one ``claude`` driver instance on the process-per-session model (one CLI
process per session; ``paddock.actors.ProcessPerSessionAdapter``, docs/architecture.md).

A session is ready when its CLI answered ``initialize``. Nothing is restarted: when the process
dies the session reports it and stops; the host starts the thread again, which resumes it from
the cursor (``--resume``).

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import pykka

from paddock.actors import ProcessPerSessionAdapter, ProcessSpec, SessionRecord
from paddock.contract import Capabilities, DriverError, ProcessError, Session, StartSessionInput, TokenUsage
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext

from ._capabilities import CLAUDE_CAPABILITIES
from ._command import build_argv, child_env, locate, mcp_config_path, write_mcp_config
from ._config import DEFAULT_PERMISSION_MODES, ClaudeConfig
from ._cursor import fork_source_of, session_id_of
from ._link import ProcessLink
from ._messages import ClaudeState, SessionSettings
from ._session import ClaudeSessionActor

__all__ = ["ClaudeAdapter"]

DRIVER = "claude"


class ClaudeAdapter(ProcessPerSessionAdapter[ClaudeState]):
    """One ``claude`` instance. Build it with the registry's ``DriverSpec.create``."""

    _refusals = {
        "threads.rollback": "Claude Code stream-json has no request to drop turns",
        "approvals.user_input": "Claude Code stream-json asks no structured user input",
    }
    _process_name = "Claude Code"

    def __init__(self, ctx: InstanceContext) -> None:
        config = ctx.config
        assert isinstance(config, ClaudeConfig)
        super().__init__(DRIVER, ctx.instance_id, hub=ctx.hub, request_timeout=config.request_timeout,
                         start_timeout=config.start_timeout, shutdown_timeout=config.shutdown_timeout)
        self._ctx = ctx
        self._config = config
        self._modes = {**DEFAULT_PERMISSION_MODES, **config.permission_modes}
        self._settings = SessionSettings(driver=DRIVER, instance_id=ctx.instance_id,
                                         interrupt_timeout=config.interrupt_timeout, permission_modes=self._modes)
        self._usage: dict[str, TokenUsage] = {}

    def capabilities(self) -> Capabilities:
        return CLAUDE_CAPABILITIES

    def _ended(self, record: SessionRecord[ClaudeState]) -> None:
        # Token usage never goes backwards within a thread, also across processes.
        super()._ended(record)
        if record.state.usage is not None:
            with self._lock:
                self._usage[record.session.thread_id] = record.state.usage

    def _start(self, input: StartSessionInput, timeout: float | None) -> Session:
        """Spawn the thread's CLI and answer once it is ready. With ``input.resume_cursor`` it
        starts with ``--resume``; when that fails a fresh session starts and says so
        (``session.started(resume_failed=True)`` plus ``runtime.warning`` claude.resume_failed)."""
        resume_id = None
        # The thread's usage so far: this instance's memory or the cursor's, the larger.
        candidates = [self._usage.get(input.thread_id)]
        if input.resume_cursor is not None:
            resume_id, cursor_usage = session_id_of(input.resume_cursor, DRIVER)
            candidates.append(cursor_usage)
        usage = max((u for u in candidates if u is not None), key=lambda u: u.total_tokens or 0, default=None)
        deadline = time.monotonic() + (timeout if timeout is not None else self._config.start_timeout + 15.0)
        self._ensure_scope()
        where = locate(self._ctx)
        if isinstance(where, str):
            raise DriverError(DRIVER, self.instance_id, f"cannot start Claude Code: {where}")
        env = child_env(self._ctx)
        fork_of = fork_source_of(input.resume_cursor) if input.resume_cursor is not None else None
        if resume_id is not None and fork_of is not None:  # a copy that fails is an error, never a fresh session
            return self._spawn(input, where.path, env, resume_id, usage, deadline, resume=True, fork_of=fork_of)
        if resume_id is not None:
            try:
                return self._spawn(input, where.path, env, resume_id, usage, deadline, resume=True)
            except (ProcessError, DriverError) as exc:
                detail = f"resume of session {resume_id} failed, started a new session: {exc}"
                return self._spawn(input, where.path, env, str(uuid.uuid4()), usage, deadline, failed=detail)
        return self._spawn(input, where.path, env, str(uuid.uuid4()), usage, deadline)

    def _spawn(self, input: StartSessionInput, binary: str, env: dict[str, str], session_id: str,
               usage: TokenUsage | None, deadline: float, *, resume: bool = False, failed: str | None = None,
               fork_of: str | None = None) -> Session:
        runtime_mode = self._modes[input.runtime_mode]
        if runtime_mode == "bypassPermissions" and hasattr(os, "geteuid") and os.geteuid() == 0 \
                and env.get("IS_SANDBOX") != "1":
            # Protocol fact: bypassPermissions is refused as root unless IS_SANDBOX=1; fall back to
            # the default mode and allow every ask ourselves.
            runtime_mode = self._modes["approval-required"]
        permission_mode = self._modes["plan"] if input.interaction_mode == "plan" else runtime_mode
        model = input.model or self._config.model
        mcp_config = None
        if input.mcp_servers:
            mcp_config = write_mcp_config(mcp_config_path(self._ctx.home, input.thread_id), input.mcp_servers)
        argv = build_argv(binary, self._config, permission_mode=permission_mode, model=model,
                          session_id=session_id, resume=resume, mcp_config=mcp_config, fork_of=fork_of,
                          max_budget_usd=input.budget.cost if input.budget is not None else None)
        link = ProcessLink(f"paddock_init_{uuid.uuid4().hex[:8]}")
        state = ClaudeState(link=link, session_id=session_id, resumed=resume, resume_failed=failed is not None,
                            resume_detail=failed, permission_mode=permission_mode, runtime_permission_mode=runtime_mode,
                            auto_allow=input.runtime_mode == "full-access", usage=usage, mcp_config=mcp_config)
        thread_id = input.thread_id
        spec = ProcessSpec(argv=tuple(argv), env=env, cwd=input.cwd, name=f"{self.instance_id}:{thread_id}:claude",
                           owner=self.instance_id, lease_dir=self._ctx.state_dir,
                           confinement=confined.widened(write=(input.cwd,)) if (confined := self._ctx.confinement) else None,
                           shutdown_timeout=self._config.shutdown_timeout)
        start_timeout = self._config.start_timeout

        def start(record: SessionRecord[ClaudeState]) -> None:
            def start_session(cctx: ChildContext) -> pykka.ActorRef[Any]:
                return ClaudeSessionActor.start(record, self._settings, context=cctx)

            scope_spec = self._session_scope(thread_id, lambda cctx: link.start(spec, cctx, start_timeout), start_session)
            assert self._scope is not None  # _ensure_scope started it
            self._scope.start_child(scope_spec, timeout=max(0.1, deadline - time.monotonic()))  # typed errors (Scope)
            link.await_ready(min(deadline, time.monotonic() + start_timeout), start_timeout)
            if input.mcp_servers:
                link.await_mcp(min(deadline, time.monotonic() + start_timeout))

        return self._launch(input, model, state, start, lambda: max(0.1, deadline - time.monotonic()))
