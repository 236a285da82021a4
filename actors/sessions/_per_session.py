"""The process-per-session model: each session owns its agent process (Claude Code).

Supervision tree, the root built lazily by the first ``start_session``::

    InstanceSupervisor[<instance>]          one_for_one (Scope)
    └── SessionScope[<thread>]              one_for_all, temporary: one per live session
        ├── process: ProcessActor[<agent>]  temporary
        └── session: <session actor>        temporary

Neither child is restarted: when the process dies the session reports it and stops, and its
scope closes; the host starts the thread again, which resumes it from its cursor.

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import pykka

from paddock.contract import DriverError
from paddock.supervisors import ChildContext, ChildSpec, ExitReason, Scope, Supervisor, request_shutdown

from ..events import HubHandle
from ._adapter import SessionAdapter

__all__ = ["ProcessPerSessionAdapter"]

S = TypeVar("S")

Factory = Callable[[ChildContext], pykka.ActorRef[Any]]


class ProcessPerSessionAdapter(SessionAdapter[S]):
    """The process-per-session model. A driver implements ``_start`` (spawn spec, readiness
    and resume, through :meth:`_session_scope` and ``_launch``)."""

    process_per_session: ClassVar[bool] = True

    def __init__(self, driver: str, instance_id: str, *, hub: HubHandle, request_timeout: float,
                 start_timeout: float, shutdown_timeout: float) -> None:
        super().__init__(driver, instance_id, hub=hub, request_timeout=request_timeout)
        self._start_timeout = start_timeout
        self._shutdown_timeout = shutdown_timeout
        self._scope_lock = threading.Lock()
        self._scope: Scope | None = None

    def _ensure_scope(self) -> Scope:
        """The instance's root scope, started on first use (caller's thread)."""
        with self._scope_lock:
            if self._closed:
                raise DriverError(self.driver, self.instance_id, "the instance is closed")
            scope = self._scope
            if scope is not None and scope.exit_reason is None:
                return scope
            scope = Scope([], name=f"instance:{self.instance_id}", strategy="one_for_one", max_restarts=3, period=60.0)
            scope.start()
            self._scope = scope
            return scope

    def _session_scope(self, thread_id: str, start_process: Factory, start_session: Factory) -> ChildSpec:
        """The child spec of one session's scope: its process, then its session actor
        (one_for_all, nothing restarted). When the session actor ends on its own (its process
        died, or it failed) the scope closes, so nothing of it lingers."""
        shutdown, start_timeout = self._shutdown_timeout, self._start_timeout

        def start_scope(cctx: ChildContext) -> pykka.ActorRef[Any]:
            holder: list[pykka.ActorRef[Any]] = []

            def on_child_exit(child_id: str, reason: ExitReason, restarting: bool) -> None:
                # Session scope supervisor thread.
                if child_id == "session" and holder:
                    request_shutdown(holder[0], time.monotonic() + shutdown + 2.0)

            ref = Supervisor.start(
                [
                    ChildSpec(id="process", start=start_process, restart="temporary", shutdown=shutdown + 2.0,
                              start_timeout=start_timeout + 5.0),
                    ChildSpec(id="session", start=start_session, restart="temporary", shutdown=5.0),
                ],
                strategy="one_for_all", name=f"session:{self.instance_id}:{thread_id}", context=cctx,
                on_child_exit=on_child_exit,
            )
            holder.append(ref)
            return ref

        return ChildSpec(id=thread_id, start=start_scope, restart="temporary", shutdown=shutdown + 10.0,
                         start_timeout=start_timeout + 10.0)

    def _terminate(self, thread_id: str, timeout: float) -> None:
        self._terminate_scope_child(self._scope, thread_id, timeout)

    def _stop_timeout(self) -> float:
        return self._shutdown_timeout + 10.0

    def _close_tree(self, deadline: float) -> None:
        with self._lock:
            scope, self._scope = self._scope, None
        if scope is not None:
            scope.close(deadline)
