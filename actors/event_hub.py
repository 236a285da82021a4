"""The EventHub: fan-in of canonical events from every session and instance actor.

For each batch an emitter tells it, the hub (in its own actor thread):

1. runs the thread's grammar guard (``actors._grammar``), which repairs violations and adds
   ``runtime.warning`` events;
2. stamps each event: ``driver``/``instance_id``/``thread_id`` from the emitter's identity (a
   driver cannot mislabel), ``seq`` (strictly increasing per runtime, continuing after a restart
   on the same log), ``event_id`` (``<hub run token>-<seq>``, unique across restarts) and
   ``created_at`` when it is 0;
3. appends the batch to the SQLite event log in one transaction (``executemany``) **before**
4. publishing: one hand-off per batch to each matching subscription.

While it works, further emit batches queue in its mailbox; it drains them greedily into one log
transaction (up to ``max_batch_events`` events). Nothing on this path blocks on a subscriber.
If the log append fails (disk, or the test hook), the batch is neither committed nor shown and
the hub actor fails (``on_failure``): its supervisor restarts it on the same log.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec
import pykka

from runtime.contract import (
    EVENT_TYPES,
    EventBase,
    OperationTimeout,
    PaddockError,
    ValidationError,
)

from ._event_log import EventLog
from ._grammar import ThreadGrammar, warning
from ._subscription import DEFAULT_MAX_BUFFERED, Subscription

__all__ = ["Emitter", "EventHub", "HubHandle"]

_TAG = {cls: tag for tag, cls in EVENT_TYPES.items()}
_replace = msgspec.structs.replace


class _Control:
    __slots__ = ("arg",)

    def __init__(self, arg: object = None) -> None:
        self.arg = arg


class _Subscribe(_Control):
    __slots__ = ()


class _Unsubscribe(_Control):
    __slots__ = ()


class _Flush(_Control):
    __slots__ = ()


class _Compact(_Control):
    __slots__ = ()


class _KillWriter(_Control):
    __slots__ = ()


class _State:
    """What the handle reads without asking the hub (written only by the hub thread)."""

    __slots__ = ("dropped", "last_seq", "log_path")

    def __init__(self, log_path: str | None) -> None:
        self.log_path = log_path
        self.last_seq = 0
        self.dropped = 0


class Emitter:
    """Sends one identity's events to the hub. Thread-safe; build it with ``HubHandle.emitter``.

    ``emit`` runs in the caller's thread, does one ``tell`` per call, never blocks and never
    raises: when the hub is not running the batch is dropped and counted in
    ``HubHandle.dropped``.
    """

    __slots__ = ("_key", "_state", "_tell", "driver", "instance_id", "thread_id")

    def __init__(self, tell, state: _State, driver: str, instance_id: str, thread_id: str) -> None:
        self._tell = tell
        self._state = state
        self._key = (driver, instance_id, thread_id)
        self.driver = driver
        self.instance_id = instance_id
        self.thread_id = thread_id

    def emit(self, events: Sequence[EventBase]) -> None:
        """Queue ``events`` (in order) for the hub; the hub stamps their identity and ``seq``."""
        if not events:
            return
        try:
            self._tell((self._key, tuple(events)))
        except Exception:
            self._state.dropped += len(events)

    def __repr__(self) -> str:
        return f"<Emitter {self.driver}/{self.instance_id}/{self.thread_id}>"


class HubHandle:
    """The thread-safe face of a running :class:`EventHub`. Every method may be called from any
    thread; the ones that ``ask`` the hub take a keyword-only ``timeout`` in seconds."""

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
    def dropped(self) -> int:
        """Events that emitters could not deliver because the hub was not running."""
        return self._state.dropped

    @property
    def alive(self) -> bool:
        return self._ref.is_alive()

    def emitter(self, driver: str, instance_id: str, thread_id: str) -> Emitter:
        """An :class:`Emitter` bound to this identity; the hub labels its events with it."""
        return Emitter(self._ref.tell, self._state, driver, instance_id, thread_id)

    def subscribe(
        self,
        thread_id: str | None = None,
        instance_id: str | None = None,
        types: Iterable[str] | None = None,
        from_seq: int | None = None,
        assistant_delivery: Literal["streaming", "buffered"] = "streaming",
        *,
        max_buffered: int | None = None,
        timeout: float = 10.0,
    ) -> Subscription:
        """Subscribe to the events matching every given filter (``types``: event type names).

        Without ``from_seq`` the subscription sees events published after this call returns.
        With it, it first replays the logged events with ``seq >= from_seq``, then continues
        live with no gap and no duplicate (pass ``last seen seq + 1`` to resume). ``from_seq``
        needs the event log (:class:`ValidationError` otherwise). Raises
        :class:`OperationTimeout`, or :class:`PaddockError` if the hub is not running.
        """
        if from_seq is not None and self._state.log_path is None:
            raise ValidationError("subscribe", "from_seq needs the event log (log_path is None)")
        sub = Subscription(
            thread_id=thread_id,
            instance_id=instance_id,
            types=types,
            assistant_delivery=assistant_delivery,
            log_path=self._state.log_path,
            max_buffered=self._max_buffered if max_buffered is None else max_buffered,
            on_close=self._unsubscribe,
        )
        self._ask(_Subscribe((sub, from_seq)), "EventHub.subscribe", timeout)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        self._ref.tell(_Unsubscribe(sub))

    def flush(self, *, timeout: float = 10.0) -> int:
        """Return once every batch told before this call is committed and published; returns
        :attr:`last_seq`. Raises :class:`OperationTimeout` or :class:`PaddockError` (hub not
        running)."""
        return self._ask(_Flush(), "EventHub.flush", timeout)

    def compact(self, before_seq: int, *, timeout: float = 30.0) -> int:
        """Delete logged events with ``seq < before_seq`` (the newest is always kept); returns
        how many were deleted. Subscribers replaying that range will not see them."""
        return self._ask(_Compact(before_seq), "EventHub.compact", timeout)

    def kill_writer_mid_batch(self, after_rows: int = 1, *, timeout: float = 10.0) -> None:
        """Test hook: the next log append inserts ``after_rows`` rows then fails before its
        commit, as if the writer were killed; the hub then fails without publishing that batch."""
        self._ask(_KillWriter(after_rows), "EventHub.kill_writer_mid_batch", timeout)

    def close(self, *, timeout: float = 10.0) -> None:
        """Process what is already queued, stop the hub, end every subscription (each still
        delivers what was published) and close the log. Idempotent."""
        try:
            self._ref.stop(block=True, timeout=timeout)
        except pykka.Timeout:
            raise OperationTimeout("EventHub.close", timeout) from None
        except pykka.ActorDeadError:
            pass

    def _ask(self, message: _Control, operation: str, timeout: float):
        try:
            return self._ref.ask(message, timeout=timeout)
        except pykka.Timeout:
            raise OperationTimeout(operation, timeout) from None
        except pykka.ActorDeadError:
            raise PaddockError(f"{operation} failed: the event hub is not running") from None

    def __enter__(self) -> HubHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class EventHub(pykka.ThreadingActor):
    """The fan-in actor. Start it with :meth:`start`, which returns a :class:`HubHandle`.

    Every ``on_*`` method runs in the hub's own actor thread.
    """

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
        self._subs: list[Subscription] = []
        self._grammar: dict[str, ThreadGrammar] = {}
        self._encode = msgspec.json.Encoder().encode
        self._batches = 0

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
        return HubHandle(ref, state, max_buffered)

    def on_failure(self, exception_type, exception_value, traceback) -> None:
        self._shutdown()

    def on_stop(self) -> None:
        self._shutdown()

    def _shutdown(self) -> None:
        for sub in self._subs:
            sub._finish()
        self._subs = []
        if self._log is not None:
            self._log.close()
            self._log = None

    def on_receive(self, message: object) -> object:
        if type(message) is tuple:
            batch = [message]
            inbox = self.actor_inbox
            pending = getattr(inbox, "queue", None)
            if pending is not None:
                # Drain the emit batches already queued behind this one, in order, stopping at
                # the first control message so that flush/subscribe keep their place.
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
        kind = type(message)
        if kind is _Flush:
            return self._seq
        if kind is _Subscribe:
            sub, from_seq = message.arg  # type: ignore[attr-defined]
            if from_seq is not None:
                sub._start_from(max(1, from_seq), self._seq)
            self._subs.append(sub)
            return None
        if kind is _Unsubscribe:
            try:
                self._subs.remove(message.arg)  # type: ignore[attr-defined]
            except ValueError:
                pass
            return None
        if kind is _Compact:
            if self._log is None:
                raise ValidationError("compact", "the event log is disabled")
            return self._log.compact(message.arg)  # type: ignore[attr-defined]
        if kind is _KillWriter:
            if self._log is None:
                raise ValidationError("kill_writer_mid_batch", "the event log is disabled")
            self._log.fail_after_rows = message.arg  # type: ignore[attr-defined]
            return None
        return super().on_receive(message)

    def _process(self, batch: list[tuple[tuple[str, str, str], tuple[EventBase, ...]]]) -> None:
        now = time.time()
        seq = self._seq
        token = self._token
        encode = self._encode
        grammar = self._grammar
        log = self._log
        out: list[EventBase] = []
        rows: list[tuple] = []
        for key, events in batch:
            driver, instance_id, thread_id = key
            guard = grammar.get(thread_id)
            if guard is None:
                guard = grammar[thread_id] = ThreadGrammar()
            try:
                checked = guard.check(events)
            except Exception as exc:  # a guard bug must not lose the driver's events
                checked = [*events, warning("grammar.guard_error", f"the grammar guard failed: {exc!r}")]
            for ev in checked:
                seq += 1
                created = ev.created_at or now
                ev = _replace(
                    ev,
                    driver=driver,
                    instance_id=instance_id,
                    thread_id=thread_id,
                    seq=seq,
                    event_id=f"{token}{seq}",
                    created_at=created,
                )
                out.append(ev)
                if log is not None:
                    rows.append((seq, thread_id, instance_id, _TAG[ev.__class__], created, encode(ev)))
        if not out:
            return
        if log is not None:
            log.append(rows)  # raises: nothing committed, nothing published, the hub fails
            self._batches += 1
            if log.max_bytes is not None and self._batches % 64 == 0:
                log.enforce_size()
        self._seq = seq
        self._state.last_seq = seq
        self._publish(out)

    def _publish(self, out: list[EventBase]) -> None:
        broken = None
        for sub in self._subs:
            try:
                if sub._closed:
                    raise LookupError
                selected = sub._select(out)
                if selected:
                    sub._offer(selected)
            except Exception:
                broken = broken or []
                broken.append(sub)
        if broken:
            for sub in broken:
                self._subs.remove(sub)
