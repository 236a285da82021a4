"""The EventHub: fan-in of canonical events from every session and instance actor.

For each batch an emitter tells it, the hub (in its own actor thread):

0. masks secrets (``paddock.actors.events._redact``): the values registered for the emitting instance
   with :meth:`HubHandle.add_secrets` and common credential shapes, in every string of every
   event, so nothing below (guard, log, subscribers) ever holds them;
1. runs the thread's grammar guard (``paddock.actors.events._grammar``), which repairs violations and adds
   ``runtime.warning`` events;
2. stamps each event: ``driver``/``instance_id``/``thread_id`` from the emitter's identity (a
   driver cannot mislabel), ``seq`` (strictly increasing per runtime, continuing after a restart
   on the same log), ``event_id`` (``<hub run token>-<seq>``, unique across restarts) and
   ``created_at`` when it is 0;
3. hands the batch to its writer thread, which appends it to the SQLite event log in one
   transaction, one row per thread and batch (batches that queued up meanwhile share the
   transaction)
   **before**
4. publishing it: one hand-off per batch to each matching subscription (in the writer thread;
   in the hub's thread when the log is off).

While it works, further emit batches queue in its mailbox; it drains them greedily into one
batch (up to ``max_batch_events`` events). Nothing on this path waits for a subscriber.
When the disk refuses an append (full, read-only, an I/O error: :class:`LogRefused`), the writer
keeps the batch and everything queued behind it in memory, in order, and retries it (backoff from
50 ms to 1 s) until the disk allows: nothing is lost, nothing is shown before it is logged, and
each thread with events in the refused batch gets a ``runtime.error`` (``event_log.write_refused``,
naming the failure) in its place in the stream. Meanwhile :attr:`HubHandle.refused` says why, the
hub's calls (flush, subscribe, compact) fail at once with that :class:`PersistenceError`, and
emitters block nobody: past ``max_queued`` held events the hub's thread waits and its mailbox holds
the rest. Closing while the disk still refuses gives up the held events; the next open's recovery
ends the turns the log shows open. Any other append failure (the test hook, a damaged file) is
fatal: that batch and everything queued behind it is neither committed nor shown, every
subscription ends, and the hub fails (``on_failure``); the Runtime reports it on every later call.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Unpack

import msgspec
import pykka

from paddock.contract import (
    EVENT_TYPES,
    ConfinementInfo,
    EventBase,
    PaddockError,
    PersistenceError,
    RuntimeErrorEvent,
    RuntimeWarningEvent,
    SessionStarted,
    ValidationError,
)
from paddock.contract._construct import NoPublicConstructor
from paddock.supervisors import map_exceptions

from ._event_log import EventLog, LogRefused, chunks_of_groups
from ._grammar import ThreadGrammar, warning
from ._log_mask import LOG_MASK
from ._redact import Redactor
from ._subscription import DEFAULT_MAX_BUFFERED, SubscribeOptions, Subscription

__all__ = ["Emitter", "EventHub", "HubHandle"]

_TAG = {cls: tag for tag, cls in EVENT_TYPES.items()}
_replace = msgspec.structs.replace


_ControlKind = Literal[
    "flush", "subscribe", "compact", "kill_writer", "limit_pages", "secrets", "writer_failed", "log_refused",
]


class _Control:
    """A message for the hub's thread other than an emitted batch: ``kind`` names it, ``arg``
    is its argument."""

    __slots__ = ("kind", "arg")

    def __init__(self, kind: _ControlKind, arg: Any = None) -> None:
        self.kind = kind
        self.arg = arg


def _ignore(sub: Subscription) -> None:
    """A closed subscription is dropped by the publisher at its next batch."""


class _State:
    """What the handle reads without asking the hub. ``last_seq`` is written by the publishing
    thread only; ``dropped`` by emitters (a best-effort counter)."""

    __slots__ = ("dropped", "failure", "given_up", "last_seq", "log_path", "refused", "writer")

    def __init__(self, log_path: str | None) -> None:
        self.log_path = log_path
        self.last_seq = 0
        self.dropped = 0
        self.given_up = 0  # events neither logged nor shown: the writer stopped first
        self.writer: _Writer | None = None  # set by the hub's thread when it starts
        self.failure: str | None = None  # why the writer stopped, written once by it
        self.refused: str | None = None  # why the disk refuses the writer now; written by it


class Emitter(metaclass=NoPublicConstructor):
    """Sends one identity's events to the hub. Thread-safe; built only by ``HubHandle.emitter``.

    ``emit`` runs in the caller's thread, does one ``tell`` per call, never blocks and never
    raises: when the hub is not running the batch is dropped and counted in
    ``HubHandle.dropped_batches``.
    """

    __slots__ = ("_confinement", "_key", "_state", "_tell", "driver", "instance_id", "thread_id")
    _public_factory = "HubHandle.emitter(...)"

    def __init__(self, tell, state: _State, driver: str, instance_id: str, thread_id: str,
                 confinement: ConfinementInfo | None = None) -> None:
        self._confinement = confinement
        self._tell = tell
        self._state = state
        self._key = (driver, instance_id, thread_id)
        self.driver = driver
        self.instance_id = instance_id
        self.thread_id = thread_id

    def emit(self, events: Sequence[EventBase]) -> None:
        """Queue ``events`` (in order) for the hub; the hub stamps their identity and ``seq``."""
        try:
            batch = tuple(events)
            # map(type, ...) walks the batch in C: a batch of deltas pays no Python call per event
            if self._confinement is not None and SessionStarted in set(map(type, batch)):
                batch = tuple(_stamp(e, self._confinement) for e in batch)
            if batch:
                self._tell((self._key, batch))
        except Exception:
            self._state.dropped += 1

    def __repr__(self) -> str:
        return f"<Emitter {self.driver}/{self.instance_id}/{self.thread_id}>"


def _stamp(event: EventBase, confinement: ConfinementInfo) -> EventBase:
    if type(event) is SessionStarted and event.confinement is None:
        return msgspec.structs.replace(event, confinement=confinement)
    return event


class HubHandle(metaclass=NoPublicConstructor):
    """The thread-safe face of a running :class:`EventHub`. Every method may be called from any
    thread; the ones that ``ask`` the hub take a keyword-only ``timeout`` in seconds. Built only by
    :meth:`EventHub.start`."""

    _public_factory = "EventHub.start(...)"

    def __init__(self, ref: pykka.ActorRef, state: _State, max_buffered: int) -> None:
        self._ref = ref
        self._state = state
        self._max_buffered = max_buffered

    @property
    def actor_ref(self) -> pykka.ActorRef:
        """The hub's pykka actor ref (for supervisors)."""
        return self._ref

    @property
    def log_path(self) -> str | None:
        return self._state.log_path

    @property
    def last_seq(self) -> int:
        """The ``seq`` of the last committed and published event (0 if none yet)."""
        return self._state.last_seq

    @property
    def dropped_batches(self) -> int:
        """Batches that emitters could not deliver because the hub was not running."""
        return self._state.dropped

    @property
    def alive(self) -> bool:
        return self._ref.is_alive()

    @property
    def failure(self) -> str | None:
        """Why the hub stopped on its own (its log could not be written), or ``None``."""
        return self._state.failure

    @property
    def refused(self) -> str | None:
        """Why the disk refuses the log's writes right now (events are held in memory and
        retried), or ``None``: set at the first refused append, cleared by the next commit."""
        return self._state.refused

    def join(self, *, timeout: float | None = None) -> bool:
        """Wait until the hub has stopped (closed, or failed with its writer); return whether
        it has."""
        return self._ref.actor_stopped.wait(timeout)

    def emitter(self, driver: str, instance_id: str, thread_id: str, *,
                confinement: ConfinementInfo | None = None) -> Emitter:
        """An :class:`Emitter` bound to this identity; the hub labels its events with it. With
        ``confinement``, every ``session.started`` it emits carries it (the runtime's plan, so
        that no driver has to)."""
        return Emitter._create(self._ref.tell, self._state, driver, instance_id, thread_id, confinement)

    def instance_warning(self, driver: str, instance_id: str, code: str, message: str,
                         detail: dict[str, Any] | None = None) -> None:
        """Publish a ``runtime.warning`` of an instance, not of a thread (``thread_id`` ``""``):
        a transport problem of a shared process that no session can report yet (garbage or an
        oversized line before the first session). Never blocks or raises (like ``emit``)."""
        self.emitter(driver, instance_id, "").emit([RuntimeWarningEvent(
            driver=driver, instance_id=instance_id, thread_id="", code=code, message=message, detail=detail,
        )])

    def subscribe(self, *, timeout: float = 10.0, **options: Unpack[SubscribeOptions]) -> Subscription:
        """Subscribe to the events matching every given filter (``options``: the keywords of
        :meth:`paddock.Runtime.subscribe`; ``types``: event type names).

        Without ``from_seq`` the subscription sees events published after this call returns.
        With it, it first replays the logged events with ``seq >= from_seq``, then continues
        live with no gap and no duplicate (pass ``last seen seq + 1`` to resume). ``from_seq``
        needs the event log (:class:`ValidationError` otherwise). Raises
        :class:`OperationTimeout`, or :class:`PaddockError` if the hub is not running.
        """
        from_seq = options.pop("from_seq", None)
        if from_seq is not None and self._state.log_path is None:
            raise ValidationError("subscribe", "from_seq needs the event log (log_path is None)")
        max_buffered = options.pop("max_buffered", None)
        sub = Subscription._create(
            **options,
            log_path=self._state.log_path,
            max_buffered=self._max_buffered if max_buffered is None else max_buffered,
            on_close=_ignore,
        )
        try:
            self._ask(_Control("subscribe", (sub, from_seq)), "EventHub.subscribe", timeout)
        except BaseException:
            sub.close()  # if the hub registers it later, it drops a closed subscription
            raise
        return sub

    def flush(self, *, timeout: float = 10.0) -> int:
        """Return once every batch told before this call is committed and published; returns
        :attr:`last_seq`. Raises :class:`OperationTimeout` or :class:`PaddockError` (hub not
        running)."""
        return self._ask(_Control("flush"), "EventHub.flush", timeout)

    def compact(self, before_seq: int, *, timeout: float = 30.0) -> int:
        """Delete logged events with ``seq < before_seq`` (the newest is always kept); returns
        how many were deleted. Subscribers replaying that range will not see them."""
        return self._ask(_Control("compact", before_seq), "EventHub.compact", timeout)

    def add_secrets(self, instance_id: str, secrets: Iterable[str], *, timeout: float = 10.0) -> None:
        """Mask ``secrets`` (values shorter than 6 characters are ignored) in every event that
        instance ``instance_id`` emits from now on, on top of the common credential shapes,
        which are masked for every emitter. Returns once the hub applies them. From now until
        :meth:`close` they are masked in ``paddock`` log records too (:data:`LOG_MASK`)."""
        secrets = tuple(secrets)
        LOG_MASK.add(self, secrets)
        self._ask(_Control("secrets", (instance_id, secrets)), "EventHub.add_secrets", timeout)

    def kill_writer_mid_batch(self, after_rows: int = 1, *, timeout: float = 10.0) -> None:
        """Test hook: the next log append inserts ``after_rows`` chunks (rows) then fails before its
        commit, as if the writer were killed; the hub then fails without publishing that batch."""
        self._ask(_Control("kill_writer", after_rows), "EventHub.kill_writer_mid_batch", timeout)

    def limit_log_pages(self, pages: int | None, *, timeout: float = 10.0) -> None:
        """Test hook: the log's database may not grow beyond ``pages`` pages (``None`` lifts the
        limit); appends that need more are refused as on a full disk (SQLITE_FULL)."""
        self._ask(_Control("limit_pages", pages), "EventHub.limit_log_pages", timeout)

    @property
    def given_up(self) -> int:
        """Events the hub gave up, neither logged nor shown: held for a disk that still refused
        them when the hub stopped, or queued behind them (0 when every event was logged)."""
        return self._state.given_up

    def close(self, *, timeout: float = 10.0) -> int:
        """Process what is already queued, stop the hub, end every subscription (each still
        delivers what was published) and close the log. Idempotent; never raises.

        Returns within ``timeout`` + 0.5 s whatever the disk does: while the disk refuses the
        log, or when the hub has not stopped after ``timeout`` (its writer lags behind), the
        writer gives up what it has not committed and stops, closing the log. Returns how many events
        were given up so far (:attr:`given_up`)."""
        LOG_MASK.discard(self)
        stopped = self._ref.actor_stopped
        try:
            self._ref.stop(block=False)
        except pykka.ActorDeadError:
            pass
        end = time.monotonic() + max(0.0, timeout)
        writer = self._state.writer
        if writer is not None and self._state.refused is not None:
            writer.give_up()  # what the disk refuses now is given up at the stop anyway: now
        if not stopped.wait(max(0.0, timeout)):
            end = time.monotonic() + _GIVE_UP_GRACE
            if writer is not None:
                writer.give_up()
            stopped.wait(_GIVE_UP_GRACE)
        if writer is not None:  # the log closes in its thread, once it has ended
            writer.join(max(0.0, end - time.monotonic()))
        return self._state.given_up

    def _ask(self, message: _Control, operation: str, timeout: float):
        why = f" ({self._state.failure})" if self._state.failure else ""
        with map_exceptions(operation, timeout, dead=PaddockError(f"{operation} failed: the event hub is not running{why}")):
            return self._ref.ask(message, timeout=timeout)

    def __enter__(self) -> HubHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Publisher:
    """The subscription list and the one hand-off per batch per subscriber. Used by one thread:
    the writer thread when the log is on, the hub's thread when it is off."""

    def __init__(self, state: _State) -> None:
        self.state = state
        self.subs: list[Subscription] = []

    def register(self, sub: Subscription, from_seq: int | None, committed: int) -> None:
        if from_seq is not None:
            sub._start_from(max(1, from_seq), committed)
        # Closed ones go at the next batch, or here: clients that subscribe and close while no
        # event is published (polling an idle runtime) must not pile up.
        subs = self.subs
        if subs and any(s._closed for s in subs):
            self.subs = subs = [s for s in subs if not s._closed]
        subs.append(sub)

    def publish(self, out: list[EventBase]) -> None:
        self.state.last_seq = out[-1].seq
        broken = None
        # Subscribers filtered by thread (one per session is the common host pattern) look only
        # at their thread's events: the batch is grouped once, not scanned once per subscriber.
        by_thread: dict[str, list[EventBase]] | None = None
        # Subscribers filtered by type alone (the runtime's own readers: usage, limits, approvals)
        # skip a batch that has none of their types without scanning it: the classes present are
        # collected once per batch.
        present: set[type] | None = None
        selected: list[EventBase] | None
        for sub in self.subs:
            try:
                if sub._closed:
                    raise LookupError
                if sub.thread_id is None:
                    classes = sub._classes
                    if classes is not None and sub.instance_id is None:
                        if present is None:
                            present = {e.__class__ for e in out}
                        if classes.isdisjoint(present):
                            continue
                    selected = sub._select(out)
                else:
                    if by_thread is None:
                        by_thread = {}
                        for e in out:
                            group = by_thread.get(e.thread_id)
                            if group is None:
                                by_thread[e.thread_id] = [e]
                            else:
                                group.append(e)
                    mine = by_thread.get(sub.thread_id)
                    selected = sub._select(mine) if mine else None
                if selected:
                    sub._offer(selected)
            except Exception:  # a subscription must never stop the others
                broken = broken or []
                broken.append(sub)
        if broken:
            for sub in broken:
                self.subs.remove(sub)

    def finish(self) -> None:
        for sub in self.subs:
            sub._finish()
        self.subs = []


