"""The host side of a placed instance: :class:`RayAdapter`, the ``ProviderAdapter`` the runtime
holds for an instance whose real adapter runs in a Ray actor on some node
(docs/architecture.md, "Placement on a Ray cluster").

Supervision: the node actor is one child (``node``, permanent) of the instance's own
:class:`~paddock.supervisors.Scope` on the host, through a :class:`_NodeLink` actor. Placing the
node actor is the link's start; the death of the node actor (its worker killed, its node gone)
is the link's failure, so the host supervisor's restart budget and backoff apply as to any
child, and each restart places a fresh node actor, on another node when the old one is gone.
When the link exits on its own, every session it held gets ``session.exited(recoverable=...)``
(the hub's grammar guard ends their open turns ``failed``).

Events: one pump thread per placement pulls the node's batches (bounded pulls, long-polled) and
emits them to the host's EventHub under their own identity. Each pull is also the host's
heartbeat on the node, and brings the node's session list (the cache behind
:meth:`RayAdapter.list_sessions` and :meth:`RayAdapter.has_session`, so routine runtime calls
cost no round trip). Control calls are actor method calls bounded by the contract's timeouts;
Ray's wrapped exceptions are unwrapped into the ``PaddockError`` family.

Thread: every public method is thread-safe and blocks the caller at most its timeout (plus a
transport margin).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Literal, cast

import psutil
import pykka

from paddock.contract import (
    Capabilities,
    DriverError,
    InstanceNotFoundError,
    OperationTimeout,
    PaddockError,
    ResumeCursor,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionExited,
    TO_BE_STAMPED,
    StartSessionInput,
    ThreadSnapshot,
    TurnStartResult,
)
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext, ChildSpec, ExitReason, Scope, SupervisedActor

from ._cluster import connect, unreachable
from ._errors import NodeLost, unwrap
from ._node import NodeActor, NodeRecipe, NodeReport
from ._placement import RayPlacement
from ._sink import decode_pulled

__all__ = ["RayAdapter"]

_MARGIN = 5.0  # seconds a control call may spend in transport on top of its own timeout
_PULL_EVENTS = 4096
_PULL_WAIT = 0.25
_FLUSH_EVERY = 16_384  # events the pump delivers to the hub before it waits for the hub to catch up
class _Lost:
    """Told to the link by the pump: the node actor died."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _Placed:
    """One placement: the Ray actor handle, its report, and its pump thread."""

    def __init__(self, handle: Any, report: NodeReport) -> None:
        self.handle = handle
        self.report = report
        self.stop = threading.Event()
        self.pump: threading.Thread | None = None


class _NodeLink(SupervisedActor):
    """The host supervisor's child standing for one node actor incarnation (thread: its own)."""

    def __init__(self, owner: RayAdapter, *, context: ChildContext) -> None:
        super().__init__(context=context)
        self._owner = owner

    def on_start(self) -> None:
        self._owner._place(self.actor_ref)

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _Lost):
            raise message.error
        return None

    def on_shutdown(self, deadline: float) -> None:
        self._owner._close_node(deadline)

    def on_terminate(self, reason: ExitReason) -> None:
        self._owner._drop_node()


