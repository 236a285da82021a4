"""The shared-process model: one JSON-RPC process serves every session of the instance (the
Codex app-server, ACP agents).

Supervision tree, built lazily by the first ``start_session``::

    InstanceSupervisor[<instance>]          rest_for_one, at most 3 restarts in 60 s, backoff
    ├── <process child>: the shared process  (its handshake done before "started")
    └── sessions: Supervisor                one_for_one
        └── <session actor>[<thread>]       transient, one per live session

When the process dies, rest_for_one stops the sessions, restarts the process with backoff, then
a session actor for every live session; each re-attaches to the new process on its next turn
(:class:`~._resume.SharedSessionActor`). Past the restart budget the instance escalates: every
session is closed and the next ``start_session`` starts a fresh tree.

Here: :class:`Router` (one process's inbound traffic, by native session id, to the session
actors), :class:`SharedLink` (one incarnation of the process) and
:class:`SharedProcessAdapter` (the process model of :class:`~._adapter.SessionAdapter`).

Thread: every public method of the adapter is thread-safe and blocks the caller at most
``timeout`` seconds; :meth:`Router.on_batch` runs on the connection's stdout reader thread.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar, cast

import msgspec
import pykka

from paddock.contract import (
    DriverError,
    OperationTimeout,
    PaddockError,
    ProcessError,
    RequestError,
    RuntimeErrorEvent,
    Session,
    StartSessionInput,
)
from paddock.supervisors import ChildContext, ChildSpec, ProxyCache, Scope, Supervisor, map_exceptions

from ..events import HubHandle
from ..execution import blocking
from ..transports import ExitInfo, JsonRpcConnection, JsonRpcNotification, JsonRpcRequest, LineTap, ProcessSpec
from ._adapter import SessionAdapter
from ._session import Mailbox, SessionRecord

__all__ = ["Incoming", "Req", "Router", "SharedLink", "SharedProcessAdapter"]

log = logging.getLogger(__name__)

S = TypeVar("S")
I = TypeVar("I")  # noqa: E741 - what a router hands a session: a decoded notification or a Req
Init = TypeVar("Init")


@dataclass(frozen=True, slots=True)
class Req:
    """A request of the process for one session: its JSON-RPC id, method and raw params."""

    id: int | str
    method: str
    params: msgspec.Raw


@dataclass(frozen=True, slots=True)
class Incoming(Generic[I]):
    """One read batch's share of one session, in the order the process wrote it."""

    items: list[I]


class Router(Generic[I]):
    """Routes one process's inbound traffic to session actors by native session id.

    A driver implements :meth:`route`. Traffic for an id nobody registered yet (the process can
    speak of a session before the answer that names it reaches the session actor) is held,
    bounded, and handed over at :meth:`register`; requests dropped from the hold are rejected.
    Thread-safe.
    """

    max_held_sessions: ClassVar[int] = 64
    max_held_items: ClassVar[int] = 4096

    def __init__(self, reject: Callable[[JsonRpcRequest], None]) -> None:
        self._reject = reject
        self._lock = threading.Lock()
        self._sessions: dict[str, Mailbox] = {}
        self._unclaimed: dict[str, list[I]] = {}

    def route(self, msg: JsonRpcRequest | JsonRpcNotification) -> tuple[str, I] | None:
        """Reader thread: ``(native id, item)`` for one inbound message, or ``None`` to skip it
        (a skipped request is rejected with -32601)."""
        raise NotImplementedError

    def register(self, native_id: str, ref: Mailbox) -> None:
        with self._lock:
            self._sessions[native_id] = ref
            held = self._unclaimed.pop(native_id, None)
            if held:
                try:
                    ref.tell(Incoming(held))
                except pykka.ActorDeadError:
                    pass

    def unregister(self, native_id: str, ref: Mailbox | None = None) -> None:
        """Stop routing ``native_id`` (only if it still routes to ``ref``, when given)."""
        with self._lock:
            if ref is None or self._sessions.get(native_id) is ref:
                self._sessions.pop(native_id, None)
            self._unclaimed.pop(native_id, None)

    def refs(self) -> list[Mailbox]:
        with self._lock:
            return list(self._sessions.values())

    def on_batch(self, batch: list[JsonRpcRequest | JsonRpcNotification]) -> None:
        """Reader thread: route one read batch, one ``tell`` per session."""
        groups: dict[str, list[I]] = {}
        route = self.route
        last_id: str | None = None
        last: list[I] = []
        for msg in batch:
            routed = route(msg)
            if routed is None:
                if type(msg) is JsonRpcRequest:
                    self._reject(msg)
                continue
            native_id, item = routed
            if native_id != last_id:
                last_id = native_id
                last = groups.setdefault(native_id, [])
            last.append(item)
        if not groups:
            return
        with self._lock:
            for native_id, items in groups.items():
                ref = self._sessions.get(native_id)
                if ref is not None:
                    try:
                        ref.tell(Incoming(items))
                        continue
                    except pykka.ActorDeadError:
                        del self._sessions[native_id]  # being restarted; its successor registers again
                held = self._unclaimed.get(native_id)
                if held is None:
                    if len(self._unclaimed) >= self.max_held_sessions:
                        self._drop(self._unclaimed.pop(next(iter(self._unclaimed))))
                    held = self._unclaimed[native_id] = []
                held.extend(items)
                if len(held) > self.max_held_items:
                    self._drop(held[:-self.max_held_items])
                    del held[:-self.max_held_items]

    def _drop(self, items: list[I]) -> None:
        for item in items:
            if isinstance(item, Req):
                self._reject(JsonRpcRequest(item.id, item.method, item.params))


