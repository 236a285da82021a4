"""How a supervised actor reports to its parent: ChildSpec, ChildContext, ExitReason,
SupervisedActor.

Death reporting: a supervisor calls ``spec.start(context)`` with a fresh :class:`ChildContext`;
the factory must start a :class:`SupervisedActor` subclass and pass it ``context=context``.
SupervisedActor guarantees, whatever happens (clean stop, exception in a message handler, an
exception in ``on_start``, for which pykka calls neither ``on_failure`` nor ``on_stop``, or a
``BaseException`` such as ``SystemExit``, which pykka would turn into "stop every actor in the
process"), that ``context.report_exit(reason)`` is called exactly once, as the last act of the
actor's thread. A successful ``on_start`` is reported with ``context.report_started()``.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pykka
from pykka._envelope import Envelope

__all__ = [
    "ChildContext",
    "ChildSpec",
    "ExitReason",
    "RestartType",
    "SupervisedActor",
    "tell_urgent",
]

log = logging.getLogger("paddock.supervisors")

RestartType = Literal["permanent", "transient", "temporary"]


@dataclass(frozen=True, slots=True)
class ExitReason:
    """Why a child stopped. ``kind``: ``"normal"`` (it stopped itself), ``"shutdown"`` (its
    supervisor or owner stopped it) or ``"error"`` (abnormal: ``error`` holds the exception).
    Only ``"error"`` is abnormal in OTP terms, so only it restarts a ``transient`` child."""

    kind: Literal["normal", "shutdown", "error"]
    error: BaseException | None = None

    @property
    def abnormal(self) -> bool:
        return self.kind == "error"

    @classmethod
    def failed(cls, error: BaseException) -> ExitReason:
        return cls("error", error)


NORMAL = ExitReason("normal")
SHUTDOWN = ExitReason("shutdown")


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """One child of a :class:`Supervisor` (OTP child spec).

    ``start(context) -> ActorRef`` starts a :class:`SupervisedActor` with ``context=context``; it
    runs on the supervisor's thread and may block briefly. ``restart``: ``"permanent"`` always
    restarted, ``"transient"`` only after an abnormal exit, ``"temporary"`` never (and removed
    when it exits). ``shutdown``: seconds the child gets to stop (its ``on_shutdown`` receives the
    deadline) before the supervisor kills it, or ``"brutal_kill"``. ``start_timeout``: how long
    the supervisor waits for ``on_start`` to finish before treating the start as failed.
    """

    id: str
    start: Callable[[ChildContext], pykka.ActorRef[Any]]
    restart: RestartType = "permanent"
    shutdown: float | Literal["brutal_kill"] = 5.0
    start_timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.restart not in ("permanent", "transient", "temporary"):
            raise ValueError(f"restart must be permanent, transient or temporary: {self.restart!r}")
        if self.shutdown != "brutal_kill" and not (
            isinstance(self.shutdown, (int, float)) and self.shutdown >= 0
        ):
            raise ValueError(f"shutdown must be seconds >= 0 or 'brutal_kill': {self.shutdown!r}")


class ChildContext:
    """The link between one incarnation of a child and whoever supervises it (thread-safe).

    ``on_exit(context, reason)`` is called once, on the child's actor thread (for an actor on a
    dispatcher: the worker that runs its end), when it exits.
    Kill hooks (:meth:`add_kill_hook`) are plain callables the child registers to be run from
    the supervisor's thread when the child must die without its cooperation (``brutal_kill``,
    or a shutdown that overran its timeout); ProcessActor registers one that SIGKILLs its tree.
    """

    def __init__(
        self,
        child_id: str,
        on_exit: Callable[[ChildContext, ExitReason], None] | None = None,
    ) -> None:
        self.child_id = child_id
        self.actor_ref: pykka.ActorRef[Any] | None = None
        self.thread_ident: int | None = None  # the thread running the child (dispatched: its current worker)
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._started = threading.Event()
        self._done = threading.Event()
        self._reason: ExitReason | None = None
        self._kill_hooks: list[Callable[[], None]] = []

    def __repr__(self) -> str:
        return f"<ChildContext {self.child_id!r}>"

    @property
    def reason(self) -> ExitReason | None:
        """The exit reason once the child has exited, else None."""
        return self._reason

    @property
    def exited(self) -> bool:
        return self._done.is_set()

    def report_started(self) -> None:
        """Called by the child (its actor thread) once ``on_start`` has succeeded."""
        self._started.set()

    def report_exit(self, reason: ExitReason) -> None:
        """Called by the child once, when it has exited (later calls are ignored)."""
        with self._lock:
            if self._done.is_set():
                return
            self._reason = reason
            self._kill_hooks.clear()
            self._done.set()
        self._started.set()
        if self._on_exit is not None:
            try:
                self._on_exit(self, reason)
            except Exception:
                log.exception("exit notification for child %r failed", self.child_id)

    def add_kill_hook(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if not self._done.is_set():
                self._kill_hooks.append(hook)

    def kill(self) -> None:
        """Run the kill hooks (thread: caller, usually the supervisor)."""
        with self._lock:
            hooks = list(self._kill_hooks)
        for hook in hooks:
            try:
                hook()
            except Exception:
                log.exception("kill hook of child %r failed", self.child_id)

    def wait_started(self, timeout: float | None = None) -> ExitReason | None:
        """Block until the child started or exited. Returns None if it runs, its exit reason
        if it exited first; raises TimeoutError when neither happened within ``timeout``."""
        if not self._started.wait(timeout):
            raise TimeoutError(f"child {self.child_id!r} did not start within {timeout} s")
        return self._reason

    def wait_exit(self, timeout: float | None = None) -> ExitReason | None:
        """Block until the child exited; its reason, or None on timeout."""
        self._done.wait(timeout)
        return self._reason


@dataclass(frozen=True, slots=True)
class _Shutdown:
    deadline: float


class _Contained(Exception):
    """A BaseException raised by a handler, wrapped so pykka treats it as an ordinary failure."""


def tell_urgent(ref: pykka.ActorRef[Any], message: Any) -> bool:
    """Put ``message`` at the FRONT of the actor's inbox (``tell`` queues behind everything).
    Returns False if the actor is dead. Thread: any."""
    if not ref.is_alive():
        return False
    inbox = ref.actor_inbox
    urgent = getattr(inbox, "put_urgent", None)
    if urgent is not None:  # a dispatched actor's inbox (paddock.actors)
        urgent(Envelope(message))
        return True
    if not isinstance(inbox, queue.Queue):
        ref.tell(message)
        return True
    with inbox.mutex:
        inbox.queue.appendleft(Envelope(message))
        inbox.unfinished_tasks += 1
        inbox.not_empty.notify()
    return True


def request_shutdown(ref: pykka.ActorRef[Any], deadline: float) -> bool:
    """Ask a SupervisedActor to shut down ahead of its queued messages; False if it is dead."""
    return tell_urgent(ref, _Shutdown(deadline))


class SupervisedActor(pykka.ThreadingActor):
    """Base for every actor that can live under a Supervisor (or be used on its own).

    Runs on a daemon thread (so a forgotten actor never keeps the interpreter alive; Scopes close
    on atexit). Hooks, all on the actor's own thread:

    - ``on_shutdown(deadline)``: the supervisor or owner is stopping this actor; release resources
      before ``deadline`` (a ``time.monotonic()`` value). ``on_stop`` runs right after.
    - ``on_terminate(reason)``: runs exactly once at the very end, in every case, including a
      failed ``on_start``; the place for cleanup that must never be skipped.

    Call :meth:`exit` from the actor thread to stop with a given reason (e.g. a process it owns
    exited with an error).
    """

    use_daemon_thread = True

    def __init__(self, *, context: ChildContext | None = None) -> None:
        super().__init__()
        self.context = context
        self._exit_kind: Literal["normal", "shutdown"] = "normal"
        self._exit_error: BaseException | None = None
        if context is not None:
            context.actor_ref = self.actor_ref

    def on_shutdown(self, deadline: float) -> None:
        """Stop owned resources before ``deadline`` (monotonic). Thread: this actor."""

    def on_terminate(self, reason: ExitReason) -> None:
        """Last cleanup, always called once. Thread: this actor."""

    def exit(self, reason: ExitReason) -> None:
        """Stop now with ``reason`` (thread: this actor). Queued messages are not processed."""
        if reason.kind == "error":
            self._exit_error = reason.error or RuntimeError("child exited with an error")
        else:
            self._exit_kind = reason.kind
        self._stop()

    # -- pykka internals, pinned to pykka 4.x ------------------------------------------------

    def _actor_loop(self) -> None:
        if self.context is not None:
            self.context.thread_ident = threading.get_ident()
        try:
            super()._actor_loop()
        except BaseException as exc:
            self._exit_error = self._exit_error or exc
            try:
                pykka.ActorRegistry.unregister(self.actor_ref)
            finally:
                self.actor_stopped.set()
        finally:
            self._finish()

    def _actor_loop_setup(self) -> None:
        try:
            self.on_start()
        except BaseException:
            self._handle_failure(*sys.exc_info())
            return
        if self.context is not None:
            self.context.report_started()

    def _handle_receive(self, message: Any) -> Any:
        if isinstance(message, _Shutdown):
            self._exit_kind = "shutdown"
            try:
                self.on_shutdown(message.deadline)
            except Exception:
                log.exception("on_shutdown of %s failed", self)
            return self._stop()
        try:
            return super()._handle_receive(message)
        except Exception:
            raise
        except BaseException as exc:
            raise _Contained(repr(exc)) from exc

    def _handle_failure(self, exception_type, exception_value, traceback) -> None:  # type: ignore[no-untyped-def]
        if self._exit_error is None and exception_value is not None:
            cause = exception_value
            if isinstance(cause, _Contained) and cause.__cause__ is not None:
                cause = cause.__cause__
            self._exit_error = cause
        super()._handle_failure(exception_type, exception_value, traceback)

    def _finish(self) -> None:
        reason = (
            ExitReason.failed(self._exit_error)
            if self._exit_error is not None
            else ExitReason(self._exit_kind)
        )
        try:
            self.on_terminate(reason)
        except BaseException:
            log.exception("on_terminate of %s failed", self)
        if self.context is not None:
            self.context.report_exit(reason)
