"""Subscriptions: a consumer's bounded view of the hub's published stream.

The hub thread hands each subscription one list per published batch (``_offer``). The consumer
thread pulls with ``get``/iteration. Memory is bounded by ``max_buffered`` events (plus the batch
being read): a subscription that falls behind stops buffering and reads the committed log by
``seq`` until it has caught up, then rejoins the live stream. Nothing is lost, nothing repeats.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, TypedDict, cast

import msgspec

from paddock.contract import (
    EVENT_TYPES,
    ContentDelta,
    Event,
    EventBase,
    RuntimeWarningEvent,
    SessionExited,
    TurnCompleted,
    ValidationError,
)

from paddock.contract._construct import NoPublicConstructor

from ._event_log import LogReader

__all__ = ["BUFFERED_TEXT_LIMIT", "END", "NEEDS_IO", "SubscribeOptions", "Subscription", "type_filter"]

BUFFERED_TEXT_LIMIT = 24_000
"""Buffered assistant delivery coalesces at most this many characters into one delta."""
DEFAULT_MAX_BUFFERED = 20_000
_PAGE = 2_000

_LIVE = 0
_BEHIND = 1

END = object()
"""What a non-blocking poll of a :class:`Subscription` returns when the stream ended (closed, or
the hub stopped and everything was delivered)."""
NEEDS_IO = object()
"""What a non-blocking poll returns when the next event must be read from the log (an asyncio
caller then reads it in an executor)."""

_decoder = msgspec.json.Decoder(Event)
# Never dropped, also past the bound with the log off: how each turn and session ended (at most
# one per turn or session, so they cannot grow memory the way deltas can).
_ENDINGS = (TurnCompleted, SessionExited)


class SubscribeOptions(TypedDict, total=False):
    """The filters and bounds of a subscription by keyword, as :meth:`paddock.Runtime.subscribe`
    documents them; an absent key takes that method's default."""

    thread_id: str | None
    instance_id: str | None
    types: Iterable[str] | None
    from_seq: int | None
    assistant_delivery: Literal["streaming", "buffered"]
    max_buffered: int | None


def type_filter(types: Iterable[str] | None) -> frozenset[str] | None:
    """The ``types`` filter of a subscription as a set of event type names (one name may be
    given as a plain string); ``None`` keeps every type. Raises :class:`ValidationError` naming
    the unknown types."""
    if types is None:
        return None
    given: frozenset[object] | None = None
    if isinstance(types, str):
        given = frozenset([types])
    elif isinstance(types, Iterable) and not isinstance(types, (bytes, Mapping)):
        given = frozenset(types)
    if given is None or not all(isinstance(t, str) for t in given):
        raise ValidationError("subscribe", f"types must be event type names, not {types!r}")
    names = cast(frozenset[str], given)
    unknown = sorted(names - EVENT_TYPES.keys())
    if unknown:
        raise ValidationError("subscribe", f"unknown event types {unknown}")
    return names


class _Gap:
    """Marker left in the buffer where events were dropped (log disabled only)."""

    __slots__ = ("count", "first_seq", "last_seq")

    def __init__(self, first_seq: int, last_seq: int, count: int | None) -> None:
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.count = count