class SharedLink(Generic[Init, I]):
    """One running incarnation of the shared process: its connection, router, handshake answer
    (``init``) and generation number (a restarted process gets a new link). Thread-safe."""

    def __init__(self, conn: JsonRpcConnection, router: Router[I], init: Init, generation: int,
                 where: dict[str, str], *, label: str, noun: str) -> None:
        self.conn = conn
        self.router = router
        self.init = init
        self.generation = generation
        self._where = where
        self._label = label
        self._noun = noun
        self._lock = threading.Lock()
        self._releases: dict[str, concurrent.futures.Future[msgspec.Raw]] = {}

    @property
    def exit_info(self) -> ExitInfo | None:
        """The process's ExitInfo once it exited (set before its pending requests fail)."""
        return self.conn.process.exit_info

    def exit_detail(self) -> str:
        info = self.exit_info
        if info is None:
            return f"{self._noun} is running"
        how = f"killed by signal {info.signal}" if info.signal else f"exit code {info.returncode}"
        return f"{self._noun} {info.name!r} exited ({how})"

    def register(self, native_id: str, ref: Mailbox) -> None:
        self.router.register(native_id, ref)

    def unregister(self, native_id: str, ref: Mailbox | None = None) -> None:
        self.router.unregister(native_id, ref)

    def call(self, method: str, params: object, *, timeout: float, thread_id: str | None = None) -> msgspec.Raw:
        """Send a request and wait for its raw result (inside ``blocking()``: on a dispatcher
        worker the pool runs other sessions meanwhile); errors become the PaddockError family
        naming this instance (and ``thread_id``)."""
        future = self.conn.request(method, params, timeout=timeout)
        try:
            with blocking():
                result: msgspec.Raw = future.result(timeout + 1.0)
                return result
        except (PaddockError, TimeoutError) as exc:
            raise self.error_of(method, exc, timeout, thread_id) from None

    def error_of(self, method: str, exc: BaseException, timeout: float | None, thread_id: str | None) -> BaseException:
        """A request's failure as the PaddockError naming this instance (and ``thread_id``)."""
        where = {**self._where, "thread_id": thread_id}
        if isinstance(exc, RequestError):
            return RequestError(method, exc.code, exc.detail, data=exc.data, **where)
        if isinstance(exc, (OperationTimeout, TimeoutError)):
            return OperationTimeout(f"{self._label} {method!r}", timeout or 0.0, **where)
        if isinstance(exc, ProcessError):
            return ProcessError(exc.detail, exc.exit_code, stderr_tail=exc.stderr_tail, **where)
        return exc

    def request_async(self, method: str, params: object, done: Callable[[msgspec.Raw | None, BaseException | None], None],
                      *, timeout: float | None = None) -> None:
        """Send a request; ``done(result, error)`` runs once on the reader thread (or at once
        if the connection is closed; on the timer thread when ``timeout`` expires first)."""
        future = self.conn.request(method, params, timeout=timeout)

        def finished(f: concurrent.futures.Future[msgspec.Raw]) -> None:
            error = f.exception()
            done(None if error is not None else f.result(), error)

        future.add_done_callback(finished)

    def release(self, native_id: str, method: str, params: object, *, timeout: float) -> None:
        """Send ``method``, the request that frees ``native_id``'s state in the process, without
        waiting for it; until the process answers it (or it fails), :meth:`released` of
        ``native_id`` waits for it. Thread: any."""
        future = self.conn.request(method, params, timeout=timeout)
        with self._lock:
            self._releases[native_id] = future

        def forget(f: concurrent.futures.Future[msgspec.Raw]) -> None:
            with self._lock:
                if self._releases.get(native_id) is f:
                    del self._releases[native_id]

        future.add_done_callback(forget)

    def released(self, native_id: str, timeout: float) -> bool:
        """Wait (inside ``blocking()``) for the pending :meth:`release` of ``native_id``: True
        when none is pending or the process answered it (a result or an error answer); False
        when it is still unanswered after ``timeout`` seconds, or failed unanswered (timed out,
        connection lost): the process may then still hold the native state. Thread: any."""
        with self._lock:
            future = self._releases.get(native_id)
        if future is None:
            return True
        try:
            with blocking():
                error = future.exception(timeout)
        except concurrent.futures.TimeoutError:
            return False
        return error is None or (isinstance(error, RequestError) and error.code is not None)

    def notify(self, method: str, params: object = None) -> None:
        self.conn.notify(method, params)

    def respond(self, request_id: int | str, result: object) -> None:
        self.conn.respond(request_id, result)

    def respond_error(self, request_id: int | str, code: int, message: str) -> None:
        self.conn.respond_error(request_id, code, message)


