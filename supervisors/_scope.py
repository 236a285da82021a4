"""Scope: a context manager around a root Supervisor; closing it stops everything under it."""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import time
import weakref
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Generic, Self, TypeVar, Unpack

import pykka

from paddock.contract import OperationTimeout, PaddockError, SessionClosedError, ValidationError

from ._child import ChildContext, ChildSpec, ExitReason, request_shutdown
from ._errors import map_exceptions
from ._supervisor import ChildInfo, Supervisor, SupervisorOptions

__all__ = ["Scope", "close_all_scopes", "exit_on_signals"]

log = logging.getLogger("paddock.supervisors")
A = TypeVar("A", bound=pykka.Actor)

_open_scopes: weakref.WeakSet[Scope] = weakref.WeakSet()
_open_lock = threading.Lock()


class Scope:
    """A root :class:`Supervisor` with a lifetime: ``with Scope(children) as scope: ...``.

    ``start()`` (or entering the ``with``) starts the children in order and raises the first
    start error (for example a :class:`ProcessError` naming the command and its stderr) after
    unwinding the children already started. ``close(deadline)`` stops every child in reverse
    order, each with its own shutdown policy but never past ``deadline``; when it returns, no
    actor of the tree runs and no process of the tree is alive. Scopes still open at interpreter
    exit are closed by an ``atexit`` hook. The other keywords (:class:`SupervisorOptions`: the
    restart policy, ``on_escalate``, ``on_child_exit``) configure the root :class:`Supervisor`.
    ``on_escalate(error)`` is called (on the supervisor's thread) if the root supervisor gives
    up; the scope is then closed. All methods are thread-safe and block the caller.
    """

    def __init__(
        self,
        children: Sequence[ChildSpec] = (),
        *,
        name: str = "scope",
        start_timeout: float = 120.0,
        close_timeout: float = 30.0,
        **root: Unpack[SupervisorOptions],
    ) -> None:
        self.name = name
        self._start_root = functools.partial(Supervisor.start, name=name, **root)
        self._children = list(children)
        self._start_timeout = start_timeout
        self._close_timeout = close_timeout
        self._ctx: ChildContext | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._proxies: ProxyCache[Supervisor] = ProxyCache()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def supervisor(self) -> pykka.ActorRef[Supervisor]:
        """The root supervisor's ref (raises if the scope was not started)."""
        if self._ctx is None or self._ctx.actor_ref is None:
            raise PaddockError(f"Scope {self.name!r} is not started")
        return self._ctx.actor_ref

    @property
    def exit_reason(self) -> ExitReason | None:
        """Why the root supervisor exited (None while it runs)."""
        return None if self._ctx is None else self._ctx.reason

    def start(self) -> Self:
        """Start the root supervisor and its children; raise the first start error."""
        with self._lock:
            if self._ctx is not None:
                return self
            ctx = ChildContext(self.name)
            self._ctx = ctx
            self._start_root(self._children, context=ctx)
        with _open_lock:
            _open_scopes.add(self)
        try:
            reason = ctx.wait_started(self._start_timeout)
        except TimeoutError:
            self.close(timeout=5.0)
            raise OperationTimeout(f"starting scope {self.name!r}", self._start_timeout) from None
        if reason is not None:
            self._closed = True
            with _open_lock:
                _open_scopes.discard(self)
            raise reason.error or PaddockError(f"Scope {self.name!r} stopped during start-up")
        return self

    def request_close(self, deadline: float) -> None:
        """Ask the root supervisor to stop everything under the scope by ``deadline`` (a
        ``time.monotonic()`` value) and return at once (thread: any): the request goes ahead of
        its queued messages, and from the moment it handles it no child is restarted. A deadline
        already passed kills the children at once. :meth:`close` waits for the end."""
        with self._lock:
            ctx = self._ctx
        if ctx is not None and ctx.actor_ref is not None and not ctx.exited:
            request_shutdown(ctx.actor_ref, deadline)

    def close(self, deadline: float | None = None, *, timeout: float | None = None) -> None:
        """Stop everything under the scope, in reverse start order, and wait for it.

        ``deadline`` is a ``time.monotonic()`` value; ``timeout`` (seconds) is the alternative;
        default: ``close_timeout`` from now. Children whose own shutdown is longer are cut at
        the deadline; anything still running then is killed. Idempotent. Called from a
        callback running on the root supervisor's thread (``on_escalate``, ``on_child_exit``) it
        only requests the close and returns.
        """
        if deadline is None:
            deadline = time.monotonic() + (self._close_timeout if timeout is None else timeout)
        with self._lock:
            ctx = self._ctx
            self._closed = True
        with _open_lock:
            _open_scopes.discard(self)
        if ctx is None or ctx.actor_ref is None:
            return
        if not ctx.exited:
            request_shutdown(ctx.actor_ref, deadline)
            if ctx.thread_ident == threading.get_ident():
                return  # called from the supervisor's own thread (a callback): cannot wait
            if ctx.wait_exit(max(0.0, deadline - time.monotonic()) + 1.0) is None:
                log.warning("scope %r: supervisor overran the deadline; killing its children", self.name)
                ctx.kill()
                ctx.wait_exit(3.0)

    # -- dynamic children ------------------------------------------------------------------

    def start_child(self, spec: ChildSpec, *, timeout: float | None = None) -> pykka.ActorRef[Any]:
        """Start a dynamic child under the root supervisor; raises its start error (a
        ``PaddockError``), :class:`ValidationError` for a duplicate id,
        :class:`OperationTimeout`, or :class:`SessionClosedError` once the scope is closed."""
        return self._call("start_child", timeout, spec)

    def terminate_child(self, child_id: str, *, timeout: float | None = None) -> bool:
        """Stop and forget a child; False if there is no such child."""
        return self._call("terminate_child", timeout, child_id)

    def which_children(self, *, timeout: float | None = None) -> list[ChildInfo]:
        return self._call("which_children", timeout)

    def _call(self, method: str, timeout: float | None, *args: Any) -> Any:
        """Ask the root supervisor, mapping pykka and stdlib failures into the PaddockError family."""
        operation = f"Scope({self.name}).{method}"
        try:
            with map_exceptions(operation, timeout, dead=SessionClosedError(None, f"scope {self.name!r} is closed")):
                return getattr(self._proxies.of(self.supervisor), method)(*args).get(timeout=timeout)
        except ValueError as exc:
            raise ValidationError(operation, str(exc)) from None


