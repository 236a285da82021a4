"""Admission: how many turns run and how many sessions live, per instance and for the runtime.

:class:`TurnGate` holds the running-turn slots (``max_running_turns``) and one FIFO queue per
instance. A turn admitted at once takes a slot before the agent sees it; one beyond the bound
waits in its instance's queue (``turn.queued``, emitted under the gate's lock so that it always
precedes the turn's ``turn.started``) and is started by the gate's worker thread, in order, when a
slot frees; with ``queue = false`` it is refused with :class:`CapacityError`. A slot frees when
the tracker sees the turn's ``turn.completed`` (:meth:`TurnGate.release`). A queued turn taken out
of its queue (``interrupt_turn``, ``stop_session``, ``delete_thread``, ``close``) ends with its one
``turn.completed`` (``interrupted``) without reaching the agent; one its worker cannot send ends
``failed``.

:class:`SessionGate` bounds the live sessions (``max_live_sessions``): a start beyond the bound
first stops the least recently active idle session in the bound's scope (as the idle reaper
does: it resumes on its next turn), else waits for one to stop or go idle until the start's
timeout, else raises :class:`CapacityError`. It also refuses every new session while the agents'
RSS sums over ``[runtime] memory_mb``.

Both exist only where a bound is configured: an instance without one pays a dict look-up per
turn and nothing per event. Thread-safe; every method runs in the caller's thread except the
turn gate's dispatches, which run on its one worker thread (``paddock-admission``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping

from paddock._instances._config import RuntimeConfig
from paddock._operations._queued import QueuedTurn
from paddock._operations._table import SendTurnBody
from paddock.actors import HubHandle
from paddock.contract import (
    Attachment,
    CapacityError,
    EventBase,
    EventIdentity,
    PaddockError,
    RuntimeErrorEvent,
    SessionClosedError,
    TurnCompleted,
    TurnQueued,
    TurnStartResult,
    ValidationError,
)

__all__ = ["SessionGate", "TurnGate", "Waiting", "admission_gates"]

_MIB = 1024 * 1024
_STARTED_GRACE = 2.0  # seconds a started session counts before the live map holds it (it takes microseconds)


class Waiting:
    """A turn admission holds (queued) or has let through: what its dispatch sends."""

    __slots__ = ("attachments", "body", "instance_id", "queued_at", "since", "thread_id", "turn_id")

    def __init__(self, body: SendTurnBody, attachments: tuple[Attachment, ...], instance_id: str, turn_id: str) -> None:
        self.body = body
        self.attachments = attachments
        self.thread_id = body.thread_id
        self.instance_id = instance_id
        self.turn_id = turn_id
        self.queued_at = time.time()
        self.since = time.monotonic()


def admission_gates(config: RuntimeConfig, rss: Callable[[], int]) -> tuple[TurnGate | None, SessionGate | None]:
    """The gates the configuration asks for (``None`` where it sets no bound)."""
    settings = config.settings
    turns = {e.instance_id: e.admission.max_running_turns for e in config.instances
             if e.admission.max_running_turns is not None}
    queue = {e.instance_id: e.admission.queue for e in config.instances if e.admission.queue is not None}
    sessions = {e.instance_id: e.admission.max_live_sessions for e in config.instances
                if e.admission.max_live_sessions is not None}
    turn_gate = TurnGate(turns, settings.max_running_turns, queue, settings.queue) \
        if turns or settings.max_running_turns is not None else None
    session_gate = SessionGate(sessions, settings.max_live_sessions, settings.memory_mb, rss) \
        if sessions or settings.max_live_sessions is not None or settings.memory_mb is not None else None
    return turn_gate, session_gate


Send = Callable[[SendTurnBody, tuple[Attachment, ...], str], TurnStartResult]
"""How the directory sends a turn to its thread's session (resumed on demand), with admission's turn id."""


class TurnGate:
    """See the module docstring. :meth:`start` gives it the hub, each instance's driver and the
    directory's send, which its worker runs for each turn leaving a queue."""

    def __init__(self, limits: Mapping[str, int | None], runtime_limit: int | None,
                 queue: Mapping[str, bool], queue_default: bool) -> None:
        self._limits = {k: v for k, v in limits.items() if v is not None}
        self._runtime_limit = runtime_limit
        self._queue = dict(queue)
        self._queue_default = queue_default
        self._cond = threading.Condition()
        self._running: dict[str, int] = {}
        self._total = 0
        self.turns: dict[str, str] = {}
        """Admitted turn id -> instance id, until its ``turn.completed``. The tracker reads it
        without the lock (a membership test) to skip every turn the gate never saw."""
        self._queues: dict[str, deque[Waiting]] = {}
        self._by_thread: dict[str, Waiting] = {}  # thread id -> its queued turn
        self._hub: HubHandle | None = None
        self._driver_of: Callable[[str], str] = str
        self._send: Send | None = None
        self._worker: threading.Thread | None = None
        self._stopped = False

    def gates(self, instance_id: str) -> bool:
        """Whether turns of ``instance_id`` go through the gate."""
        return self._runtime_limit is not None or instance_id in self._limits

    def start(self, hub: HubHandle, driver_of: Callable[[str], str], send: Send) -> None:
        self._hub, self._driver_of, self._send = hub, driver_of, send

    def send_turn(self, a: SendTurnBody, attachments: tuple[Attachment, ...], instance: str) -> TurnStartResult:
        """Send now within ``max_running_turns``, else queue (``turn.queued``) or refuse (the
        caller's thread)."""
        assert self._send is not None
        waiting = Waiting(a, attachments, instance, f"turn-{uuid.uuid4().hex[:16]}")
        position = self.admit(waiting, lambda place: self._emit(waiting, TurnQueued(
            **self._who(waiting), turn_id=waiting.turn_id, created_at=time.time(), position=place,
            input_text=a.text)))
        if position is not None:
            return TurnStartResult(thread_id=a.thread_id, turn_id=waiting.turn_id, queued=position)
        try:
            return self._send(a, attachments, waiting.turn_id)
        except BaseException:
            self.release(waiting.turn_id)
            raise

    def end(self, thread_id: str, turn_id: str | None, why: str) -> bool:
        """Take the thread's queued turn (``turn_id``, or whichever it has) out of its queue and
        end it ``interrupted``; whether there was one. It never reached the agent."""
        waiting = self.cancel(thread_id, turn_id)
        if waiting is not None:
            self._ended(waiting, why)
        return waiting is not None

    def end_all(self) -> None:
        """Closing: every queued turn ends ``interrupted``, and none starts any more."""
        for waiting in self.close():
            self._ended(waiting, "the runtime closed while it was queued")

    def admit(self, waiting: Waiting, on_queued: Callable[[int], None]) -> int | None:
        """Take a slot for the turn (``None``: send it now) or queue it (its position; ``on_queued(position)``
        runs under the gate's lock, before any dispatch can start it). Raises
        :class:`CapacityError` when the bound is reached and the instance does not queue, and
        :class:`ValidationError` when the thread already has a queued turn."""
        instance = waiting.instance_id
        with self._cond:
            if self._stopped:
                raise SessionClosedError(None, "the runtime is closing")
            queued = self._by_thread.get(waiting.thread_id)
            if queued is not None:
                raise ValidationError("send_turn", f"turn {queued.turn_id!r} of this thread is queued; wait for its "
                                      "turn.completed or interrupt it", thread_id=waiting.thread_id)
            line = self._queues.get(instance)
            full = self._full(instance)
            if not line and full is None:
                self._take(waiting)
                return None
            if not self._queue.get(instance, self._queue_default):
                limit, scope, figure, bound = full or ("max_running_turns", "instance", 0, 0)
                raise CapacityError(limit, scope, figure, bound, instance_id=instance, thread_id=waiting.thread_id)
            if line is None:
                line = self._queues[instance] = deque()
            line.append(waiting)
            self._by_thread[waiting.thread_id] = waiting
            on_queued(len(line))
            self._wake()
            return len(line)

    def release(self, turn_id: str) -> None:
        """The turn ended (or was never sent): free its slot; the worker starts the next one."""
        with self._cond:
            instance = self.turns.pop(turn_id, None)
            if instance is None:
                return
            self._running[instance] -= 1
            self._total -= 1
            self._cond.notify_all()

    def cancel(self, thread_id: str, turn_id: str | None = None) -> Waiting | None:
        """Take the thread's queued turn (``turn_id``, or whichever it has) out of its queue."""
        with self._cond:
            waiting = self._by_thread.get(thread_id)
            if waiting is None or (turn_id is not None and waiting.turn_id != turn_id):
                return None
            del self._by_thread[thread_id]
            self._queues[waiting.instance_id].remove(waiting)
            return waiting

    def has_queued(self, thread_id: str) -> bool:
        return thread_id in self._by_thread

    def snapshot(self, instance_id: str | None = None) -> list[QueuedTurn]:
        """The queued turns (of ``instance_id``, or all), in queue order per instance."""
        now = time.monotonic()
        with self._cond:
            return [QueuedTurn(thread_id=w.thread_id, instance_id=w.instance_id, turn_id=w.turn_id, position=i,
                               queued_at=w.queued_at, waited=round(now - w.since, 3))
                    for inst, line in self._queues.items() if instance_id in (None, inst)
                    for i, w in enumerate(line, 1)]

    def close(self) -> list[Waiting]:
        """Stop the worker; return every turn still queued (the caller ends them)."""
        with self._cond:
            self._stopped = True
            left = [w for line in self._queues.values() for w in line]
            self._queues.clear()
            self._by_thread.clear()
            self._cond.notify_all()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=2.0)
        return left

    # internals (under the lock) -----------------------------------------------------------------

    def _full(self, instance: str) -> tuple[str, str, int, int] | None:
        """The bound a new turn of ``instance`` would cross, as (limit, scope, figure, bound)."""
        bound = self._limits.get(instance)
        running = self._running.get(instance, 0)
        if bound is not None and running >= bound:
            return "max_running_turns", "instance", running, bound
        if self._runtime_limit is not None and self._total >= self._runtime_limit:
            return "max_running_turns", "runtime", self._total, self._runtime_limit
        return None

    def _take(self, waiting: Waiting) -> None:
        self.turns[waiting.turn_id] = waiting.instance_id
        self._running[waiting.instance_id] = self._running.get(waiting.instance_id, 0) + 1
        self._total += 1

    def _wake(self) -> None:
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="paddock-admission", daemon=True)
            self._worker.start()
        self._cond.notify_all()

    def _next(self) -> Waiting | None:
        """The oldest queue head whose instance has a slot, taken out with its slot."""
        best: Waiting | None = None
        for instance, line in self._queues.items():
            if line and self._full(instance) is None and (best is None or line[0].since < best.since):
                best = line[0]
        if best is not None:
            self._queues[best.instance_id].popleft()
            del self._by_thread[best.thread_id]
            self._take(best)
        return best

    def _work(self) -> None:
        """The worker thread: start queued turns in order as slots free."""
        while True:
            with self._cond:
                waiting = self._next()
                while waiting is None and not self._stopped:
                    self._cond.wait()
                    waiting = self._next()
                if self._stopped:  # close() took every queued turn: none is left to start
                    return
            assert waiting is not None
            try:
                self._start_queued(waiting)
            except Exception:  # nothing may stop the worker
                self.release(waiting.turn_id)

    def _start_queued(self, waiting: Waiting) -> None:
        """A slot freed for this queued turn (the worker). One that cannot be sent ends
        ``failed``, a ``runtime.error`` (``turn.queued_start_failed``) saying why."""
        assert self._send is not None
        try:
            self._send(waiting.body, waiting.attachments, waiting.turn_id)
        except PaddockError as exc:
            self.release(waiting.turn_id)
            who = self._who(waiting)
            self._emit(waiting, RuntimeErrorEvent(**who, turn_id=waiting.turn_id, code="turn.queued_start_failed",
                                                  message=f"the queued turn could not be started: {exc}"),
                       TurnCompleted(**who, turn_id=waiting.turn_id, created_at=time.time(), state="failed",
                                     error=str(exc)))

    def _ended(self, waiting: Waiting, why: str) -> None:
        self._emit(waiting, TurnCompleted(**self._who(waiting), turn_id=waiting.turn_id, created_at=time.time(),
                                          state="interrupted", stop_reason=why))

    def _who(self, waiting: Waiting) -> EventIdentity:
        return EventIdentity(driver=self._driver_of(waiting.instance_id), instance_id=waiting.instance_id,
                             thread_id=waiting.thread_id)

    def _emit(self, waiting: Waiting, *events: EventBase) -> None:
        assert self._hub is not None
        self._hub.emitter(self._driver_of(waiting.instance_id), waiting.instance_id, waiting.thread_id).emit(events)


