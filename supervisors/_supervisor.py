"""The Supervisor actor: OTP strategies, restart intensity, backoff, ordered start and stop."""

from __future__ import annotations

import collections
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import pykka

from paddock.contract import OperationTimeout, PaddockError

from ._child import (
    ChildContext,
    ChildSpec,
    ExitReason,
    RestartType,
    SupervisedActor,
    request_shutdown,
)

__all__ = ["ChildInfo", "RestartLimitExceeded", "Strategy", "Supervisor", "SupervisorOptions"]

log = logging.getLogger("paddock.supervisors")

Strategy = Literal["one_for_one", "one_for_all", "rest_for_one"]

_STOP_MARGIN = 1.0


class RestartLimitExceeded(PaddockError):
    """Raised (as the exit reason of a supervisor) when its children needed more than
    ``max_restarts`` restarts within ``period`` seconds; the supervisor stopped all its children
    and failed upward. ``__cause__`` is the last child's error."""

    def __init__(
        self,
        supervisor: str,
        child_id: str,
        max_restarts: int,
        period: float,
        last_error: BaseException | None = None,
    ) -> None:
        self.supervisor = supervisor
        self.child_id = child_id
        self.max_restarts = max_restarts
        self.period = period
        self.last_error = last_error
        text = (
            f"Supervisor {supervisor!r} gave up: child {child_id!r} needed more than "
            f"{max_restarts} restarts within {period:g} s"
        )
        if last_error is not None:
            text += f"; its last error: {last_error}"
        super().__init__(text)


@dataclass(frozen=True, slots=True)
class ChildInfo:
    """One row of :meth:`Supervisor.which_children`. ``state``: ``"running"``, ``"restarting"``
    (waiting for its backoff) or ``"stopped"`` (a transient child that exited normally)."""

    id: str
    ref: pykka.ActorRef[Any] | None
    restart: RestartType
    state: Literal["running", "restarting", "stopped"]


class _Child:
    __slots__ = ("ctx", "spec", "state")

    def __init__(self, spec: ChildSpec) -> None:
        self.spec = spec
        self.ctx: ChildContext | None = None
        self.state: Literal["running", "restarting", "stopped"] = "stopped"


class _ChildExited:
    __slots__ = ("ctx", "reason")

    def __init__(self, ctx: ChildContext, reason: ExitReason) -> None:
        self.ctx = ctx
        self.reason = reason


class _Restart:
    __slots__ = ("ids", "token")

    def __init__(self, token: int, ids: list[str]) -> None:
        self.token = token
        self.ids = ids


class SupervisorOptions(TypedDict, total=False):
    """The restart policy and callbacks of a :class:`Supervisor` by keyword (defaults: its
    own), for what builds one on its caller's behalf (:class:`Scope`'s root)."""

    strategy: Strategy
    max_restarts: int
    period: float
    backoff_base: float
    backoff_cap: float
    backoff_jitter: float
    on_escalate: Callable[[BaseException], None] | None
    on_child_exit: Callable[[str, ExitReason, bool], None] | None