L = TypeVar("L", bound=SharedLink[Any, Any])


class SharedProcessAdapter(SessionAdapter[S], Generic[S, L]):
    """The shared-process model. A driver sets the class attributes naming its process and
    implements :meth:`_process_spec`, :meth:`_router`, :meth:`_handshake` (readiness) and
    :meth:`_start_session_actor`; :meth:`_prepare_start`, :meth:`_connected`,
    :meth:`_session_model` and :meth:`_on_warning` are optional hooks. ``L`` is the link type
    sessions reach the process through (``_get_link``)."""

    _await_restart = True
    _process_child: ClassVar[str] = "process"
    """The supervisor child id of the shared process."""
    _process_noun: ClassVar[str] = "the process"
    """What start errors call the process (``could not start <noun>``)."""
    _failed_noun: ClassVar[str] = "the process"
    """What the restart-limit error and the link's exit detail call the process."""
    _label: ClassVar[str] = "driver"
    """Names the process in handshake errors (``<label> handshake failed``)."""
    _protocol: ClassVar[str] = "driver"
    """Names the protocol in request timeouts (``<protocol> 'method'``)."""
    _error_prefix: ClassVar[str] = "driver"
    """The prefix of the ``<prefix>.restart_limit`` error code."""
    _jsonrpc_field: ClassVar[bool] = True
    """Whether the process's JSON-RPC messages carry ``"jsonrpc": "2.0"``."""

    def __init__(self, driver: str, instance_id: str, *, hub: HubHandle, request_timeout: float,
                 start_timeout: float, idle_timeout: float | None = None, tap: LineTap | None = None) -> None:
        super().__init__(driver, instance_id, hub=hub, request_timeout=request_timeout, idle_timeout=idle_timeout)
        self._start_timeout = start_timeout
        self._start_lock = threading.Lock()
        self._handshake_timeout = start_timeout
        self._scope: Scope | None = None
        self._link: L | None = None
        self._generation = 0
        self._sessions_ref: pykka.ActorRef[Any] | None = None
        self._proxies: ProxyCache[Any] = ProxyCache()  # the session supervisor's, made once per ref
        self.tap = tap
        """A line tap (e.g. ``paddock.testing.Recorder``) for the next process; set it before the
        first session."""

    # hooks ---------------------------------------------------------------------------------------

    def _prepare_start(self) -> None:
        """Before a new tree starts (caller's thread, under the start lock): e.g. write the home."""

    def _process_spec(self) -> ProcessSpec:
        """The shared process's spec (root supervisor thread, each (re)start)."""
        raise NotImplementedError

    def _router(self, reject: Callable[[JsonRpcRequest], None]) -> Router[Any]:
        raise NotImplementedError

    def _handshake(self, conn: JsonRpcConnection, left: Callable[[], float]) -> object:
        """The process's readiness (root supervisor thread): its handshake's answer, within
        ``left()`` seconds per request."""
        raise NotImplementedError

    def _connected(self, link: L) -> None:
        """The process is ready (root supervisor thread, under ``_lock``): e.g. read its catalog."""

    def _start_session_actor(self, record: SessionRecord[S], cctx: ChildContext) -> pykka.ActorRef[Any]:
        """Start the session actor of ``record`` (session supervisor thread)."""
        raise NotImplementedError

    def _session_model(self, input: StartSessionInput) -> str | None:
        return input.model

    def _initial_state(self, input: StartSessionInput) -> S:
        raise NotImplementedError

    def _on_warning(self, sessions: list[Mailbox], code: str, message: str, detail: dict[str, Any]) -> None:
        """Reader thread: a transport problem (malformed or over-long line) of the shared
        process, which names no session (``sessions``: those routed on it): published as the
        instance's ``runtime.warning``."""
        log.warning("%s instance %s: %s", self.driver, self.instance_id, message)
        self._hub.instance_warning(self.driver, self.instance_id, "transport." + code.rsplit(".", 1)[-1],
                                   message, detail)

    # the supervision tree ------------------------------------------------------------------------

    def _start_process(self, cctx: ChildContext) -> pykka.ActorRef[Any]:
        """ChildSpec factory (root supervisor thread): spawn the process and do its handshake;
        the child counts as started only after that."""
        holder: list[JsonRpcConnection] = []
        router = self._router(lambda req: holder[0].reject(req))
        deadline = time.monotonic() + self._handshake_timeout
        conn = JsonRpcConnection.open(
            self._process_spec(), handler=router.on_batch,  # type: ignore[arg-type]
            on_warning=lambda c, m, d: self._on_warning(router.refs(), c, m, d), tap=self.tap,
            jsonrpc_field=self._jsonrpc_field, context=cctx, timeout=self._handshake_timeout,
        )
        holder.append(conn)
        try:
            init = self._handshake(conn, lambda: max(0.1, deadline - time.monotonic()))
        except BaseException as exc:
            conn.close(timeout=2.0)
            if isinstance(exc, PaddockError):
                raise DriverError(self.driver, self.instance_id, f"{self._label} handshake failed: {exc}") from None
            if isinstance(exc, (TimeoutError, msgspec.DecodeError)):
                raise DriverError(self.driver, self.instance_id, f"{self._label} handshake failed: {exc!r}") from None
            raise
        with self._lock:
            self._generation += 1
            link = cast(L, SharedLink(conn, router, init, self._generation, self._where, label=self._protocol,
                                      noun=self._failed_noun))
            self._link = link
            self._connected(link)
        return conn.actor_ref

    def _ensure_started(self, timeout: float | None) -> None:
        # Not under self._lock: the supervisor thread takes it while starting the children.
        with self._start_lock:
            if self._closed:
                raise DriverError(self.driver, self.instance_id, "the instance is closed")
            scope = self._scope
            if scope is not None and scope.exit_reason is None:
                return
            self._prepare_start()
            limit = self._start_timeout if timeout is None else min(timeout, self._start_timeout)
            self._handshake_timeout = limit
            scope = Scope(
                [
                    ChildSpec(id=self._process_child, start=self._start_process, restart="permanent", shutdown=5.0,
                              start_timeout=limit + 5.0),
                    ChildSpec(id="sessions", start=self._start_sessions, restart="permanent", shutdown=10.0),
                ],
                name=f"instance:{self.instance_id}",
                strategy="rest_for_one",
                max_restarts=3,
                period=60.0,
                on_escalate=self._on_escalate,
                start_timeout=limit + 10.0,
            )
            try:
                scope.start()
            except PaddockError as exc:
                scope.close(timeout=5.0)
                raise DriverError(self.driver, self.instance_id, f"could not start {self._process_noun}: {exc}") from None
            finally:
                # Restarts (no caller waiting) get the configured start timeout.
                self._handshake_timeout = self._start_timeout
            self._scope = scope
        self._idle.arm()  # started for no session (e.g. a model list): it stops when idle too

    def _start_sessions(self, cctx: ChildContext) -> pykka.ActorRef[Any]:
        """ChildSpec factory (root supervisor thread): a session supervisor holding one actor
        per live session, so a restart brings every live session back."""
        with self._lock:
            specs = [self._session_spec(r) for r in self._records.values() if not r.closed]
        ref = Supervisor.start(specs, strategy="one_for_one", name=f"sessions:{self.instance_id}", context=cctx)
        self._sessions_ref = ref
        return ref

    def _session_spec(self, record: SessionRecord[S]) -> ChildSpec:
        def start(cctx: ChildContext) -> pykka.ActorRef[Any]:
            return self._start_session_actor(record, cctx)

        return ChildSpec(id=record.session.thread_id, start=start, restart="transient", shutdown=5.0)

    def _get_link(self) -> L | None:
        return self._link

    @property
    def link(self) -> L | None:
        """The current process incarnation (``None`` before the first session or while it
        restarts)."""
        return self._link

    def _on_escalate(self, error: BaseException) -> None:
        # Root supervisor thread: the restart budget is spent; every session is over.
        log.error("%s instance %s gave up: %s", self.driver, self.instance_id, error)
        with self._lock:
            for record in self._records.values():
                record.closed = True
                self._stopped[record.session.thread_id] = record.thread
                record.emitter.emit([
                    RuntimeErrorEvent(
                        driver=self.driver, instance_id=self.instance_id, thread_id=record.session.thread_id,
                        code=f"{self._error_prefix}.restart_limit",
                        message=f"{self._failed_noun} failed too often ({error}); the session is closed",
                    )
                ])
            self._records.clear()
            self._link = None

    # the process model ---------------------------------------------------------------------------

    def _start(self, input: StartSessionInput, timeout: float | None) -> Session:
        self._ensure_started(timeout)
        limit = timeout if timeout is not None else self._request_timeout + 5.0
        thread_id = input.thread_id

        def start(record: SessionRecord[S]) -> None:
            # The record is in the table already: a session supervisor restarted from here on
            # starts its actor itself (start_child then says it is a duplicate).
            deadline = time.monotonic() + limit
            where = {**self._where, "thread_id": thread_id}
            while True:
                sessions = self._live_sessions(deadline, "start_session", limit, thread_id)
                try:
                    with map_exceptions("start_session", limit, where=where):
                        self._proxies.of(sessions).start_child(self._session_spec(record)).get(
                            timeout=max(0.0, deadline - time.monotonic()))
                    return
                except ValueError:
                    return  # a concurrent restart of the session supervisor already started it
                except pykka.ActorDeadError:
                    continue  # the process died meanwhile: ask the restarted supervisor

        deadline = time.monotonic() + limit
        while True:
            link = self._link
            left = max(0.0, deadline - time.monotonic())
            try:
                return self._launch(input, self._session_model(input), self._initial_state(input), start,
                                    lambda: left)
            except (DriverError, ProcessError):
                # The process this start went to died under it (killed before it answered
                # session/new): the supervisor brings up a new one, so start there, within the
                # same deadline. A process that dies at every start ends in the restart budget.
                if link is None or link.exit_info is None or time.monotonic() >= deadline:
                    raise
                self._ensure_started(max(0.0, deadline - time.monotonic()))

    def _live_sessions(self, deadline: float, operation: str, limit: float,
                       thread_id: str | None) -> pykka.ActorRef[Any]:
        """The running session supervisor; while the shared process restarts (the supervisor
        is dead, the scope is bringing up a new one), wait for the new one until ``deadline``
        (:class:`OperationTimeout` naming the restart). :class:`DriverError` when the tree is
        gone: the instance closed, or it gave up restarting. Thread: the caller's."""
        while True:
            ref = self._sessions_ref
            if ref is not None and ref.is_alive():
                return ref
            scope = self._scope
            if self._closed or scope is None or scope.exit_reason is not None:
                why = "the instance is closed" if self._closed else f"{self._failed_noun} failed too often"
                raise DriverError(self.driver, self.instance_id, f"{operation} failed: {why}", thread_id=thread_id)
            if time.monotonic() >= deadline:
                raise OperationTimeout(f"{operation} (waiting for {self._failed_noun} to restart)", limit,
                                       **self._where, thread_id=thread_id)
            time.sleep(0.01)

    def _terminate(self, thread_id: str, timeout: float) -> None:
        # While the process restarts, the new session supervisor may have read the table before
        # the thread left it and start its actor again: stop it there too.
        deadline = time.monotonic() + timeout
        while self._sessions_ref is not None:
            try:
                ref = self._live_sessions(deadline, "stop_session", timeout, thread_id)
                self._proxies.of(ref).terminate_child(thread_id).get(timeout=max(0.0, deadline - time.monotonic()))
                return
            except pykka.ActorDeadError:
                continue
            except (PaddockError, pykka.Timeout):
                return  # best effort: the session is closed either way

    def _close_tree(self, deadline: float) -> None:
        with self._lock:
            scope, self._scope = self._scope, None
        if scope is not None:
            scope.close(deadline)
        self._link = None

    def _stop_idle_tree(self, still_idle: Callable[[], bool]) -> None:
        with self._start_lock:
            with self._lock:
                scope = self._scope
                if scope is None or scope.exit_reason is not None or not still_idle():
                    return
                self._scope, self._link, self._sessions_ref = None, None, None
            log.debug("%s instance %s: no session for %g s; stopping %s", self.driver, self.instance_id,
                      self._idle.timeout, self._failed_noun)
            scope.close(time.monotonic() + 10.0)