class SessionGate:
    """See the module docstring."""

    def __init__(self, limits: Mapping[str, int | None], runtime_limit: int | None, memory_mb: int | None,
                 rss: Callable[[], int]) -> None:
        self._limits = {k: v for k, v in limits.items() if v is not None}
        self._runtime_limit = runtime_limit
        self._memory_mb = memory_mb
        self._rss = rss
        self._cond = threading.Condition()
        self._starting: dict[str, str] = {}  # thread id -> instance id, while its start runs
        self._started: dict[str, tuple[str, float]] = {}  # ... and once started, until the live map has it

    def enter(self, instance: str, thread_id: str, live: Mapping[str, str], *, idle_since: Callable[[str], float | None],
              evict: Callable[[str, str], bool], timeout: float) -> None:
        """Reserve a live-session slot of ``instance`` for ``thread_id`` (not live now), evicting
        the least recently active idle session in the full bound's scope or waiting up to
        ``timeout``; :meth:`leave` gives the reservation back once the start ended. Raises
        :class:`CapacityError`."""
        if self._memory_mb is not None:
            used = self._rss()
            if used > self._memory_mb * _MIB:
                raise CapacityError("memory_mb", "runtime", round(used / _MIB), self._memory_mb,
                                    instance_id=instance, thread_id=thread_id)
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                full = self._full(instance, thread_id, live)
                if full is None:
                    self._starting[thread_id] = instance
                    return
            scope = instance if full[1] == "instance" else None
            idle = sorted((since, t, i) for t, i in list(live.items()) if t != thread_id and scope in (None, i)
                          and (since := idle_since(t)) is not None)
            if any(evict(t, i) for _, t, i in idle):
                continue
            with self._cond:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CapacityError(*full, instance_id=instance, thread_id=thread_id)
                self._cond.wait(min(left, 1.0))  # notified when a session stops or goes idle

    def leave(self, thread_id: str, *, live: bool) -> None:
        """The start of ``thread_id`` ended; ``live``: its session runs (it keeps counting, as a
        start, until the live map holds it)."""
        with self._cond:
            instance = self._starting.pop(thread_id, None)
            if live and instance is not None:
                self._started[thread_id] = (instance, time.monotonic())
            self._cond.notify_all()

    def freed(self) -> None:
        """A session stopped or went idle: a waiting start looks again."""
        with self._cond:
            self._cond.notify_all()

    def _full(self, instance: str, thread_id: str, live: Mapping[str, str]) -> tuple[str, str, int, int] | None:
        sessions = dict(live)
        now = time.monotonic()
        for t, (i, at) in list(self._started.items()):
            if t in sessions or now - at > _STARTED_GRACE:
                del self._started[t]  # the live map holds it now (or its start was undone)
            else:
                sessions[t] = i
        sessions.update(self._starting)
        sessions.pop(thread_id, None)
        bound = self._limits.get(instance)
        if bound is not None:
            count = sum(1 for i in sessions.values() if i == instance)
            if count >= bound:
                return "max_live_sessions", "instance", count, bound
        if self._runtime_limit is not None and len(sessions) >= self._runtime_limit:
            return "max_live_sessions", "runtime", len(sessions), self._runtime_limit
        return None