class RayAdapter:
    """A placed instance's ``ProviderAdapter`` on the host (see the module docstring)."""

    def __init__(self, ctx: InstanceContext, placement: RayPlacement, recipe: NodeRecipe,
                 capabilities: Capabilities | None, *, request_timeout: float, start_timeout: float) -> None:
        self.driver = ctx.driver
        self.instance_id = ctx.instance_id
        self._hub = ctx.hub
        self._placement = placement
        self._recipe = recipe
        self._caps = capabilities
        self._request_timeout = request_timeout
        self._start_timeout = start_timeout
        self._where: dict[str, str | None] = {"driver": self.driver, "instance_id": self.instance_id}
        self._cond = threading.Condition()
        self._placed: _Placed | None = None
        self._scope: Scope | None = None
        self._failed: str | None = None
        self._start_error: PaddockError | None = None
        self._closed = False
        self._status = "not placed"
        self._last_node: NodeReport | None = None
        self._sessions: dict[str, Session] = {}
        self._epoch = 0
        self._inflight = 0
        self._killed: list[psutil.Process] = []  # killed node actors' workers on this machine
        self._probed: tuple[float, str | None] = (-1.0, None)  # (when, why the cluster did not answer)
        self.placements = 0
        """How many node actors were placed (1 + restarts)."""

    # supervision ------------------------------------------------------------------------------

    def _ensure_scope(self, deadline: float) -> _Placed:
        with self._cond:
            if self._closed:
                raise InstanceNotFoundError(self.instance_id, "it was closed", driver=self.driver)
            scope = self._scope
            if scope is None:
                scope = self._scope = Scope(
                    [ChildSpec("node", start=lambda c: _NodeLink.start(self, context=c), restart="permanent",
                               shutdown=10.0, start_timeout=self._start_timeout + _MARGIN)],
                    name=f"instance:{self.instance_id}", start_timeout=self._start_timeout + 2 * _MARGIN,
                    max_restarts=self._placement.restarts, period=self._placement.period,
                    on_child_exit=self._node_exited, on_escalate=self._escalated,
                )
                self._status = "placing"
                self._start_error = None
                start = True
            else:
                start = False
        if start:
            try:
                connect(self._placement, round(max(0.1, deadline - _MARGIN - time.monotonic()), 1))
            except PaddockError as exc:
                with self._cond:
                    self._scope = None
                    self._status = f"unavailable: {exc}"
                raise
            # The first placement runs in the scope's start: off the caller's thread, so that
            # the caller waits for it no longer than its own deadline.
            threading.Thread(target=self._start_scope, args=(scope,), daemon=True,
                             name=f"paddock-ray-place:{self.instance_id}").start()
        with self._cond:
            while True:
                if self._placed is not None:
                    return self._placed
                if self._failed is not None:
                    raise DriverError(self.driver, self.instance_id, self._failed)
                if self._closed:
                    raise InstanceNotFoundError(self.instance_id, "it was closed", driver=self.driver)
                if self._scope is not scope and self._start_error is not None:
                    raise self._start_error
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OperationTimeout("placing the instance on Ray", self._start_timeout, **self._where)
                self._cond.wait(min(left, 0.5))

    def _start_scope(self, scope: Scope) -> None:
        """Start ``scope`` (its first placement); a failure reaches the callers waiting in
        :meth:`_ensure_scope`, and the next call starts a fresh scope (thread: its own)."""
        try:
            scope.start()
        except PaddockError as exc:
            with self._cond:
                if self._scope is scope:
                    self._scope = None
                self._start_error = exc
                if not self._status.startswith("unavailable"):
                    self._status = f"unavailable: {exc}"
                self._cond.notify_all()

    def _place(self, link: pykka.ActorRef[Any]) -> None:
        """Place a fresh node actor and start its pump, which tells ``link`` when the node actor
        dies (thread: the link's on_start)."""
        import ray

        connect(self._placement, self._start_timeout)
        p = self._placement
        # Trap: when a Ray worker exits, its core worker SIGKILLs its direct children. Those are
        # our shims, which then cannot kill what they adopted (a terminal's `sh -c` and its
        # children escape). With that off, each shim sees its host (the worker) die through its
        # watchdog pipe and SIGKILLs its whole tree.
        options: dict[str, Any] = {"max_concurrency": 32, "num_cpus": 0, "max_restarts": 0, "runtime_env": {
            "env_vars": {"RAY_kill_child_processes_on_worker_exit": "false"}}}
        if p.resources:
            options["resources"] = dict(p.resources)
        if p.label_selector:
            options["label_selector"] = dict(p.label_selector)
        if p.fallback_label_selectors:
            options["fallback_strategy"] = [{"label_selector": dict(s)} for s in p.fallback_label_selectors]
        # Ray's ActorHandle is untyped: its methods are looked up by name at run time.
        handle: Any = ray.remote(NodeActor).options(**options).remote(self._recipe)
        try:
            report = cast(NodeReport, ray.get(handle.setup.remote(), timeout=self._start_timeout))
        except BaseException as exc:
            ray.kill(handle, no_restart=True)
            error = unwrap(exc, "placing the instance", self._start_timeout, self._where)
            with self._cond:
                self._status = f"unavailable: {error}"
            raise error from None
        if report.reason is not None:
            ray.kill(handle, no_restart=True)
            with self._cond:
                self._status = f"unavailable on node {report.node_ip}: {report.reason}"
            raise InstanceNotFoundError(self.instance_id, f"on Ray node {report.node_id[:12]} ({report.node_ip}): "
                                        f"{report.reason}", driver=self.driver)
        placed = _Placed(handle, report)
        placed.pump = threading.Thread(target=self._pump, args=(placed, link), daemon=True,
                                       name=f"paddock-ray-pump:{self.instance_id}")
        with self._cond:
            if report.capabilities is not None:
                self._caps = report.capabilities
            self._placed = placed
            self._last_node = report
            self._sessions = {}
            self.placements += 1
            self._status = "alive"
            self._cond.notify_all()
        placed.pump.start()

    def _node_exited(self, child_id: str, reason: ExitReason, restarting: bool) -> None:
        """The link exited on its own (thread: the host supervisor's): every session it held ends."""
        with self._cond:
            sessions = list(self._sessions.values())
            self._sessions = {}
            self._epoch += 1
            self._status = "restarting" if restarting else "failed"
        why = f"the instance's Ray node actor died: {reason.error}" if reason.error else "the instance's Ray node actor stopped"
        for session in sessions:
            self._hub.emitter(session.driver, self.instance_id, session.thread_id).emit(
                [SessionExited(**TO_BE_STAMPED, reason=why, recoverable=restarting)])

    def _escalated(self, error: BaseException) -> None:
        with self._cond:
            self._failed = f"its Ray node actor exceeded the restart budget ({self._placement.restarts} in " \
                           f"{self._placement.period:g} s): {error}"
            self._status = f"failed: {self._failed}"
            self._cond.notify_all()

    def _pump(self, placed: _Placed, link: pykka.ActorRef[Any]) -> None:
        """Pull the node's events into the host hub until the placement ends (thread: the pump)."""
        import ray

        emitters: dict[tuple[str, str], Any] = {}
        limit = self._placement.host_silence + 10.0
        unflushed = 0
        while not placed.stop.is_set():
            if unflushed >= _FLUSH_EVERY:
                # Bound what waits in the hub's mailbox: let it commit and publish first (the
                # node's queue fills meanwhile, and then its emitters wait).
                try:
                    self._hub.flush(timeout=limit)
                except PaddockError:
                    pass  # the hub failed or lags past the limit: the runtime reports it
                unflushed = 0
            with self._cond:
                epoch = self._epoch
            try:
                data = ray.get(placed.handle.pull.remote(_PULL_EVENTS, _PULL_WAIT), timeout=limit)
            except ray.exceptions.GetTimeoutError:
                continue
            except BaseException as exc:
                if not placed.stop.is_set():
                    link.tell(_Lost(NodeLost(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                                             **self._where)))
                return
            unflushed += self._deliver(data, epoch, emitters, count="delivered")

    def _deliver(self, data: bytes, epoch: int, emitters: dict[tuple[str, str], Any],
                 count: Literal["delivered", "pending"] = "pending") -> int:
        """Emit one pull's batches to the host's hub and refresh the session cache (unless a
        session-changing call ran since the pull was sent). Returns the events it delivered, or
        those plus what the node still holds (``count="pending"``)."""
        pulled = decode_pulled(data)
        for batch in pulled.batches:
            key = (batch.driver, batch.thread_id)
            emitter = emitters.get(key)
            if emitter is None:
                emitter = emitters[key] = self._hub.emitter(batch.driver, self.instance_id, batch.thread_id)
            emitter.emit(batch.events)
        with self._cond:
            if self._epoch == epoch and not self._inflight:
                self._sessions = {s.thread_id: s for s in pulled.sessions}
        delivered = sum(len(b.events) for b in pulled.batches)
        return delivered if count == "delivered" else delivered + pulled.buffered

    def _close_node(self, deadline: float) -> None:
        """Close the node's adapter by ``deadline``, deliver its last events, stop the pump
        (thread: the link's on_shutdown)."""
        import ray

        with self._cond:
            placed = self._placed
        if placed is None:
            return
        try:
            ray.get(placed.handle.close.remote(max(0.1, deadline - time.monotonic() - 0.5)),
                    timeout=max(0.1, deadline - time.monotonic()))
        except BaseException:
            pass
        placed.stop.set()
        if placed.pump is not None:
            placed.pump.join(max(0.0, min(_PULL_WAIT + 1.0, deadline - time.monotonic())))
        emitters: dict[tuple[str, str], Any] = {}
        while time.monotonic() < deadline:  # the sessions' last events (session.exited)
            try:
                data = ray.get(placed.handle.pull.remote(_PULL_EVENTS, 0.0),
                               timeout=max(0.1, deadline - time.monotonic()))
            except BaseException:
                break
            if not self._deliver(data, -1, emitters):
                break

    def _drop_node(self) -> None:
        """The link ended: kill its node actor (its worker exits; the shims kill what is left).
        A worker on this machine is remembered, for :meth:`close` to wait for its exit."""
        import ray

        with self._cond:
            placed = self._placed
            self._placed = None
            self._cond.notify_all()
        if placed is None:
            return
        placed.stop.set()
        try:
            ray.kill(placed.handle, no_restart=True)
        except Exception:
            pass
        worker = _local_process(placed.report)
        if worker is not None:
            with self._cond:
                self._killed.append(worker)

    def _await_workers(self, deadline: float) -> None:
        """Wait until the killed node actors' workers on this machine have exited (``ray.kill``
        returns before they do), SIGKILLing any left at ``deadline`` (thread: the closer's)."""
        with self._cond:
            workers, self._killed = self._killed, []
        _gone, alive = psutil.wait_procs(workers, timeout=max(0.0, deadline - time.monotonic()))
        for proc in alive:
            try:
                proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=1.0)

    # calls ------------------------------------------------------------------------------------

    def _call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], limit: float,
              thread_id: str | None = None, *, mutates: bool = False) -> Any:
        import ray

        deadline = time.monotonic() + limit + _MARGIN
        where = {**self._where, "thread_id": thread_id}
        with self._cond:
            if mutates:
                self._inflight += 1
                self._epoch += 1
        try:
            while True:
                placed = self._ensure_scope(deadline)
                try:
                    ref = placed.handle.control.remote(method, args, kwargs)
                    return ray.get(ref, timeout=max(0.1, deadline - time.monotonic()))
                except BaseException as exc:
                    error = unwrap(exc, method, limit, where)
                if isinstance(error, NodeLost) and method == "start_session":
                    # The node actor died before the pump noticed: a start there never happened,
                    # so wait for the next placement and start on it (within the same deadline).
                    self._await_replacement(placed, deadline)
                    continue
                if isinstance(error, NodeLost) and thread_id is not None:
                    raise SessionClosedError(thread_id, "its Ray node actor died", **self._where) from None
                raise error from None
        finally:
            if mutates:
                with self._cond:
                    self._inflight -= 1
                    self._epoch += 1

    def _await_replacement(self, placed: _Placed, deadline: float) -> None:
        with self._cond:
            while self._placed is placed and self._failed is None and time.monotonic() < deadline:
                self._cond.wait(min(0.5, max(0.0, deadline - time.monotonic())))
            if self._placed is placed:
                raise OperationTimeout("placing the instance on Ray again", deadline - time.monotonic(), **self._where)

    def _limit(self, timeout: float | None) -> float:
        return timeout if timeout is not None else self._request_timeout + 5.0

    def capabilities(self) -> Capabilities:
        """The capabilities the node's adapter reported at placement (cached; no round trip)."""
        if self._caps is None:
            raise InstanceNotFoundError(self.instance_id, "its capabilities are not known before placement",
                                        driver=self.driver)
        return self._caps

    def start_session(self, input: StartSessionInput, *, timeout: float | None = None) -> Session:
        limit = timeout if timeout is not None else self._start_timeout
        session: Session = self._call("start_session", (input,), {"timeout": timeout}, limit,
                                      input.thread_id, mutates=True)
        with self._cond:
            self._sessions[session.thread_id] = session
        return session

    def send_turn(self, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        result: TurnStartResult = self._call("send_turn", (input,), {"timeout": timeout}, self._limit(timeout),
                                             input.thread_id)
        return result

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        self._call("interrupt_turn", (thread_id, turn_id), {"timeout": timeout}, self._limit(timeout), thread_id)

    def fail_turn(self, thread_id: str, turn_id: str, code: str, message: str, *,
                  detail: dict[str, Any] | None = None, timeout: float | None = None) -> None:
        """The node adapter's ``fail_turn`` (the runtime found the turn's model endpoint dead)."""
        self._call("fail_turn", (thread_id, turn_id, code, message), {"detail": detail, "timeout": timeout},
                   self._limit(timeout), thread_id)

    def steer_turn(self, thread_id: str, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult:
        result: TurnStartResult = self._call("steer_turn", (thread_id, input), {"timeout": timeout},
                                             self._limit(timeout), thread_id)
        return result

    def respond_to_request(self, thread_id: str, request_id: str, decision: str, *, decided_by: str = "person",
                           surface: str | None = None, timeout: float | None = None) -> None:
        self._call("respond_to_request", (thread_id, request_id, decision),
                   {"decided_by": decided_by, "surface": surface, "timeout": timeout}, self._limit(timeout), thread_id)

    def respond_to_user_input(self, thread_id: str, request_id: str, answers: dict[str, Any], *,
                              timeout: float | None = None) -> None:
        self._call("respond_to_user_input", (thread_id, request_id, answers), {"timeout": timeout},
                   self._limit(timeout), thread_id)

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        try:
            self._call("stop_session", (thread_id,), {"timeout": timeout}, timeout if timeout is not None else 10.0,
                       thread_id, mutates=True)
        finally:
            with self._cond:
                self._sessions.pop(thread_id, None)

    def stop_all(self, *, timeout: float | None = None) -> None:
        try:
            self._call("stop_all", (), {"timeout": timeout}, timeout if timeout is not None else 15.0, mutates=True)
        finally:
            with self._cond:
                self._sessions = {}

    def list_sessions(self) -> list[Session]:
        """The node's live sessions as of the last pull or control call (cached; no round trip)."""
        with self._cond:
            return list(self._sessions.values())

    def has_session(self, thread_id: str) -> bool:
        with self._cond:
            return thread_id in self._sessions

    def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot:
        snapshot: ThreadSnapshot = self._call("read_thread", (thread_id,), {"timeout": timeout},
                                              self._limit(timeout), thread_id)
        return snapshot

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        snapshot: ThreadSnapshot = self._call("rollback_thread", (thread_id, num_turns), {"timeout": timeout},
                                              self._limit(timeout), thread_id)
        return snapshot

    def fork_thread(self, thread_id: str, new_thread_id: str, *, runtime_mode: str | None = None,
                    timeout: float | None = None) -> Session:
        """The node adapter's ``fork_thread`` (``sessions.fork``); the new thread lives on the same node."""
        session: Session = self._call("fork_thread", (thread_id, new_thread_id),
                                      {"runtime_mode": runtime_mode, "timeout": timeout}, self._limit(timeout),
                                      thread_id, mutates=True)
        with self._cond:
            self._sessions[session.thread_id] = session
        return session

    def fork_native(self, thread_id: str, *, at_turn: int | None = None,
                    timeout: float | None = None) -> ResumeCursor:
        """The node adapter's ``fork_native`` (``sessions.fork``): the copy's cursor, for a session
        started on the same node (the Runtime's ``fork_thread`` starts it through this proxy)."""
        cursor: ResumeCursor = self._call("fork_native", (thread_id,), {"at_turn": at_turn, "timeout": timeout},
                                          self._limit(timeout), thread_id)
        return cursor

    def compact_thread(self, thread_id: str, *, timeout: float | None = None) -> TurnStartResult | None:
        """The node adapter's ``compact_thread`` (``context.compaction``)."""
        result: TurnStartResult | None = self._call("compact_thread", (thread_id,), {"timeout": timeout},
                                                    self._limit(timeout), thread_id)
        return result

    def close(self, *, timeout: float = 10.0) -> None:
        """Close the node's adapter, deliver its last events and remove the node actor, all
        within ``timeout``. Idempotent."""
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._closed:
                return
            self._closed = True
            scope = self._scope
            self._status = "closed"
            self._cond.notify_all()
        if scope is not None:
            scope.close(deadline)
        self._drop_node()
        self._await_workers(deadline)

    # operators --------------------------------------------------------------------------------

    def placement_info(self) -> dict[str, Any]:
        """``placement``, ``node``, ``ray`` (status) and ``reason`` (why the instance is not
        available: the cluster does not answer, or its placement failed; else ``None``) for
        ``InstanceInfo`` and ``paddock doctor``. Unless the node actor is alive (its pulls are
        the cluster answering), asks the cluster address for a TCP connection, at most once
        every 2 s and for at most 0.5 s (thread: any)."""
        with self._cond:
            report = self._last_node
            status = self._status
            alive = self._placed is not None
        reason: str | None = None
        if self._failed is not None or status.startswith("unavailable"):
            reason = status.removeprefix("unavailable: ")
        elif not alive and status != "closed":
            reason = self._cluster_silent()
        return {
            "placement": "ray",
            "node": None if report is None else f"{report.node_id[:12]} ({report.node_ip}, pid {report.pid})",
            "ray": status,
            "home": None if report is None else report.home,
            "reason": reason,
        }

    def _cluster_silent(self) -> str | None:
        when, why = self._probed
        if time.monotonic() - when < 2.0:
            return why
        silent = unreachable(self._placement.address, 0.5)
        why = None if silent is None else f"the Ray cluster at {self._placement.address!r} does not answer: {silent}"
        self._probed = (time.monotonic(), why)
        return why

    def __repr__(self) -> str:
        return f"<RayAdapter {self.driver}/{self.instance_id} {self._status}>"


def _local_process(report: NodeReport) -> psutil.Process | None:
    """The node actor's worker if it runs on this machine (same pid and start time), else ``None``."""
    local = {a.address for addrs in psutil.net_if_addrs().values() for a in addrs}
    if report.node_ip not in local or not report.created:
        return None
    try:
        proc = psutil.Process(report.pid)
        return proc if abs(proc.create_time() - report.created) < 0.01 else None
    except psutil.Error:
        return None
