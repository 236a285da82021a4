"""The grammar guard: keeps the seven rules of the canonical event grammar, per thread.

It runs in the EventHub's thread, in front of sequencing, and never raises into a driver. Where a
driver breaks a rule it repairs what is safe to repair and adds a ``runtime.warning`` whose
``code`` is ``grammar.<violation>`` and whose ``detail`` holds ``rule`` (1..7), the offending
``event_type`` and, for drops, ``count`` (repeated drops of one event type for one turn and item
within one batch share one warning, placed where the first was dropped). The warning's
``turn_id``, ``item_id`` and ``request_id`` name what it concerns.

Repairs (rule numbers from docs/architecture.md, "Canonical events"):

1. ``grammar.turn_not_completed``: ``session.exited`` while a turn is open: first the turn's open
   requests are expired (rule 3), then ``turn.completed(state="failed")`` is synthesized, then
   ``session.exited`` passes. ``grammar.duplicate_turn_completed``: a second ``turn.completed``
   of a turn is dropped.
2. ``grammar.late_event``: ``content.delta`` or ``item.*`` of a completed turn is dropped.
3. ``grammar.request_not_resolved``: a turn completes with open requests: a
   ``request.resolved(resolution="cancelled")`` (``user-input.resolved`` for user-input
   requests) is synthesized before the ``turn.completed``; at ``session.exited`` open requests
   get ``resolution="expired"``. ``grammar.duplicate_request_resolved``: a second resolution of a
   request is dropped.
4. ``grammar.token_usage_backwards``: a cumulative count lower than one already reported is
   clamped to the previous value; the update is dropped when nothing new remains. The warning is
   said once per thread; later ones are repaired the same way without one.
5. ``grammar.item_text_mismatch``: ``item.completed`` text differs from its concatenated deltas
   (assistant_message/assistant_text, reasoning/reasoning_text, plan/plan_text). When the deltas
   are a strict prefix of the text, the missing suffix is synthesized as one more
   ``content.delta`` before ``item.completed`` (the stream becomes consistent). Otherwise the
   native ``item.completed`` text is kept as the authoritative final text and the warning's
   detail gives both lengths and the first differing offset (``None`` when the texts agree on
   their first :data:`HEAD_CHARS` characters: only those are kept). Per item the guard keeps
   the streamed length, a running BLAKE2b digest and that head, never the deltas themselves,
   so its memory does not grow with the number of deltas.
6. ``grammar.item_after_abort``: after ``turn.aborted`` (the driver's acknowledgement of an
   interrupt) an ``item.started`` of that turn is dropped, and so is every later event of that
   item.
7. ``grammar.out_of_order``: an event that can only come earlier in the native order arrives
   later: ``item.started``/``item.updated``/``content.delta`` of an item after its
   ``item.completed``, a second ``item.completed``, or ``turn.started`` of a completed turn. It is
   dropped. (The hub itself keeps each emitter's order: one mailbox, one ``tell`` per batch.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from paddock.contract import (
    EVENT_TYPES,
    ContentDelta,
    EventBase,
    ItemCompleted,
    ItemStarted,
    ItemUpdated,
    RequestOpened,
    RequestResolved,
    RuntimeWarningEvent,
    SessionExited,
    TO_BE_STAMPED,
    StreamKind,
    ThreadTokenUsageUpdated,
    TokenUsage,
    TurnAborted,
    TurnCompleted,
    TurnStarted,
    UserInputRequested,
    UserInputResolved,
)
from paddock.contract._grammar import CUMULATIVE_USAGE, ITEM_TEXT_STREAM

__all__ = ["ThreadGrammar", "warning"]

_TAG = {cls: tag for tag, cls in EVENT_TYPES.items()}
_TRACKED_STREAMS = frozenset(ITEM_TEXT_STREAM.values())
_REMEMBER = 128  # completed turns / resolved requests remembered per thread (bounds memory)
HEAD_CHARS = 4096
"""Characters of each item's streamed text the guard keeps, to locate a mismatch."""
_replace = msgspec.structs.replace