class Subscription(metaclass=NoPublicConstructor):
    """An iterator (and context manager) over the hub's events that match its filters.

    Built only by ``HubHandle.subscribe`` (or ``Runtime.subscribe``). Events arrive in ``seq`` order, each once.

    - :meth:`get` (any one consumer thread at a time) returns the next event, or ``None`` when
      ``timeout`` passed or the subscription has ended; :attr:`ended` tells which.
    - Iteration blocks for the next event and stops once the subscription is closed or the hub
      has stopped and every published event was delivered.
    - :meth:`close` may be called from any thread; it wakes a blocked ``get`` and the hub stops
      offering events to this subscription. It never affects other subscriptions.

    Slow consumers: at most ``max_buffered`` events are held in memory. Past that, with the event
    log enabled, the subscription reads the log from where it fell behind until it has caught
    up, then rejoins the live stream (no loss, no duplicate). With the log disabled, the events
    that do not fit are dropped, except ``turn.completed`` and ``session.exited`` (a subscriber
    that lost events still learns how each turn and session ended), and the consumer receives,
    in place of each run of dropped events, one ``runtime.warning`` with code
    ``subscription.gap`` (driver ``paddock``; its ``seq`` is that of the last event it replaces,
    so ``seq`` still increases) whose ``detail`` holds ``first_seq``, ``last_seq`` and ``count``
    of what it missed and ``cause="slow"``. The same warning with ``cause="compacted"`` (``count`` null) marks events
    that retention removed from the log before a replaying subscriber read them.

    ``assistant_delivery="buffered"`` coalesces consecutive ``assistant_text`` deltas of the
    same thread, turn and item into one ``content.delta`` of at most 24,000 characters. It
    carries the ``seq`` and ``event_id`` of the last delta it contains (so ``from_seq=seq+1``
    resumes after it) and is delivered as soon as any other event follows it (request, item,
    turn boundaries and anything else) or the limit is reached.
    """

    _public_factory = "HubHandle.subscribe(...) or Runtime.subscribe(...)"

    def __init__(
        self,
        *,
        thread_id: str | None = None,
        instance_id: str | None = None,
        types: Iterable[str] | None = None,
        assistant_delivery: Literal["streaming", "buffered"] = "streaming",
        log_path: str | None,
        max_buffered: int,
        on_close: Callable[[Subscription], None],
    ) -> None:
        if assistant_delivery not in ("streaming", "buffered"):
            raise ValidationError(
                "subscribe", f"assistant_delivery must be 'streaming' or 'buffered', got {assistant_delivery!r}"
            )
        type_names = type_filter(types)
        self.thread_id = thread_id
        self.instance_id = instance_id
        self.types = type_names
        self.assistant_delivery = assistant_delivery
        self._streaming = assistant_delivery == "streaming"
        self._classes = (
            None if type_names is None else frozenset(EVENT_TYPES[name] for name in type_names)
        )
        self._match_all = thread_id is None and instance_id is None and type_names is None
        self._bound = max(1, max_buffered)
        self._on_close = on_close
        self._reader = (
            LogReader(log_path, thread_id=thread_id, instance_id=instance_id, types=type_names)
            if log_path is not None
            else None
        )
        # shared with the hub thread, under _cond
        self._cond = threading.Condition(threading.Lock())
        self._buf: deque[list[EventBase] | _Gap] = deque()
        self._buffered = 0
        self._mode = _LIVE
        self._resume = 0  # BEHIND: the next seq to read from the log
        self._horizon = 0  # BEHIND: the last seq offered (committed) so far
        self._closed = False  # closed by the consumer
        self._source_done = False  # the hub stopped
        self._waiting = False
        self._waker: Callable[[], None] | None = None
        self._skip_below = 0  # from_seq beyond the log's end: live events below it are skipped
        # consumer-side state
        self._cur: list[Event] | None = None
        self._pos = 0
        self._lookahead: EventBase | None = None
        self._held: ContentDelta | None = None
        self._held_parts: list[str] = []
        self._held_len = 0
        self._last_held: ContentDelta | None = None

    # -- publishing thread: the hub's writer thread, or the hub's own thread without log -----

    def _select(self, events: list[EventBase]) -> list[EventBase]:
        """The events of a published batch that match the filters (publishing thread)."""
        if self._match_all:
            return events
        tid, iid, classes = self.thread_id, self.instance_id, self._classes
        if iid is None and classes is not None:
            if tid is None:
                return [e for e in events if e.__class__ in classes]
            return [e for e in events if e.thread_id == tid and e.__class__ in classes]
        return [
            e
            for e in events
            if (tid is None or e.thread_id == tid)
            and (iid is None or e.instance_id == iid)
            and (classes is None or e.__class__ in classes)
        ]

    def _start_from(self, from_seq: int, last_seq: int) -> None:
        """Replay ``from_seq..last_seq`` from the log first (hub thread, at registration)."""
        with self._cond:
            if from_seq <= last_seq:
                self._mode = _BEHIND
                self._resume = from_seq
                self._horizon = last_seq
            elif from_seq > last_seq + 1:
                self._skip_below = from_seq

    def _offer(self, events: list[EventBase]) -> None:
        """Hand over one committed batch of matching events (publishing thread). Never blocks."""
        with self._cond:
            if self._closed:
                return
            if self._skip_below:
                events = [e for e in events if e.seq >= self._skip_below]
                if not events:
                    return
                self._skip_below = 0
            if self._mode == _LIVE:
                if self._buffered + len(events) <= self._bound:
                    self._buf.append(events)
                    self._buffered += len(events)
                else:
                    room = self._bound - self._buffered
                    if room > 0:
                        self._buf.append(events[:room])
                        self._buffered += room
                        events = events[room:]
                    if self._reader is not None:
                        self._mode = _BEHIND
                        self._resume = events[0].seq
                        self._horizon = events[-1].seq
                    else:
                        self._drop(events)
            else:
                self._horizon = events[-1].seq
            waker = self._wake()
        if waker is not None:
            waker()

    def _drop(self, events: list[EventBase]) -> None:
        """Log off, past the bound: replace ``events`` by gap markers, keeping their endings
        (publishing thread, lock held)."""
        buf = self._buf
        for e in events:
            if e.__class__ in _ENDINGS:
                buf.append([e])
                self._buffered += 1
                continue
            last = buf[-1] if buf else None
            if isinstance(last, _Gap) and last.count is not None:
                last.last_seq = e.seq
                last.count += 1
            else:
                buf.append(_Gap(e.seq, e.seq, 1))

    def _finish(self) -> None:
        """The hub stopped: deliver what is left, then end (publishing thread)."""
        with self._cond:
            self._source_done = True
            waker = self._wake()
        if waker is not None:
            waker()

    def _drained_and_waiting(self) -> bool:
        """Its consumer is blocked in ``get`` with nothing buffered: it has taken, and handled,
        everything offered so far (any thread; the runtime's readers use it to sync without
        waiting a tick)."""
        with self._cond:
            return self._waiting and not self._buf and self._mode == _LIVE

    def _wake(self) -> Callable[[], None] | None:
        """Notify a blocked ``get`` (call with the lock held); return the one-shot waker, to be
        called after the lock is released."""
        if self._waiting:
            self._cond.notify()
        waker = self._waker
        self._waker = None
        return waker

    # -- consumer thread ----------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        """True once :meth:`get` will never return another event."""
        with self._cond:
            if self._closed:
                return True
            drained = (
                not self._buf
                and self._mode == _LIVE
                and (self._cur is None or self._pos >= len(self._cur))
                and self._lookahead is None
                and self._held is None
            )
            return self._source_done and drained

    def close(self) -> None:
        """Stop receiving events; wakes a blocked ``get``. Idempotent; any thread."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._buf.clear()
            self._buffered = 0
            waker = self._wake()
        if waker is not None:
            waker()
        try:
            self._on_close(self)
        except Exception:  # the hub may already be gone; it skips closed subscriptions anyway
            pass
        # The consumer's page read back from the log goes too (up to a page of events; a closed
        # subscription may stay referenced, by the hub until its next batch or by its caller).
        # A consumer in get() meanwhile holds its own reference and then sees _closed.
        self._cur = self._lookahead = None
        if self._reader is not None:
            self._reader.close()

    def _next_raw(self, timeout: float | None, io: bool) -> Any:
        """The next matching event, ``None`` on timeout, ``END`` or (``io=False``) ``NEEDS_IO``."""
        deadline = None
        while True:
            if self._closed:
                return END
            cur = self._cur
            if cur is not None:
                pos = self._pos
                if pos < len(cur):
                    self._pos = pos + 1
                    return cur[pos]
                self._cur = None
            with self._cond:
                if self._closed:
                    return END
                if self._buf:
                    item = self._buf.popleft()
                    if isinstance(item, _Gap):
                        return self._gap_warning(item)
                    self._buffered -= len(item)
                    self._cur = cast("list[Event]", item)  # the hub publishes only Event members
                    self._pos = 0
                    continue
                if self._mode == _BEHIND:
                    if not io:
                        return NEEDS_IO
                    start, horizon = self._resume, self._horizon
                elif self._source_done:
                    return END
                else:
                    if timeout is not None:
                        now = time.monotonic()
                        if deadline is None:
                            deadline = now + timeout
                        remaining = deadline - now
                        if remaining <= 0:
                            return None
                    else:
                        remaining = None
                    self._waiting = True
                    try:
                        self._cond.wait(remaining)
                    finally:
                        self._waiting = False
                    continue
            assert self._reader is not None
            floor = self._reader.first_seq()
            if floor is not None and floor > start:
                # the retention policy or compact() removed events this subscriber had not read
                with self._cond:
                    self._resume = min(floor, horizon + 1)
                    if self._resume > self._horizon:
                        self._mode = _LIVE
                return self._gap_warning(_Gap(start, min(floor, horizon + 1) - 1, None), "compacted")
            rows = self._reader.read(start, horizon, _PAGE)
            resume = horizon + 1 if len(rows) < _PAGE else rows[-1][0] + 1
            decode = _decoder.decode
            self._cur = [decode(body) for _, body in rows]
            self._pos = 0
            with self._cond:
                self._resume = resume
                if resume > self._horizon:
                    self._mode = _LIVE

    def _gap_warning(self, gap: _Gap, cause: str = "slow") -> RuntimeWarningEvent:
        if cause == "slow":
            message = (
                f"this subscriber fell behind with the event log disabled; {gap.count} events "
                f"(seq {gap.first_seq}..{gap.last_seq}) were dropped for it"
            )
        else:
            message = (
                f"events seq {gap.first_seq}..{gap.last_seq} were removed from the event log "
                "(retention) before this subscriber read them"
            )
        return RuntimeWarningEvent(
            driver="paddock",
            instance_id=self.instance_id or "",
            thread_id=self.thread_id or "",
            seq=gap.last_seq,
            created_at=time.time(),
            code="subscription.gap",
            message=message,
            detail={"first_seq": gap.first_seq, "last_seq": gap.last_seq, "count": gap.count,
                    "cause": cause},
        )

    def _get(self, timeout: float | None, io: bool = True) -> Any:
        if self.assistant_delivery == "streaming":
            return self._next_raw(timeout, io)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            ev = self._lookahead
            if ev is not None:
                self._lookahead = None
            else:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                ev = self._next_raw(remaining, io)
                if ev is None or ev is NEEDS_IO:
                    return ev
                if ev is END:
                    if self._held is not None and not self._closed:
                        return self._flush_held()
                    return END
            if ev.__class__ is ContentDelta and ev.stream == "assistant_text":
                held = self._held
                if held is not None:
                    if (
                        ev.item_id == held.item_id
                        and ev.turn_id == held.turn_id
                        and ev.thread_id == held.thread_id
                        and self._held_len + len(ev.delta) <= BUFFERED_TEXT_LIMIT
                    ):
                        self._held_parts.append(ev.delta)
                        self._held_len += len(ev.delta)
                        self._last_held = ev
                        if self._held_len >= BUFFERED_TEXT_LIMIT:
                            return self._flush_held()
                        continue
                    self._lookahead = ev
                    return self._flush_held()
                self._held = self._last_held = ev
                self._held_parts = [ev.delta]
                self._held_len = len(ev.delta)
                if self._held_len >= BUFFERED_TEXT_LIMIT:
                    return self._flush_held()
                continue
            if self._held is not None:
                self._lookahead = ev
                return self._flush_held()
            return ev

    def _flush_held(self) -> ContentDelta:
        first, last, parts = self._held, self._last_held, self._held_parts
        assert first is not None and last is not None
        self._held = self._last_held = None
        self._held_parts = []
        self._held_len = 0
        if first is last:
            return first
        return msgspec.structs.replace(
            first, delta="".join(parts), seq=last.seq, event_id=last.event_id
        )

    def get(self, timeout: float | None = None) -> Event | None:
        """Return the next event; ``None`` if ``timeout`` seconds passed first or the
        subscription has ended (closed, or the hub stopped and all was delivered).

        Runs in the caller's thread; may read the event log (SQLite) while catching up.
        Raises :class:`PersistenceError` if the log cannot be read.
        """
        if self._streaming and not self._closed:
            cur = self._cur
            if cur is not None:
                pos = self._pos
                if pos < len(cur):  # fast path: the next event of the batch in hand
                    self._pos = pos + 1
                    return cur[pos]
        ev = self._get(timeout)
        return None if ev is END else ev

    def _poll(self) -> Any:
        """Non-blocking, memory only: an event, ``None``, ``END`` or ``NEEDS_IO``."""
        return self._get(0.0, io=False)

    def _set_waker(self, waker: Callable[[], None] | None) -> None:
        """Call ``waker`` once (from the hub thread) at the next offer or end."""
        with self._cond:
            if self._closed or self._source_done or self._buf or self._mode == _BEHIND:
                self._waker = None
                waker_now = waker
            else:
                self._waker = waker
                waker_now = None
        if waker_now is not None:
            waker_now()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        ev = self.get()
        if ev is None:  # without a timeout, only the end
            raise StopIteration
        return ev

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        filters = {
            k: v
            for k, v in (
                ("thread_id", self.thread_id),
                ("instance_id", self.instance_id),
                ("types", sorted(self.types) if self.types else None),
            )
            if v is not None
        }
        return f"<Subscription {filters} {self.assistant_delivery}>"