class _Call:
    __slots__ = ("args", "done", "error", "fn", "result")

    def __init__(self, fn, args) -> None:
        self.fn = fn
        self.args = args
        self.done = threading.Event()
        self.result = None
        self.error: BaseException | None = None


_STOP = object()
_GIVE_UP_GRACE = 0.5  # seconds a hub that gave its events up has to stop


class _GivenUp(Exception):
    """The writer was told to give up what it had not committed (a close out of time)."""


class _Writer:
    """The log writer thread (``paddock-hub-writer``): appends stamped batches in one transaction
    each (merging what has queued up), and publishes each batch only after its commit.

    SQLite releases the GIL while it writes, so sequencing (the hub's thread) and committing
    (this thread) overlap. ``put`` blocks the hub's thread while more than ``max_queued`` events
    wait, which moves backpressure into the hub's mailbox.

    An append the disk refuses (:class:`LogRefused`) is held and retried in place, every
    ``RETRY_FIRST`` seconds doubling to ``RETRY_MAX``, with everything behind it queued in order;
    calls fail at once meanwhile (the module docstring says what the hub does about it).
    """

    RETRY_FIRST = 0.05
    RETRY_MAX = 1.0

    def __init__(self, log: EventLog, publisher: _Publisher, hub: pykka.ActorRef,
                 max_queued: int = 65_536, max_commit: int = 8_192) -> None:
        self.log = log
        self.max_commit = max_commit
        self.publisher = publisher
        self.hub = hub
        self.max_queued = max_queued
        self.failed: BaseException | None = None
        self._give_up = False
        self._taken: list = []  # the items the writer thread took last (it alone uses it)
        self.refusal: LogRefused | None = None
        """The disk's refusal of the held append while it is retried (set and cleared by the
        writer thread, under ``_cond``)."""
        self._items: deque = deque()
        self._queued = 0
        self._cond = threading.Condition(threading.Lock())
        self._batches = 0
        self._thread = threading.Thread(target=self._run, name="paddock-hub-writer", daemon=True)
        self._thread.start()

    # hub thread ------------------------------------------------------------------------------

    def put(self, out: list[EventBase], rows: list[tuple]) -> None:
        with self._cond:
            if self.failed is not None:
                self.publisher.state.given_up += len(out)
                return
            self._items.append((out, rows))
            self._queued += len(out)
            self._cond.notify_all()
            while self._queued > self.max_queued and self.failed is None and not self._give_up:
                self._cond.wait()

    def call(self, fn, *args):
        """Run ``fn(*args)`` in the writer thread after everything queued before; return its
        result (re-raising its error, or the writer's failure)."""
        call = _Call(fn, args)
        with self._cond:
            if self.failed is not None:
                raise self.failed
            if self.refusal is not None:
                raise self.refusal
            self._items.append(call)
            self._cond.notify_all()
        call.done.wait()
        if call.error is not None:
            raise call.error
        return call.result

    def stop(self, timeout: float | None = None) -> None:
        with self._cond:
            self._items.append(_STOP)
            self._cond.notify_all()
        self._thread.join(timeout)

    # any thread ------------------------------------------------------------------------------

    def give_up(self) -> None:
        """Stop now: what is not committed yet (a held append, everything queued) is given up
        and counted, the hub's thread no longer waits for room, the log closes."""
        with self._cond:
            self._give_up = True
            self._cond.notify_all()

    def join(self, timeout: float) -> None:
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # writer thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        log = self.log
        items: list = []
        try:
            while True:
                with self._cond:
                    while not self._items:
                        self._cond.wait()
                    items = self._taken = list(self._items)
                    self._items.clear()
                out: list[EventBase] = []
                rows: list[tuple] = []
                for item in items:
                    if self._give_up:
                        raise _GivenUp
                    if type(item) is tuple:
                        out += item[0]
                        rows += item[1]
                        if len(out) >= self.max_commit:
                            self._commit(out, rows)
                            out, rows = [], []
                        continue
                    if out:
                        self._commit(out, rows)
                        out, rows = [], []
                    if item is _STOP:
                        return
                    if item.done.is_set():
                        continue  # failed while an append before it was held
                    try:
                        item.result = item.fn(*item.args)
                    except Exception as exc:
                        item.error = exc
                    item.done.set()
                if out:
                    self._commit(out, rows)
                self._taken = []
        except BaseException as exc:
            self.publisher.state.failure = (
                "the event hub stopped: its close ran out of time" if isinstance(exc, _GivenUp)
                else f"the event hub stopped, its log could not be written: {exc}"
            )
            with self._cond:
                self.failed = exc
                pending = items + list(self._items)
                self._items.clear()
                self.publisher.state.given_up += self._queued  # put, never committed
                self._queued = 0
                self._cond.notify_all()
            for item in pending:
                if isinstance(item, _Call) and not item.done.is_set():
                    item.error = exc
                    item.done.set()
            try:
                self.hub.tell(_Control("writer_failed", exc))
            except pykka.ActorDeadError:
                pass
        finally:
            self.publisher.finish()
            log.close()

    def _commit(self, out: list[EventBase], rows: list[tuple]) -> None:
        log = self.log
        delay = self.RETRY_FIRST
        while True:
            try:
                log.append(rows)  # raises: nothing committed, nothing published
                break
            except LogRefused as exc:
                self._hold(exc, out, delay)  # raises when closing: the held events are given up
                delay = min(2 * delay, self.RETRY_MAX)
        with self._cond:
            self._queued -= len(out)
            if self.refusal is not None:
                self.refusal = None
                self.publisher.state.refused = None
            self._cond.notify_all()
        self._batches += 1
        if log.max_bytes is not None and self._batches % 64 == 0:
            try:
                log.enforce_size()
            except PersistenceError:
                pass  # the disk refuses the compaction: the next round tries again
        self.publisher.publish(out)

    def _hold(self, exc: LogRefused, out: list[EventBase], delay: float) -> None:
        """The disk refused ``out``: say so (once per refusal), fail the calls queued meanwhile,
        and wait ``delay`` seconds before the caller retries. Raises ``exc`` when the hub is
        stopping (the held events are then given up)."""
        with self._cond:
            first = self.refusal is None
            self.refusal = exc
            self.publisher.state.refused = (
                f"the event log cannot be written ({exc.detail}); its events are held in memory and "
                "written when the disk allows"
            )
            calls = [item for item in self._taken if isinstance(item, _Call) and not item.done.is_set()]
            calls += [item for item in self._items if isinstance(item, _Call)]
            if any(isinstance(item, _Call) for item in self._items):
                self._items = deque(item for item in self._items if not isinstance(item, _Call))
            stopping = self._give_up or _STOP in self._items
            if not stopping:
                self._cond.wait(delay)
                stopping = self._give_up or _STOP in self._items
        for call in calls:
            call.error = exc
            call.done.set()
        if first:
            keys = {(ev.driver, ev.instance_id, ev.thread_id): None for ev in out}
            try:
                self.hub.tell(_Control("log_refused", (exc.detail, tuple(keys))))
            except pykka.ActorDeadError:
                pass
        if stopping:
            raise exc