def warning(code: str, message: str, *, rule: int | None = None, source: EventBase | None = None,
            turn_id: str | None = None, item_id: str | None = None, request_id: str | None = None,
            **detail: Any) -> RuntimeWarningEvent:
    """A ``runtime.warning`` for the hub to stamp (identity fields are filled by the hub).

    Its ``turn_id``/``item_id``/``request_id`` are those of ``source`` (the offending event) unless
    given; ``detail`` gets ``rule`` and ``event_type``.
    """
    if rule is not None:
        detail["rule"] = rule
    if source is not None:
        detail.setdefault("event_type", _TAG[source.__class__])
        turn_id = turn_id or source.turn_id
        item_id = item_id or source.item_id
        request_id = request_id or source.request_id
    return RuntimeWarningEvent(
        **TO_BE_STAMPED,
        turn_id=turn_id,
        item_id=item_id,
        request_id=request_id,
        code=code,
        message=message,
        detail=detail,
    )


_AFTER_CLOSE: dict[type[EventBase], tuple[str, int, str]] = {
    TurnStarted: ("grammar.out_of_order", 7, "turn.started of turn {!r} after it completed; dropped"),
    TurnCompleted: ("grammar.duplicate_turn_completed", 1, "second turn.completed of turn {!r}; dropped"),
}
"""The turn events dropped once their turn has completed: warning code, rule, message."""


class _Text:
    """What the guard keeps of one item's streamed text: its length, digest and head. Deltas of
    the current batch wait in ``pending`` and are folded in once per batch (one join, one
    digest update)."""

    __slots__ = ("digest", "head", "length", "pending")

    def __init__(self, first: str) -> None:
        self.pending = [first]
        self.length = 0
        self.head = ""
        self.digest = hashlib.blake2b(digest_size=16)

    def fold(self) -> None:
        pending = self.pending
        if not pending:
            return
        joined = pending[0] if len(pending) == 1 else "".join(pending)
        pending.clear()
        self.length += len(joined)
        if len(self.head) < HEAD_CHARS:
            self.head += joined[: HEAD_CHARS - len(self.head)]
        self.digest.update(joined.encode("utf-8", "surrogatepass"))


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class _Turn:
    __slots__ = ("aborted", "done_items", "dropped_items", "texts")

    def __init__(self) -> None:
        self.aborted = False
        self.done_items: set[str] = set()
        self.dropped_items: set[str] = set()
        self.texts: dict[tuple[str, str], _Text] = {}


class _Drops:
    """Collects repeated drops within one batch into one warning at the first drop's place."""

    __slots__ = ("out", "slots")

    def __init__(self, out: list[Any]) -> None:
        self.out = out
        self.slots: dict[tuple[Any, ...], list[Any]] = {}

    def drop(self, code: str, rule: int, message: str, ev: EventBase) -> None:
        key = (code, ev.__class__, ev.turn_id, ev.item_id)
        slot = self.slots.get(key)
        if slot is None:
            self.slots[key] = [len(self.out), code, rule, message, ev, 1]
            self.out.append(None)
        else:
            slot[5] += 1

    def fill(self) -> None:
        for index, code, rule, message, ev, count in self.slots.values():
            self.out[index] = warning(code, message, rule=rule, source=ev, count=count)


