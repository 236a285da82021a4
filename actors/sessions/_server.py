"""The server model: one HTTP server per instance carries every session (OpenCode), spawned
and supervised, or external (then there is no process: only its event stream).

Supervision tree, built by the first ``start_session``::

    InstanceSupervisor[<instance>]              one_for_one (Scope)
    ├── server: ProcessActor[<server>]          permanent (spawned only): restarted after a crash
    ├── session:<thread>: <session actor>       temporary, one per live session
    └── ...

Session actors outlive a server restart: the server link tells them it went down and came
back (the driver's messages), they are not restarted.

Thread: every public method is thread-safe and blocks the caller at most ``timeout`` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import pykka

from paddock.contract import DriverError, OperationTimeout, ProcessError, Session, StartSessionInput
from paddock.supervisors import ChildContext, ChildSpec, Scope

from ..events import HubHandle
from ._adapter import SessionAdapter
from ._session import SessionRecord

__all__ = ["ServerAdapter", "ServerHandle"]

S = TypeVar("S")


class ServerHandle(Protocol):
    """What the server model needs of a driver's server link."""

    def close(self) -> None: ...


K = TypeVar("K", bound=ServerHandle)


class ServerAdapter(SessionAdapter[S], Generic[S, K]):
    """The server model. A driver implements :meth:`_open_server` (spawn spec or external
    address, and readiness), :meth:`_start_session_actor`, :meth:`_session_model` and
    :meth:`_initial_state`. ``K`` is its server link."""

    _server_name: ClassVar[str] = "the server"
    """What a failed server start calls it (``could not start <name>``)."""

    def __init__(self, driver: str, instance_id: str, *, hub: HubHandle, request_timeout: float,
                 start_timeout: float, idle_timeout: float | None = None) -> None:
        super().__init__(driver, instance_id, hub=hub, request_timeout=request_timeout, idle_timeout=idle_timeout)
        self._start_timeout = start_timeout
        self._up_lock = threading.Lock()
        self._scope: Scope | None = None
        self._link: K | None = None
        self._spawned = False  # the scope runs the server (an external one is never stopped)

    # hooks ---------------------------------------------------------------------------------------

    def _open_server(self) -> tuple[K, list[ChildSpec]]:
        """A new server link and the scope's children (the server's spec when spawned, none when
        external; an external server is reached here). Caller's thread."""
        raise NotImplementedError

    def _start_session_actor(self, record: SessionRecord[S], link: K, cctx: ChildContext) -> pykka.ActorRef[Any]:
        raise NotImplementedError

    def _session_model(self, input: StartSessionInput) -> str | None:
        return input.model

    def _initial_state(self, input: StartSessionInput) -> S:
        raise NotImplementedError

    # the process model ---------------------------------------------------------------------------

    def _ensure_link(self, deadline: float) -> tuple[Scope, K]:
        """Start the instance's scope and its server (or reach the external one); the first
        caller waits, later ones get it at once. Caller's thread."""
        with self._up_lock:
            if self._closed:
                raise DriverError(self.driver, self.instance_id, "the instance is closed")
            scope, link = self._scope, self._link
            if scope is not None and link is not None and scope.exit_reason is None:
                return scope, link
            link, children = self._open_server()
            scope = Scope(children, name=f"instance:{self.instance_id}", strategy="one_for_one", max_restarts=3,
                          period=60.0, start_timeout=max(1.0, deadline - time.monotonic()) + 10.0)
            try:
                scope.start()
            except BaseException as exc:
                link.close()
                if isinstance(exc, ProcessError):
                    raise DriverError(self.driver, self.instance_id, f"could not start {self._server_name}: {exc}") from None
                raise
            self._scope, self._link = scope, link
            self._spawned = bool(children)
        self._idle.arm()
        return scope, link

    def _start(self, input: StartSessionInput, timeout: float | None) -> Session:
        limit = timeout if timeout is not None else self._start_timeout + self._request_timeout
        deadline = time.monotonic() + limit
        scope, link = self._ensure_link(deadline)
        thread_id = input.thread_id

        def start(record: SessionRecord[S]) -> None:
            def factory(cctx: ChildContext) -> pykka.ActorRef[Any]:
                return self._start_session_actor(record, link, cctx)

            spec = ChildSpec(id=f"session:{thread_id}", start=factory, restart="temporary", shutdown=10.0)
            try:
                scope.start_child(spec, timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                raise OperationTimeout("start_session", limit, **self._where, thread_id=thread_id) from None

        return self._launch(input, self._session_model(input), self._initial_state(input), start,
                            lambda: max(0.1, deadline - time.monotonic()))

    def _terminate(self, thread_id: str, timeout: float) -> None:
        self._terminate_scope_child(self._scope, f"session:{thread_id}", timeout)

    def _stop_timeout(self) -> float:
        return 15.0

    def _close_tree(self, deadline: float) -> None:
        with self._up_lock:
            with self._lock:
                scope, self._scope = self._scope, None
                link, self._link = self._link, None
        if scope is not None:
            # Sessions first (reverse start order), while the server still answers their aborts.
            scope.close(deadline)
        if link is not None:
            link.close()

    def _stop_idle_tree(self, still_idle: Callable[[], bool]) -> None:
        with self._up_lock:
            with self._lock:
                scope, link = self._scope, self._link
                if scope is None or not self._spawned or scope.exit_reason is not None or not still_idle():
                    return
                self._scope, self._link = None, None
            scope.close(time.monotonic() + 10.0)
            if link is not None:
                link.close()