class EventHub(pykka.ThreadingActor):
    """The fan-in actor. Start it with :meth:`start`, which returns a :class:`HubHandle`.

    Every ``on_*`` method runs in the hub's own actor thread. With the log on, committing and
    publishing run in the hub's writer thread (``paddock-hub-writer``), in sequence order.
    """

    # A non-daemon actor thread would keep the interpreter alive past the end of a host that never
    # closed its runtime, and atexit hooks (which close it) only run once such threads are gone.
    use_daemon_thread = True

    def __init__(
        self,
        state: _State,
        *,
        log: EventLog | None,
        max_batch_events: int,
    ) -> None:
        super().__init__()
        self._state = state
        self._max_batch = max_batch_events
        self._log = log
        self._seq = log.last_seq if log is not None else 0
        self._token = secrets.token_hex(6) + "-"
        self._publisher = _Publisher(state)
        self._writer: _Writer | None = None
        self._grammar: dict[str, ThreadGrammar] = {}
        self._redactors: dict[str, Redactor] = {}
        self._redactor = Redactor()  # the shapes only, for emitters with no secrets of their own
        self._encode_lines = msgspec.json.Encoder().encode_lines

    @classmethod
    def start(  # type: ignore[override]
        cls,
        log_path: str | None,
        *,
        max_bytes: int | None = None,
        max_buffered: int = DEFAULT_MAX_BUFFERED,
        max_batch_events: int = 8192,
    ) -> HubHandle:
        """Start a hub logging to the SQLite file ``log_path`` (``None``: no log, no replay;
        for benchmarks). ``max_bytes`` is the log's size-based retention (``None``: keep all);
        ``max_buffered`` the default per-subscription memory bound in events. Runs in the
        caller's thread; raises :class:`PersistenceError` when the log cannot be opened."""
        state = _State(log_path)
        log = EventLog(log_path, max_bytes=max_bytes) if log_path is not None else None
        if log is not None:
            state.last_seq = log.last_seq
        ref = super().start(state, log=log, max_batch_events=max_batch_events)
        return HubHandle._create(ref, state, max_buffered)

    def on_start(self) -> None:
        if self._log is not None:
            self._writer = self._state.writer = _Writer(self._log, self._publisher, self.actor_ref)

    def on_failure(self, exception_type, exception_value, traceback) -> None:
        self._shutdown()

    def on_stop(self) -> None:
        self._shutdown()

    def _shutdown(self) -> None:
        if self._writer is not None:
            self._writer.stop()  # commits and publishes what is queued, ends subscriptions
        else:
            self._publisher.finish()

    def _in_order(self, fn, *args):
        """Run ``fn`` after every batch sequenced so far is committed and published."""
        if self._writer is None:
            return fn(*args)
        return self._writer.call(fn, *args)

    def on_receive(self, message: object) -> object:
        if type(message) is tuple:
            batch = [message]
            inbox = self.actor_inbox
            pending = getattr(inbox, "queue", None)
            if pending is not None:
                # Drain the emit batches already queued behind this one, in order, stopping at
                # the first control message so that flush/subscribe keep their place. This
                # reads pykka's inbox (a queue.Queue of Envelopes) under its own mutex; with
                # another inbox type the hub simply handles one message at a time.
                count = len(message[1])
                limit = self._max_batch
                with inbox.mutex:  # type: ignore[attr-defined]
                    while pending and count < limit:
                        head = pending[0]
                        if type(head.message) is not tuple or head.reply_to is not None:
                            break
                        pending.popleft()
                        batch.append(head.message)
                        count += len(head.message[1])
            self._process(batch)
            return None
        if type(message) is not _Control:
            return super().on_receive(message)
        kind, arg = message.kind, message.arg
        if kind == "flush":
            return self._in_order(lambda: self._state.last_seq)
        if kind == "subscribe":
            sub, from_seq = arg
            log = self._log
            return self._in_order(
                lambda: self._publisher.register(sub, from_seq, log.last_seq if log else self._seq)
            )
        if kind == "compact":
            if self._log is None:
                raise ValidationError("compact", "the event log is disabled")
            return self._in_order(self._log.compact, arg)
        if kind == "kill_writer":
            if self._log is None:
                raise ValidationError("kill_writer_mid_batch", "the event log is disabled")
            return self._in_order(setattr, self._log, "fail_after_rows", arg)
        if kind == "limit_pages":
            if self._log is None:
                raise ValidationError("limit_log_pages", "the event log is disabled")
            # not in order: the writer may be holding a refused append; SQLite serializes the
            # connection's use between the two threads
            self._log.limit_pages(arg)
            return None
        if kind == "log_refused":
            detail, keys = arg
            self._process([(key, (RuntimeErrorEvent(
                driver=key[0], instance_id=key[1], thread_id=key[2], code="event_log.write_refused",
                message=f"the event log could not be written ({detail}); these events were held in "
                        "memory and written when the disk allowed",
                detail={"error": detail},
            ),)) for key in keys])
            return None
        if kind == "secrets":
            instance_id, values = arg
            known = self._redactors.get(instance_id)
            self._redactors[instance_id] = Redactor((*values, *(known.secrets if known else ())))
            return None
        raise arg  # "writer_failed": the hub fails with its writer

    def _process(self, batch: list[tuple[tuple[str, str, str], tuple[EventBase, ...]]]) -> None:
        if self._writer is not None and self._writer.failed is not None:
            self._state.given_up += sum(len(events) for _, events in batch)  # nothing can log them
            return
        now = time.time()
        seq = self._seq
        token = self._token
        grammar = self._grammar
        redactors = self._redactors
        shapes_only = self._redactor
        out: list[EventBase] = []
        # with the log on: this batch's events per (thread, instance), for its chunks
        groups: dict[tuple[str, str], list[EventBase]] | None = {} if self._writer is not None else None
        events: Sequence[EventBase]
        for key, emitted in batch:
            driver, instance_id, thread_id = key
            try:
                events = (redactors.get(instance_id) or shapes_only).redact(emitted)
            except Exception as exc:  # never publish what could not be checked
                events = (warning("redaction.failed", f"events were dropped: masking them failed: {exc!r}"),)
            guard = grammar.get(thread_id)
            if guard is None:
                guard = grammar[thread_id] = ThreadGrammar()
            try:
                checked = guard.check(events)
            except Exception as exc:  # a guard bug must not lose the driver's events
                checked = [*events, warning("grammar.guard_error", f"the grammar guard failed: {exc!r}")]
            stamped = []
            for ev in checked:
                seq += 1
                created = ev.created_at or now
                stamped.append(_replace(
                    ev,
                    driver=driver,
                    instance_id=instance_id,
                    thread_id=thread_id,
                    seq=seq,
                    event_id=f"{token}{seq}",
                    created_at=created,
                ))
            out += stamped
            if groups is not None:
                group = groups.get((thread_id, instance_id))
                if group is None:
                    groups[(thread_id, instance_id)] = stamped
                else:
                    group += stamped
        if not out:
            return
        self._seq = seq
        if self._writer is not None:
            assert groups is not None
            self._writer.put(out, chunks_of_groups(groups, self._encode_lines))
        else:
            self._publisher.publish(out)