class ProxyCache(Generic[A]):
    """The proxy of the last actor ref asked for, made once per ref: a pykka proxy introspects the
    actor's attributes when made (a few hundred microseconds per call otherwise). Thread: any
    (the pair is replaced whole)."""

    def __init__(self) -> None:
        self._last: tuple[pykka.ActorRef[A], pykka.ActorProxy[A]] | None = None

    def of(self, ref: pykka.ActorRef[A]) -> pykka.ActorProxy[A]:
        last = self._last
        if last is None or last[0] is not ref:
            last = self._last = (ref, ref.proxy())
        return last[1]


def close_all_scopes(timeout: float = 10.0) -> None:
    """Close every open Scope (thread: caller). Registered with ``atexit``; call it from a
    SIGTERM handler for the same orderly shutdown."""
    deadline = time.monotonic() + timeout
    with _open_lock:
        scopes = list(_open_scopes)
    for scope in scopes:
        try:
            scope.close(deadline)
        except Exception:
            log.exception("closing scope %r at exit failed", scope.name)


atexit.register(close_all_scopes)


def exit_on_signals(signals: Sequence[int] | None = None, *, keep_custom: bool = False) -> None:
    """Turn SIGTERM and SIGHUP into ``SystemExit(128 + signum)`` in the main thread, so ``with``
    blocks unwind and open scopes close in order (thread: main thread only; elsewhere it does
    nothing). With ``keep_custom``, a signal whose handler the host already set is left alone."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return

    def _raise(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for sig in signals if signals is not None else (signal.SIGTERM, signal.SIGHUP):
        if keep_custom and signal.getsignal(sig) not in (signal.SIG_DFL, None):
            continue
        signal.signal(sig, _raise)