class Supervisor(SupervisedActor):
    """A pykka actor supervising child actors the way an OTP supervisor does.

    - Children (``ChildSpec``) start in order in ``on_start``; if one fails to start, the ones
      already started are stopped in reverse order and the supervisor's own start fails with
      that child's error (so its parent or Scope sees e.g. the ProcessError naming the command).
    - ``strategy``: ``one_for_one`` restarts the child that died; ``one_for_all`` stops the others
      (reverse order) and restarts all; ``rest_for_one`` stops the children started after it
      and restarts it and them. ``temporary`` children are never restarted (and are removed
      when they exit or are stopped by a sibling's restart); ``transient`` ones only after an
      abnormal exit.
    - Intensity: more than ``max_restarts`` restarts within ``period`` seconds stops all
      children (reverse order) and the supervisor exits with :class:`RestartLimitExceeded`,
      which its parent handles like any child error; at the root ``on_escalate(error)`` is
      called (on this actor's thread).
    - Each restart waits ``min(backoff_cap, backoff_base * 2**(n-1))`` seconds, ``n`` being the
      number of restarts inside the window, scaled by a random factor in
      ``[1 - backoff_jitter, 1 + backoff_jitter]``; the wait uses a timer, not this thread.

    - ``on_child_exit(child_id, reason, restarting)`` is called (on this actor's thread) for
      every child that exits on its own, once the decision is taken: ``restarting`` tells
      whether it will be restarted. Children it stops itself are not reported. Drivers turn
      this into ``session.exited`` with ``recoverable``.

    Every public method runs on this actor's thread; call them through ``ref.proxy()`` or the
    :class:`Scope` helpers. Defaults suit agent processes: 3 restarts in 60 s, backoff 0.5 s
    doubling to 30 s.
    """

    def __init__(
        self,
        children: Sequence[ChildSpec] = (),
        *,
        strategy: Strategy = "one_for_one",
        max_restarts: int = 3,
        period: float = 60.0,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        backoff_jitter: float = 0.2,
        name: str = "supervisor",
        on_escalate: Callable[[BaseException], None] | None = None,
        on_child_exit: Callable[[str, ExitReason, bool], None] | None = None,
        context: ChildContext | None = None,
    ) -> None:
        super().__init__(context=context)
        if strategy not in ("one_for_one", "one_for_all", "rest_for_one"):
            raise ValueError(f"unknown strategy {strategy!r}")
        ids = [spec.id for spec in children]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate child ids in {ids}")
        self.name = name
        self.strategy = strategy
        self.max_restarts = max_restarts
        self.period = period
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.backoff_jitter = backoff_jitter
        self._on_escalate = on_escalate
        self._on_child_exit = on_child_exit
        self._children: list[_Child] = [_Child(spec) for spec in children]
        self._restarts: collections.deque[float] = collections.deque()
        self._token = 0
        self._timers: list[threading.Timer] = []
        self._stopping = False
        self._running = False
        self._starting: ChildContext | None = None
        if context is not None:
            context.add_kill_hook(self._kill_all)

    # -- lifecycle -------------------------------------------------------------------------

    def on_start(self) -> None:
        started: list[_Child] = []
        for child in list(self._children):
            try:
                self._start(child)
            except BaseException:
                self._stopping = True
                for done in reversed(started):
                    self._terminate(done)
                raise
            started.append(child)
        self._running = True

    def on_shutdown(self, deadline: float) -> None:
        self._shutdown(deadline)

    def on_stop(self) -> None:
        self._shutdown(None)

    def on_failure(self, exception_type, exception_value, traceback) -> None:  # type: ignore[no-untyped-def]
        self._shutdown(None)

    def on_terminate(self, reason: ExitReason) -> None:
        self._cancel_timers()
        if reason.abnormal and self._running and self._on_escalate is not None:
            try:
                self._on_escalate(reason.error or RuntimeError("supervisor failed"))
            except Exception:
                log.exception("on_escalate of %r failed", self.name)

    # -- public API (actor thread) -----------------------------------------------------------

    def start_child(self, spec: ChildSpec) -> pykka.ActorRef[Any]:
        """Add and start a dynamic child; raises its start error (and forgets it) on failure."""
        if self._stopping:
            raise PaddockError(f"Supervisor {self.name!r} is stopping; it starts no new child")
        if any(c.spec.id == spec.id for c in self._children):
            raise ValueError(f"supervisor {self.name!r} already has a child {spec.id!r}")
        child = _Child(spec)
        self._children.append(child)
        try:
            self._start(child)
        except BaseException:
            self._children.remove(child)
            raise
        assert child.ctx is not None and child.ctx.actor_ref is not None
        return child.ctx.actor_ref

    def terminate_child(self, child_id: str) -> bool:
        """Stop a child (its shutdown policy applies) and forget its spec. False if unknown."""
        for child in self._children:
            if child.spec.id == child_id:
                self._terminate(child)
                self._children.remove(child)
                return True
        return False

    def which_children(self) -> list[ChildInfo]:
        """The children in start order."""
        return [
            ChildInfo(
                id=c.spec.id,
                ref=c.ctx.actor_ref if c.ctx is not None and c.state == "running" else None,
                restart=c.spec.restart,
                state=c.state,
            )
            for c in self._children
        ]

    # -- messages --------------------------------------------------------------------------

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _ChildExited):
            return self._handle_exit(message.ctx, message.reason)
        if isinstance(message, _Restart):
            return self._handle_restart(message)
        return super().on_receive(message)

    def _notify(self, ctx: ChildContext, reason: ExitReason) -> None:
        # Runs on the exiting child's thread.
        try:
            self.actor_ref.tell(_ChildExited(ctx, reason))
        except pykka.ActorDeadError:
            pass

    def _handle_exit(self, ctx: ChildContext, reason: ExitReason) -> None:
        child = next((c for c in self._children if c.ctx is ctx), None)
        if child is None or self._stopping:
            return  # a stale incarnation, or one we stopped on purpose
        child.ctx = None
        child.state = "stopped"
        if reason.abnormal:
            log.warning("supervisor %r: child %r failed: %r", self.name, child.spec.id, reason.error)
        restart = child.spec.restart
        if restart == "temporary":
            self._children.remove(child)
            restarting = False
        elif restart == "transient" and not reason.abnormal:
            restarting = False
        else:
            restarting = self._restart_after_failure(child, reason)
        self._notify_exit(child, reason, restarting)

    def _notify_exit(self, child: _Child, reason: ExitReason, restarting: bool) -> None:
        """Tell ``on_child_exit`` (on the supervisor's thread); a failing callback is logged."""
        if self._on_child_exit is not None:
            try:
                self._on_child_exit(child.spec.id, reason, restarting)
            except Exception:
                log.exception("on_child_exit of %r failed", self.name)

    def _restart_after_failure(self, child: _Child, reason: ExitReason) -> bool:
        now = time.monotonic()
        self._restarts.append(now)
        while self._restarts and self._restarts[0] < now - self.period:
            self._restarts.popleft()
        if len(self._restarts) > self.max_restarts:
            self._escalate(child, reason)
            return False
        index = self._children.index(child)
        if self.strategy == "one_for_one":
            group = [child]
        elif self.strategy == "one_for_all":
            group = list(self._children)
        else:
            group = self._children[index:]
        for other in reversed(group):
            if other is not child:
                self._terminate(other)
        for other in group:
            if other.spec.restart == "temporary" and other is not child:
                self._children.remove(other)
        ids = [c.spec.id for c in group if c in self._children]
        for c in self._children:
            if c.spec.id in ids:
                c.state = "restarting"
        n = len(self._restarts)
        delay = min(self.backoff_cap, self.backoff_base * 2 ** (n - 1))
        delay *= random.uniform(1 - self.backoff_jitter, 1 + self.backoff_jitter)
        delay = min(delay, self.backoff_cap)
        self._token += 1
        message = _Restart(self._token, ids)
        if delay <= 0:
            self._handle_restart(message)
            return True
        timer = threading.Timer(delay, self._tell_restart, args=(message,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()
        return True

    def _tell_restart(self, message: _Restart) -> None:
        try:
            self.actor_ref.tell(message)
        except pykka.ActorDeadError:
            pass

    def _handle_restart(self, message: _Restart) -> None:
        self._timers = [t for t in self._timers if t.is_alive()]
        if message.token != self._token or self._stopping:
            return
        for child in list(self._children):
            if child.spec.id not in message.ids or child.state != "restarting":
                continue
            try:
                self._start(child)
            except Exception as exc:
                log.warning(
                    "supervisor %r: restart of %r failed: %r", self.name, child.spec.id, exc
                )
                child.state = "stopped"
                reason = ExitReason.failed(exc)
                restarting = self._restart_after_failure(child, reason)
                self._notify_exit(child, reason, restarting)
                return

    def _escalate(self, child: _Child, reason: ExitReason) -> None:
        error = RestartLimitExceeded(
            self.name, child.spec.id, self.max_restarts, self.period, reason.error
        )
        error.__cause__ = reason.error
        log.error("%s", error)
        self._shutdown(None)
        self.exit(ExitReason.failed(error))

    # -- helpers ---------------------------------------------------------------------------

    def _start(self, child: _Child) -> None:
        spec = child.spec
        ctx = ChildContext(spec.id, self._notify)
        self._starting = ctx
        try:
            self._start_ctx(child, ctx)
        finally:
            self._starting = None

    def _start_ctx(self, child: _Child, ctx: ChildContext) -> None:
        spec = child.spec
        ref = spec.start(ctx)
        if ctx.actor_ref is None:
            if isinstance(ref, pykka.ActorRef):
                ref.stop(block=False)
            raise TypeError(
                f"ChildSpec {spec.id!r}: start() must start a SupervisedActor with context=ctx"
            )
        try:
            reason = ctx.wait_started(spec.start_timeout)
        except TimeoutError:
            ctx.kill()
            request_shutdown(ctx.actor_ref, time.monotonic())
            raise OperationTimeout(f"starting child {spec.id!r}", spec.start_timeout) from None
        if reason is not None:
            error = reason.error
            if error is None:
                error = PaddockError(f"Child {spec.id!r} stopped during start-up")
            raise error
        child.ctx = ctx
        child.state = "running"

    def _terminate(self, child: _Child, deadline: float | None = None) -> None:
        ctx, child.ctx = child.ctx, None
        child.state = "stopped"
        if ctx is None or ctx.exited or ctx.actor_ref is None:
            return
        shutdown = child.spec.shutdown
        now = time.monotonic()
        if shutdown == "brutal_kill":
            ctx.kill()
            request_shutdown(ctx.actor_ref, now)
            ctx.wait_exit(_STOP_MARGIN * 2)
            return
        child_deadline = now + float(shutdown)
        if deadline is not None:
            child_deadline = min(child_deadline, deadline)
        request_shutdown(ctx.actor_ref, child_deadline)
        if ctx.wait_exit(max(0.0, child_deadline - time.monotonic()) + _STOP_MARGIN) is None:
            log.warning("supervisor %r: child %r overran its shutdown; killing it", self.name, child.spec.id)
            ctx.kill()
            if ctx.wait_exit(_STOP_MARGIN * 2) is None:
                log.error("supervisor %r: child %r did not stop", self.name, child.spec.id)

    def _shutdown(self, deadline: float | None) -> None:
        self._stopping = True
        self._cancel_timers()
        children = list(reversed(self._children))
        for i, child in enumerate(children):
            if deadline is not None and time.monotonic() >= deadline:
                # Past the deadline order no longer matters: kill the rest concurrently.
                for rest in children[i:]:
                    ctx = rest.ctx
                    if ctx is not None and ctx.actor_ref is not None and not ctx.exited:
                        ctx.kill()
                        request_shutdown(ctx.actor_ref, deadline)
                for rest in children[i:]:
                    self._terminate(rest, deadline)
                return
            self._terminate(child, deadline)

    def _cancel_timers(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers = []

    def _kill_all(self) -> None:
        # Kill hook: runs on the caller's thread when this supervisor must die uncooperatively.
        starting = self._starting
        if starting is not None:
            starting.kill()
        for child in list(self._children):
            ctx = child.ctx
            if ctx is not None:
                ctx.kill()
