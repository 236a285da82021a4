"""Many actors on few threads: a bounded, elastic pool of worker threads (:class:`Dispatcher`)
running the message loops of :class:`DispatchActor` subclasses, as Akka dispatchers and Erlang
schedulers do.

A :class:`DispatchActor` is a proper ``pykka.Actor``: ``ActorRef.tell``/``ask``/``proxy``/
``stop`` work unchanged and it keeps pykka's guarantees. It handles one message at a time, in
inbox order; ``on_start`` runs before the first message, ``on_stop`` after the last one and
``on_failure`` after an unhandled exception of a ``tell``-ed message, all with pykka's meaning.
What changes is the thread: each of those hooks and every handler runs on *some* worker thread of
the actor's dispatcher, not on a thread of its own, and two consecutive messages may run on two
different workers (never at the same time). ``__init__`` runs on the thread that calls
``start()``, as with pykka.

An actor that has messages is queued once on its dispatcher's run queue; a worker takes it and
handles up to ``throughput`` messages before putting it back at the tail (so a busy actor cannot
starve the others), or leaves it idle when its inbox is empty. An idle actor costs no thread and
no wake-up, only its inbox.

Handlers must not block. Where one still has to wait (a reply from a process, ``ask`` of another
actor), it waits inside :func:`blocking` (``DispatchActor`` futures and ``Dispatcher.blocking``
do so themselves): the worker is counted as blocked and, when other actors are waiting to run,
the pool starts a compensating worker at once, so a stuck handler holds one thread and never
delays another actor. A handler that blocks without saying so is caught by the pool's monitor
after ``stall`` seconds and compensated the same way. Workers beyond ``workers`` retire after
``keepalive`` idle seconds; ``max_workers`` bounds the pool (past it, work waits).

Unlike ``ThreadingActor``, a dispatched actor is not listed in ``pykka.ActorRegistry`` (a list:
its register/unregister cost grows with the number of actors); the dispatcher counts its live
actors (:attr:`Dispatcher.actors`). A message put into the inbox of an actor that has finished
is answered with ``ActorDeadError`` at once instead of never.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pykka
from pykka import ActorDeadError, messages
from pykka._envelope import Envelope
from pykka._threading import ThreadingFuture

from paddock.supervisors import SupervisedActor

__all__ = ["DispatchActor", "Dispatcher", "Reply", "SupervisedDispatchActor", "blocking", "default_dispatcher", "on_worker"]

log = logging.getLogger("paddock.actors")

_local = threading.local()


class _Worker:
    __slots__ = ("blocked", "since")

    def __init__(self) -> None:
        self.since: float | None = None  # monotonic start of the slice it runs, None when idle
        self.blocked = False  # inside blocking() or counted as stalled by the monitor


class Dispatcher:
    """A pool of worker threads that runs :class:`DispatchActor` message loops.

    ``workers``: threads that run actors (started on demand, kept while the dispatcher lives).
    ``max_workers``: the hard bound, compensating workers for blocked handlers included.
    ``throughput``: messages one actor handles before the worker moves on to the next actor.
    ``stall``: seconds after which a handler that did not declare its wait is counted blocked.
    ``keepalive``: idle seconds after which a worker above ``workers`` retires.
    Thread-safe; the pool's threads are daemon threads named ``{name}-{n}``.
    """

    def __init__(
        self,
        name: str = "paddock-dispatch",
        *,
        workers: int | None = None,
        max_workers: int = 256,
        throughput: int = 16,
        stall: float = 0.1,
        keepalive: float = 5.0,
    ) -> None:
        if workers is None:
            workers = max(2, min(8, os.cpu_count() or 2))
        if workers < 1 or max_workers < workers:
            raise ValueError(f"need 1 <= workers <= max_workers (got {workers}, {max_workers})")
        self.name = name
        self.workers = workers
        self.max_workers = max_workers
        self.throughput = max(1, throughput)
        self.stall = stall
        self.keepalive = keepalive
        self._cond = threading.Condition(threading.Lock())
        self._ready: collections.deque[DispatchActor] = collections.deque()
        self._all: list[_Worker] = []
        self._idle = 0
        self._waking = 0  # notified idle workers that have not taken work yet
        self._blocked = 0
        self._seq = 0
        self._monitor: threading.Thread | None = None
        self._actors = 0
        self._peak = 0

    def __repr__(self) -> str:
        return f"<Dispatcher {self.name} threads={len(self._all)} actors={self._actors}>"

    # -- introspection (any thread) -----------------------------------------------------------

    @property
    def threads(self) -> int:
        """Worker threads alive now."""
        return len(self._all)

    @property
    def peak_threads(self) -> int:
        """The most worker threads alive at once so far."""
        return self._peak

    @property
    def actors(self) -> int:
        """Actors started on this dispatcher that have not finished."""
        return self._actors

    # -- scheduling ---------------------------------------------------------------------------

    def _schedule(self, actor: DispatchActor) -> None:
        # Any thread: the actor has work and is not queued (its inbox guarantees that).
        with self._cond:
            self._ready.append(actor)
            if self._idle > self._waking:
                self._waking += 1
                self._cond.notify()
            else:
                self._grow()

    def _grow(self) -> None:
        # Under _cond: start a worker if fewer than `workers` are runnable (not blocked).
        running = len(self._all) - self._blocked
        if running < self.workers and len(self._all) < self.max_workers:
            worker = _Worker()
            self._all.append(worker)
            self._peak = max(self._peak, len(self._all))
            self._seq += 1
            thread = threading.Thread(target=self._work, args=(worker,), name=f"{self.name}-{self._seq}", daemon=True)
            thread.start()
            if self._monitor is None:
                self._monitor = threading.Thread(target=self._watch, name=f"{self.name}-monitor", daemon=True)
                self._monitor.start()

    def _work(self, worker: _Worker) -> None:
        _local.worker = (self, worker)
        cond = self._cond
        while True:
            with cond:
                while not self._ready:
                    self._idle += 1
                    surplus = len(self._all) - self._blocked > self.workers
                    notified = cond.wait(self.keepalive if surplus else None)
                    self._idle -= 1
                    if notified and self._waking:
                        self._waking -= 1
                    if not self._ready and not notified and len(self._all) - self._blocked > self.workers:
                        self._all.remove(worker)
                        return
                actor = self._ready.popleft()
                worker.since = time.monotonic()
            try:
                actor._dispatch_slice(self.throughput)
            except BaseException:  # never lose a worker; the actor handled what it could
                log.exception("dispatcher %s: actor slice of %s failed", self.name, actor)
            with cond:
                worker.since = None
                if worker.blocked:  # counted stalled by the monitor: runnable again
                    worker.blocked = False
                    self._blocked -= 1

    def _watch(self) -> None:
        # Monitor thread: a handler running longer than `stall` while actors wait for a worker is
        # treated as blocked (compensated). Sleeps while nothing waits.
        period = max(0.005, self.stall / 2)
        while True:
            time.sleep(period)
            with self._cond:
                if not self._ready or self._idle > self._waking:
                    continue
                now = time.monotonic()
                for worker in self._all:
                    since = worker.since
                    if since is not None and not worker.blocked and now - since > self.stall:
                        worker.blocked = True
                        self._blocked += 1
                self._grow()

    @contextlib.contextmanager
    def _blocking_section(self, worker: _Worker) -> Iterator[None]:
        with self._cond:
            counted = not worker.blocked
            if counted:
                worker.blocked = True
                self._blocked += 1
                if self._ready and self._idle <= self._waking:
                    self._grow()
        try:
            yield
        finally:
            if counted:
                with self._cond:
                    if worker.blocked:
                        worker.blocked = False
                        self._blocked -= 1

    def _started(self) -> None:
        with self._cond:
            self._actors += 1

    def _finished(self) -> None:
        with self._cond:
            self._actors -= 1


_default: Dispatcher | None = None
_default_lock = threading.Lock()


def default_dispatcher() -> Dispatcher:
    """The process-wide dispatcher that :class:`DispatchActor` subclasses use unless they set
    ``dispatcher`` (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Dispatcher()
        return _default


@contextlib.contextmanager
def blocking() -> Iterator[None]:
    """Mark a wait (any thread). On a dispatcher worker, the worker counts as blocked for the
    duration, so the pool runs other actors on another thread meanwhile; elsewhere a no-op."""
    current = getattr(_local, "worker", None)
    if current is None:
        yield
        return
    with current[0]._blocking_section(current[1]):
        yield


def on_worker() -> bool:
    """Whether the calling thread is a dispatcher worker."""
    return getattr(_local, "worker", None) is not None


class DispatchFuture(ThreadingFuture[Any]):
    """A ``ThreadingFuture`` whose ``get`` waits inside :func:`blocking` when it has to wait."""

    def get(self, *, timeout: float | None = None) -> Any:
        if self._result is not None or getattr(_local, "worker", None) is None:
            return super().get(timeout=timeout)
        with blocking():
            return super().get(timeout=timeout)


class _Inbox:
    """A dispatched actor's mailbox: a deque under a lock, plus whether the actor is queued to
    run (so it is on the run queue at most once) and whether it has finished."""

    __slots__ = ("_actor", "_closed", "_items", "_lock", "_scheduled")

    def __init__(self) -> None:
        self._items: collections.deque[Envelope[Any]] = collections.deque()
        self._lock = threading.Lock()
        self._scheduled = True  # until the start slice has run, puts only queue
        self._closed = False
        self._actor: DispatchActor | None = None

    def put(self, envelope: Envelope[Any], /) -> None:
        self._put(envelope, False)

    def put_urgent(self, envelope: Envelope[Any]) -> None:
        """Put ``envelope`` ahead of every queued message (see ``tell_urgent``)."""
        self._put(envelope, True)

    def _put(self, envelope: Envelope[Any], urgent: bool) -> None:
        with self._lock:
            if not self._closed:
                if urgent:
                    self._items.appendleft(envelope)
                else:
                    self._items.append(envelope)
                if self._scheduled:
                    return
                self._scheduled = True
                actor = self._actor
            else:
                actor = None
        if actor is not None:
            actor._dispatcher_()._schedule(actor)
        else:
            _reply_dead(envelope, self._actor)

    def get(self) -> Envelope[Any]:
        with self._lock:
            return self._items.popleft()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


def _reply_dead(envelope: Envelope[Any], actor: Any) -> None:
    if envelope.reply_to is None:
        return
    if isinstance(envelope.message, messages._ActorStop):
        envelope.reply_to.set(None)
        return
    error = ActorDeadError(f"{actor} stopped before handling the message")
    try:
        envelope.reply_to.set_exception(exc_info=(ActorDeadError, error, None))
    except Exception:  # already answered
        pass


class DispatchActor(pykka.Actor):
    """A pykka actor whose message loop runs on a shared :class:`Dispatcher` (see the module
    docstring). Subclass it like ``pykka.ThreadingActor``; set the class attribute
    ``dispatcher`` to run on a dispatcher of your own.

    Threads: ``__init__`` runs on the caller of ``start()``; ``on_start``, every handler,
    ``on_stop`` and ``on_failure`` run on a worker of the dispatcher, one at a time.

    A handler that must wait for something (an agent's answer) does not wait: it calls
    :meth:`defer_reply` and returns; whoever learns the answer later (usually a message told to
    this actor) completes the :class:`Reply`. While it waits, the actor can :meth:`stash`
    messages that must not run yet and :meth:`unstash_all` them, in order, ahead of its inbox
    (Akka's ``Stash``; OTP's ``{noreply, State}`` with ``gen_server:reply/2``). Replies still
    open when the actor finishes are answered ``ActorDeadError``.

    Loop hooks for subclasses that wrap the loop (as ``SupervisedActor`` does for threads):
    ``_loop_enter()`` before each slice (worker thread), ``_loop_crashed(exc)`` when a
    ``BaseException`` escapes pykka's own handling, ``_loop_exit()`` once, after the teardown.
    """

    dispatcher: ClassVar[Dispatcher | None] = None

    actor_inbox: _Inbox  # type: ignore[assignment]

    @staticmethod
    def _create_actor_inbox() -> _Inbox:  # type: ignore[override]
        return _Inbox()

    @staticmethod
    def _create_future() -> pykka.Future[Any]:
        return DispatchFuture()

    @classmethod
    def start(cls, *args: Any, **kwargs: Any) -> pykka.ActorRef[Any]:  # type: ignore[override]
        """Build the actor (on this thread) and queue its start; returns its ref at once."""
        obj = cls(*args, **kwargs)
        assert obj.actor_ref is not None, "Actor.__init__() was not called"
        obj._start_actor_loop()
        return obj.actor_ref

    def _dispatcher_(self) -> Dispatcher:
        return self.dispatcher or default_dispatcher()

    # -- deferred replies and stash (worker thread: inside a handler) ----------------------

    _current: Envelope[Any] | None = None
    _handled: bool = True  # False once the current message was deferred or stashed
    _replies: set[Reply] | None = None
    _stash: list[Envelope[Any]] | None = None

    def defer_reply(self) -> Reply:
        """Take over the answer to the message being handled: the handler's return value is
        not sent; ``set``/``fail`` on the returned :class:`Reply` answers the asker later (a
        ``tell``-ed message gets a Reply that answers no one)."""
        envelope = self._current
        if envelope is None:
            raise RuntimeError("defer_reply() is only valid inside a message handler")
        self._handled = False
        reply = Reply(self, envelope.reply_to)
        if envelope.reply_to is not None:
            if self._replies is None:
                self._replies = set()
            self._replies.add(reply)
        return reply

    def stash(self) -> None:
        """Put the message being handled aside (unanswered) until :meth:`unstash_all`."""
        envelope = self._current
        if envelope is None:
            raise RuntimeError("stash() is only valid inside a message handler")
        self._handled = False
        if self._stash is None:
            self._stash = []
        self._stash.append(envelope)

    def unstash_all(self) -> None:
        """Queue every stashed message again, in stash order, ahead of the inbox."""
        stashed, self._stash = self._stash, None
        if stashed:
            inbox = self.actor_inbox
            with inbox._lock:
                inbox._items.extendleft(reversed(stashed))

    def _start_actor_loop(self) -> None:
        inbox = self.actor_inbox
        inbox._actor = self
        self._dispatch_begun = False
        dispatcher = self._dispatcher_()
        dispatcher._started()
        dispatcher._schedule(self)

    # -- the loop, in slices (worker thread) ------------------------------------------------

    def _loop_enter(self) -> None:
        """Before each slice, on the worker that runs it."""

    def _loop_crashed(self, exc: BaseException) -> None:
        """A BaseException escaped the loop's own handling; the actor stops."""
        self.actor_stopped.set()

    def _loop_exit(self) -> None:
        """Once, after the teardown answered every queued message."""

    def _dispatch_slice(self, budget: int) -> None:
        inbox = self.actor_inbox
        try:
            self._loop_enter()
            if not self._dispatch_begun:
                self._dispatch_begun = True
                self._actor_loop_setup()
            stopped = self.actor_stopped
            while budget > 0 and not stopped.is_set():
                with inbox._lock:
                    if not inbox._items:
                        inbox._scheduled = False
                        return
                    envelope = inbox._items.popleft()
                budget -= 1
                self._dispatch_one(envelope)
            if not stopped.is_set():
                with inbox._lock:
                    if not inbox._items:
                        inbox._scheduled = False
                        return
                self._dispatcher_()._schedule(self)  # still scheduled: back to the queue's tail
                return
        except BaseException as exc:
            try:
                self._loop_crashed(exc)
            finally:
                self.actor_stopped.set()
        self._dispatch_teardown()

    def _dispatch_one(self, envelope: Envelope[Any]) -> None:
        # The body of pykka's Actor._actor_loop_running for one envelope, plus deferred replies.
        self._current = envelope
        self._handled = True
        try:
            response = self._handle_receive(envelope.message)
            if envelope.reply_to is not None and self._handled:
                envelope.reply_to.set(response)
        except Exception:
            if not self._handled:  # deferred or stashed, then failed: answer the asker now
                self._handled = True
                if self._stash and self._stash[-1] is envelope:
                    self._stash.pop()
                if self._replies:
                    for reply in [r for r in self._replies if r._future is envelope.reply_to]:
                        self._replies.discard(reply)
                        reply._done = True
            if envelope.reply_to is not None:
                log.info("Exception returned from %s to caller:", self, exc_info=sys.exc_info())
                try:
                    envelope.reply_to.set_exception()
                except queue.Full:  # a deferred reply already answered it
                    pass
            else:
                self._handle_failure(*sys.exc_info())
                try:
                    self.on_failure(*sys.exc_info())
                except Exception:
                    self._handle_failure(*sys.exc_info())
        except BaseException:
            log.debug("%r in %s: stopping it", sys.exc_info()[1], self)
            self._stop()
            raise
        finally:
            self._current = None

    def _dispatch_teardown(self) -> None:
        inbox = self.actor_inbox
        try:
            with inbox._lock:
                inbox._closed = True
                queued = list(self._stash or ()) + list(inbox._items)
                inbox._items.clear()
            self._stash = None
            for envelope in queued:
                _reply_dead(envelope, self)
            for reply in list(self._replies or ()):
                reply.fail(ActorDeadError(f"{self} stopped before it answered"))
        finally:
            try:
                self._loop_exit()
            finally:
                self._dispatcher_()._finished()


class Reply:
    """The pending answer to one message (from :meth:`DispatchActor.defer_reply`). ``set`` and
    ``fail`` may be called from any thread, once; later calls are ignored."""

    __slots__ = ("_actor", "_done", "_future")

    def __init__(self, actor: DispatchActor, future: pykka.Future[Any] | None) -> None:
        self._actor = actor
        self._future = future
        self._done = future is None

    @property
    def pending(self) -> bool:
        return not self._done

    def set(self, value: Any = None) -> None:
        if self._finish():
            assert self._future is not None
            self._future.set(value)

    def fail(self, error: BaseException) -> None:
        if self._finish():
            assert self._future is not None
            self._future.set_exception(exc_info=(type(error), error, error.__traceback__))

    def _finish(self) -> bool:
        if self._done:
            return False
        self._done = True
        replies = self._actor._replies
        if replies is not None:
            replies.discard(self)
        return True


class SupervisedDispatchActor(DispatchActor, SupervisedActor):
    """A :class:`SupervisedActor` on a dispatcher: the supervision contract (``on_shutdown``,
    ``on_terminate``, ``exit``, exactly one ``report_exit`` as the actor's last act, a failed
    ``on_start`` reported as its exit) on a shared worker pool instead of a thread of its own.
    Every hook runs on a worker of the dispatcher (see :class:`DispatchActor`). It is still an
    instance of ``pykka.ThreadingActor`` by inheritance, but owns no thread."""

    def _loop_enter(self) -> None:
        if self.context is not None:
            self.context.thread_ident = threading.get_ident()

    def _loop_crashed(self, exc: BaseException) -> None:
        self._exit_error = self._exit_error or exc
        self.actor_stopped.set()

    def _loop_exit(self) -> None:
        self._finish()