class ThreadGrammar:
    """Grammar state of one thread. Not thread-safe: only the hub's thread calls :meth:`check`."""

    __slots__ = ("closed", "requests", "resolved", "turns", "usage", "usage_warned")

    def __init__(self) -> None:
        self.turns: dict[str, _Turn] = {}
        self.closed: dict[str, None] = {}  # completed turn ids, oldest first
        self.requests: dict[str, tuple[str | None, bool]] = {}  # open: id -> (turn, user-input?)
        self.resolved: dict[str, None] = {}
        self.usage: dict[str, float] = {}
        self.usage_warned = False  # one token_usage_backwards warning per thread; repairs go on silently

    def _turn(self, tid: str) -> _Turn | None:
        """The open turn ``tid`` (opened implicitly), or ``None`` if it has completed."""
        t = self.turns.get(tid)
        if t is None:
            if tid in self.closed:
                return None
            t = self.turns[tid] = _Turn()
        return t

    def _close_turn(self, tid: str) -> None:
        self.turns.pop(tid, None)
        closed = self.closed
        closed[tid] = None
        if len(closed) > _REMEMBER:
            del closed[next(iter(closed))]

    def _resolve_open(self, out: list[Any], tid: str | None, resolution: Literal["cancelled", "expired"], code: str,
                      why: str, only_turn: bool) -> None:
        for rid, (rtid, user_input) in list(self.requests.items()):
            if only_turn and rtid != tid:
                continue
            del self.requests[rid]
            self._remember_resolved(rid)
            kind = UserInputResolved if user_input else RequestResolved
            out.append(warning(code, f"request {rid!r} was never resolved; {why}", rule=3,
                               resolution=resolution, request_id=rid, turn_id=rtid))
            out.append(kind(**TO_BE_STAMPED, turn_id=rtid,
                            request_id=rid, resolution=resolution))

    def _remember_resolved(self, rid: str) -> None:
        resolved = self.resolved
        resolved[rid] = None
        if len(resolved) > _REMEMBER:
            del resolved[next(iter(resolved))]

    def check(self, events: Sequence[EventBase]) -> list[EventBase]:
        """Return ``events`` repaired, with warnings in place (the hub's thread)."""
        out: list[Any] = []
        drops: _Drops | None = None
        # A run of deltas of one turn, item and stream (the common case) is checked once: the
        # state it depends on changes only through other event types, which end the run.
        run = False
        run_turn = run_item = run_stream = None
        run_parts: list[str] = []
        touched: list[_Text] = []
        ev: Any  # dispatched on its exact class below, which mypy cannot follow through ``cls``
        for ev in events:
            cls = ev.__class__
            tid = ev.turn_id
            if cls is ContentDelta:
                if run and tid == run_turn and ev.item_id == run_item and ev.stream == run_stream:
                    run_parts.append(ev.delta)
                    out.append(ev)
                    continue
                if tid is not None:
                    t = self.turns.get(tid) or self._turn(tid)
                    if t is None:
                        drops = drops or _Drops(out)
                        drops.drop("grammar.late_event", 2, f"content.delta after turn {tid!r} completed; dropped", ev)
                        continue
                    iid = ev.item_id
                    if iid is not None:
                        if iid in t.dropped_items:
                            drops = drops or _Drops(out)
                            drops.drop("grammar.item_after_abort", 6, f"event of item {iid!r} that started after turn {tid!r} was aborted; dropped", ev)
                            continue
                        if iid in t.done_items:
                            drops = drops or _Drops(out)
                            drops.drop("grammar.out_of_order", 7, f"content.delta after item {iid!r} completed; dropped", ev)
                            continue
                        stream = ev.stream
                        if stream in _TRACKED_STREAMS:
                            kept = t.texts.get((iid, stream))
                            if kept is None:
                                kept = t.texts[(iid, stream)] = _Text(ev.delta)
                            else:
                                kept.pending.append(ev.delta)
                            touched.append(kept)
                            run, run_turn, run_item, run_stream, run_parts = True, tid, iid, stream, kept.pending
                out.append(ev)
                continue
            run = False
            if cls is ItemStarted or cls is ItemUpdated or cls is ItemCompleted:
                if tid is None:
                    out.append(ev)
                    continue
                t = self._turn(tid)
                name = _TAG[cls]
                if t is None:
                    drops = drops or _Drops(out)
                    drops.drop("grammar.late_event", 2, f"{name} after turn {tid!r} completed; dropped", ev)
                    continue
                iid = ev.item_id
                if iid is not None and iid in t.dropped_items:
                    drops = drops or _Drops(out)
                    drops.drop("grammar.item_after_abort", 6, f"event of item {iid!r} that started after turn {tid!r} was aborted; dropped", ev)
                    continue
                if iid is not None and iid in t.done_items:
                    drops = drops or _Drops(out)
                    drops.drop("grammar.out_of_order", 7, f"{name} after item {iid!r} completed; dropped", ev)
                    continue
                if cls is ItemStarted and t.aborted:
                    if iid is not None:
                        t.dropped_items.add(iid)
                    drops = drops or _Drops(out)
                    drops.drop("grammar.item_after_abort", 6, f"item.started after turn {tid!r} was aborted; dropped", ev)
                    continue
                if cls is ItemCompleted and iid is not None:
                    t.done_items.add(iid)
                    stream = ITEM_TEXT_STREAM.get(ev.kind)
                    if stream is not None and ev.text is not None:
                        kept = t.texts.pop((iid, stream), None)
                        if kept is not None:
                            kept.fold()
                            self._check_text(out, ev, stream, kept)
                out.append(ev)
            elif cls in _AFTER_CLOSE and tid in self.closed:
                code, rule, text = _AFTER_CLOSE[cls]
                drops = drops or _Drops(out)
                drops.drop(code, rule, text.format(tid), ev)
                continue
            elif cls is TurnStarted:
                if tid is not None:
                    self._turn(tid)
                out.append(ev)
            elif cls is TurnAborted:
                if tid is not None:
                    t = self._turn(tid)
                    if t is not None:
                        t.aborted = True
                out.append(ev)
            elif cls is TurnCompleted:
                if tid is not None:
                    if self.requests:
                        self._resolve_open(out, tid, "cancelled", "grammar.request_not_resolved",
                                           f"cancelled because turn {tid!r} completed", True)
                    self._close_turn(tid)
                out.append(ev)
            elif cls is RequestOpened or cls is UserInputRequested:
                if ev.request_id is not None:
                    self.requests[ev.request_id] = (tid, cls is UserInputRequested)
                out.append(ev)
            elif cls is RequestResolved or cls is UserInputResolved:
                rid = ev.request_id
                if rid is not None:
                    if self.requests.pop(rid, None) is None and rid in self.resolved:
                        out.append(warning("grammar.duplicate_request_resolved",
                                           f"request {rid!r} was already resolved; this resolution is dropped",
                                           rule=3, source=ev))
                        continue
                    self._remember_resolved(rid)
                out.append(ev)
            elif cls is ThreadTokenUsageUpdated:
                fixed = self._check_usage(out, ev)
                if fixed is not None:
                    out.append(fixed)
            elif cls is SessionExited:
                for otid in list(self.turns):
                    if self.requests:
                        self._resolve_open(out, otid, "expired", "grammar.request_not_resolved",
                                           "expired because the session exited", True)
                    out.append(warning("grammar.turn_not_completed",
                                       f"turn {otid!r} had not completed when the session exited; a failed completion was synthesized",
                                       rule=1, turn_id=otid, reason=ev.reason))
                    out.append(TurnCompleted(**TO_BE_STAMPED, turn_id=otid,
                                             state="failed", error=f"session exited: {ev.reason}"))
                    self._close_turn(otid)
                if self.requests:
                    self._resolve_open(out, None, "expired", "grammar.request_not_resolved",
                                       "expired because the session exited", False)
                out.append(ev)
            else:
                out.append(ev)
        for kept in touched:
            kept.fold()
        if drops is not None:
            drops.fill()
        return out

    def _check_text(self, out: list[Any], ev: ItemCompleted, stream: StreamKind, streamed: _Text) -> None:
        text = ev.text
        assert text is not None
        length = streamed.length
        digest = streamed.digest.digest()
        if len(text) == length and _digest(text) == digest:
            return
        if length < len(text) and _digest(text[:length]) == digest:
            out.append(warning("grammar.item_text_mismatch",
                               f"item {ev.item_id!r} completed with text its deltas did not carry; the missing suffix was emitted as a delta",
                               rule=5, source=ev, streamed_chars=length, text_chars=len(text),
                               repair="suffix_delta"))
            out.append(ContentDelta(**TO_BE_STAMPED, turn_id=ev.turn_id,
                                    item_id=ev.item_id, stream=stream, delta=text[length:]))
            return
        head = streamed.head
        offset: int | None = next((i for i, (a, b) in enumerate(zip(text, head)) if a != b), None)
        if offset is None:
            known = min(len(text), len(head))
            offset = known if known < HEAD_CHARS or known == len(text) else None
        where = f"at offset {offset}" if offset is not None else f"after its first {HEAD_CHARS} characters"
        out.append(warning("grammar.item_text_mismatch",
                           f"item {ev.item_id!r} completed with text that differs from its deltas {where}; the completed text is kept",
                           rule=5, source=ev, streamed_chars=length, text_chars=len(text),
                           first_difference=offset, repair="kept_completed_text"))

    def _check_usage(self, out: list[Any], ev: ThreadTokenUsageUpdated) -> EventBase | None:
        usage = ev.usage
        seen = self.usage
        back: dict[str, float] = {}
        advanced = False
        for name in CUMULATIVE_USAGE:
            value = getattr(usage, name)
            if value is None:
                continue
            prev = seen.get(name)
            if prev is not None and value < prev:
                back[name] = prev
            else:
                if prev is None or value > prev:
                    advanced = True
                seen[name] = value
        if not back:
            return ev
        if not self.usage_warned:
            self.usage_warned = True
            out.append(warning("grammar.token_usage_backwards",
                               f"token usage went backwards ({', '.join(sorted(back))}); "
                               + ("clamped to the previous values" if advanced else "update dropped")
                               + " (said once per thread: later ones are repaired the same way, silently)",
                               rule=4, source=ev,
                               fields={k: {"previous": v, "reported": getattr(usage, k)} for k, v in back.items()}))
        if not advanced:
            return None
        clamped: TokenUsage = _replace(usage, **back)
        return _replace(ev, usage=clamped)
