"""The grammar checker: reads a transcript of canonical events and reports every broken rule.

Pure and read-only: it repairs nothing (the EventHub's guard keeps repairing and warning as it
does, ``actors/events/_grammar.py``) and it never raises on bad input. The conformance suite runs
every driver's events through it; hosts may run their own.

The rules are the seven of the canonical event grammar (``docs/architecture.md``, "The event
grammar"), with the codes the hub's guard uses, plus five of the checker's own:

====  =======================================  ==================================================
rule  code                                     broken when
====  =======================================  ==================================================
1     ``grammar.turn_not_completed``           a turn has no ``turn.completed`` (at the end of a
                                               finished transcript, or when its session exited)
1     ``grammar.duplicate_turn_completed``     a turn has a second ``turn.completed``
2     ``grammar.late_event``                   ``content.delta``/``item.*`` after its turn completed
3     ``grammar.request_not_resolved``         a request is still open when its turn completes,
                                               its session exits or a finished transcript ends
3     ``grammar.duplicate_request_resolved``   a request is resolved twice
4     ``grammar.token_usage_backwards``        a cumulative token count of a thread decreases
5     ``grammar.item_text_mismatch``           ``item.completed`` text differs from its deltas
6     ``grammar.item_after_abort``             ``item.started`` after ``turn.aborted``
7     ``grammar.out_of_order``                 an item event after its ``item.completed``,
                                               ``turn.started`` of a completed turn, or
                                               ``turn.queued`` that is not its turn's first event
8     ``grammar.seq_not_increasing``           ``seq`` does not strictly increase
9     ``grammar.unstable_id``                  an item or request id changes turn, or an item its
                                               kind, within the transcript
10    ``grammar.turn_without_thread``          an event of a turn, item or request names no thread
11    ``grammar.event_after_interrupt``        after ``turn.aborted`` (the acknowledgement of
                                               ``interrupt_turn``) anything of that turn but its
                                               completion: only ``turn.completed``, the
                                               ``item.completed`` of items already started, the
                                               resolution of requests already open, token usage
                                               and runtime warnings/errors may follow
12    ``grammar.turn_too_large``               a turn's encoded events exceed the byte bound
====  =======================================  ==================================================

A ``runtime.warning`` whose code starts with ``grammar.`` is the hub saying it repaired a broken
rule: it is reported as a violation with the warning's own code (the repaired stream no longer
shows the break itself). A violation carries the offending events, as they were given.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from ._events import (
    ContentDelta,
    EventBase,
    ItemCompleted,
    ItemStarted,
    ItemUpdated,
    RequestOpened,
    RequestResolved,
    RuntimeWarningEvent,
    SessionExited,
    StreamKind,
    ThreadTokenUsageUpdated,
    TurnAborted,
    TurnCompleted,
    TurnPlanUpdated,
    TurnProposedCompleted,
    TurnProposedDelta,
    TurnQueued,
    TurnStarted,
    UserInputRequested,
    UserInputResolved,
    encode_event,
)

__all__ = ["CUMULATIVE_USAGE", "GRAMMAR_RULES", "TURN_BYTE_LIMIT", "GrammarViolation", "check_grammar"]

GRAMMAR_RULES: Final[dict[str, int]] = {
    "grammar.turn_not_completed": 1,
    "grammar.duplicate_turn_completed": 1,
    "grammar.late_event": 2,
    "grammar.request_not_resolved": 3,
    "grammar.duplicate_request_resolved": 3,
    "grammar.token_usage_backwards": 4,
    "grammar.item_text_mismatch": 5,
    "grammar.item_after_abort": 6,
    "grammar.out_of_order": 7,
    "grammar.seq_not_increasing": 8,
    "grammar.unstable_id": 9,
    "grammar.turn_without_thread": 10,
    "grammar.event_after_interrupt": 11,
    "grammar.turn_too_large": 12,
}
"""Every code the checker reports, with its rule number. The codes are stable."""

TURN_BYTE_LIMIT: Final = 32 * 1024 * 1024
"""The default bound on one turn's events, as encoded JSON (32 MiB)."""

ITEM_TEXT_STREAM: Final[dict[str, StreamKind]] = {
    "assistant_message": "assistant_text", "reasoning": "reasoning_text", "plan": "plan_text",
}
"""Rule 5: item kind -> the delta stream whose concatenation must equal ``item.completed``'s text
(the hub's guard, ``actors/events/_grammar.py``, keeps the same rule)."""
CUMULATIVE_USAGE: Final = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens",
                           "total_tokens", "cost")
"""Rule 4: the token usage counts of a thread that never decrease."""
_AFTER_ABORT_FORBIDDEN: Final = (ContentDelta, ItemUpdated, RequestOpened, UserInputRequested, TurnPlanUpdated,
                                 TurnProposedDelta, TurnProposedCompleted)


class GrammarViolation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One broken rule: its stable ``code``, its ``rule`` number (:data:`GRAMMAR_RULES`), what
    went wrong, and the offending events (the first one is where it was seen)."""

    code: str
    rule: int
    message: str
    thread_id: str
    turn_id: str | None = None
    events: tuple[EventBase, ...] = ()


class _Turn:
    __slots__ = ("aborted", "bytes", "completed", "first", "items", "over", "queued", "requests", "streamed")

    def __init__(self, first: EventBase) -> None:
        self.first = first
        self.queued = isinstance(first, TurnQueued)  # only queued so far: no session holds it yet
        self.completed: EventBase | None = None
        self.aborted = False
        self.bytes = 0
        self.over = False
        self.items: dict[str, EventBase] = {}  # started (or first seen) -> that event
        self.requests: dict[str, EventBase] = {}  # open -> its request.opened
        self.streamed: dict[tuple[str, str], list[ContentDelta]] = {}


class _Checker:
    def __init__(self, turn_bytes: int) -> None:
        self.turn_bytes = turn_bytes
        self.out: list[GrammarViolation] = []
        self.turns: dict[tuple[str, str], _Turn] = {}
        self.done_items: dict[tuple[str, str], EventBase] = {}  # (thread, item) -> item.completed
        self.item_owner: dict[tuple[str, str], tuple[str, str | None]] = {}  # -> (turn, kind)
        self.request_owner: dict[tuple[str, str], str | None] = {}
        self.resolved: dict[tuple[str, str], EventBase] = {}
        self.usage: dict[str, dict[str, float]] = {}
        self.last_seq: EventBase | None = None

    def report(self, code: str, message: str, ev: EventBase, *more: EventBase, turn_id: str | None = None) -> None:
        self.out.append(GrammarViolation(code=code, rule=GRAMMAR_RULES[code], message=message,
                                         thread_id=ev.thread_id, turn_id=turn_id or ev.turn_id,
                                         events=(ev, *more)))

    def turn(self, ev: EventBase, tid: str) -> _Turn:
        key = (ev.thread_id, tid)
        t = self.turns.get(key)
        if t is None:
            t = self.turns[key] = _Turn(ev)
        return t

    def event(self, ev: EventBase) -> None:
        if self.last_seq is not None and ev.seq <= self.last_seq.seq:
            self.report("grammar.seq_not_increasing",
                        f"seq {ev.seq} follows seq {self.last_seq.seq}", ev, self.last_seq)
        self.last_seq = ev
        if isinstance(ev, RuntimeWarningEvent) and ev.code in GRAMMAR_RULES:
            self.report(ev.code, f"the hub repaired: {ev.message}", ev)
            return
        if not ev.thread_id and (ev.turn_id or ev.item_id or ev.request_id):
            self.report("grammar.turn_without_thread",
                        f"{ev.type} of turn {ev.turn_id!r} names no thread", ev)
            return
        if isinstance(ev, SessionExited):
            self.exited(ev)
            return
        tid = ev.turn_id
        if tid is None:
            if isinstance(ev, ThreadTokenUsageUpdated):
                self.token_usage(ev)
            return
        t = self.turn(ev, tid)
        self.bound(t, ev)
        self.ids(ev, tid)
        if t.completed is not None:
            self.after_completion(t, ev)
            return
        if isinstance(ev, TurnQueued) and t.first is not ev:
            self.report("grammar.out_of_order", f"turn.queued of turn {tid!r} after its first event", ev, t.first)
            return
        if t.queued and ev is not t.first:
            t.queued = False
        if t.aborted and isinstance(ev, _AFTER_ABORT_FORBIDDEN):
            self.report("grammar.event_after_interrupt",
                        f"{ev.type} of turn {tid!r} after its interrupt was acknowledged", ev)
        if isinstance(ev, (ContentDelta, ItemStarted, ItemUpdated, ItemCompleted)):
            self.item(t, ev)
        elif isinstance(ev, TurnAborted):
            t.aborted = True
        elif isinstance(ev, TurnCompleted):
            for request in t.requests.values():
                self.report("grammar.request_not_resolved",
                            f"request {request.request_id!r} still open when turn {tid!r} completed", request, ev)
            t.requests.clear()
            t.completed = ev
        elif isinstance(ev, (RequestOpened, UserInputRequested)):
            if ev.request_id is not None:
                t.requests[ev.request_id] = ev
        elif isinstance(ev, (RequestResolved, UserInputResolved)):
            self.resolution(t, ev)
        elif isinstance(ev, ThreadTokenUsageUpdated):
            self.token_usage(ev)

    def bound(self, t: _Turn, ev: EventBase) -> None:
        if t.over:
            return
        t.bytes += len(encode_event(ev))
        if t.bytes > self.turn_bytes:
            t.over = True
            self.report("grammar.turn_too_large",
                        f"turn {ev.turn_id!r} exceeds {self.turn_bytes} bytes of events", ev)

    def ids(self, ev: EventBase, tid: str) -> None:
        thread = ev.thread_id
        if ev.item_id is not None:
            kind = getattr(ev, "kind", None) if isinstance(ev, (ItemStarted, ItemUpdated, ItemCompleted)) else None
            key = (thread, ev.item_id)
            owner = self.item_owner.get(key)
            if owner is None:
                self.item_owner[key] = (tid, kind)
            elif owner[0] != tid:
                self.report("grammar.unstable_id", f"item {ev.item_id!r} of turn {owner[0]!r} reappears in turn {tid!r}",
                            ev)
            elif kind is not None and owner[1] is not None and kind != owner[1]:
                self.report("grammar.unstable_id", f"item {ev.item_id!r} changed kind from {owner[1]!r} to {kind!r}", ev)
            elif kind is not None and owner[1] is None:
                self.item_owner[key] = (tid, kind)
        if ev.request_id is not None and isinstance(ev, (RequestOpened, RequestResolved, UserInputRequested,
                                                          UserInputResolved)):
            key = (thread, ev.request_id)
            rtid = self.request_owner.setdefault(key, tid)
            if rtid != tid:
                self.report("grammar.unstable_id", f"request {ev.request_id!r} of turn {rtid!r} reappears in turn {tid!r}",
                            ev)

    def after_completion(self, t: _Turn, ev: EventBase) -> None:
        assert t.completed is not None
        if isinstance(ev, TurnCompleted):
            self.report("grammar.duplicate_turn_completed", f"second turn.completed of turn {ev.turn_id!r}", ev,
                        t.completed)
        elif isinstance(ev, (ContentDelta, ItemStarted, ItemUpdated, ItemCompleted)):
            self.report("grammar.late_event", f"{ev.type} after turn {ev.turn_id!r} completed", ev, t.completed)
        elif isinstance(ev, (TurnStarted, TurnQueued)):
            self.report("grammar.out_of_order", f"{ev.type} of turn {ev.turn_id!r} after it completed", ev,
                        t.completed)
        elif isinstance(ev, (RequestResolved, UserInputResolved)):
            self.resolution(t, ev)
        elif isinstance(ev, ThreadTokenUsageUpdated):
            self.token_usage(ev)

    def item(self, t: _Turn, ev: ContentDelta | ItemStarted | ItemUpdated | ItemCompleted) -> None:
        key = self.fresh(self.done_items, ev, ev.item_id, "grammar.out_of_order", "{type} after item {id!r} completed")
        if key is None:
            return
        iid = key[1]
        if isinstance(ev, ItemStarted):
            if t.aborted:
                self.report("grammar.item_after_abort",
                            f"item {iid!r} started after turn {ev.turn_id!r} was aborted", ev)
            t.items.setdefault(iid, ev)
        elif isinstance(ev, ContentDelta):
            t.items.setdefault(iid, ev)
            t.streamed.setdefault((iid, ev.stream), []).append(ev)
        elif isinstance(ev, ItemUpdated):
            t.items.setdefault(iid, ev)
        else:
            self.done_items[key] = ev
            stream = ITEM_TEXT_STREAM.get(ev.kind)
            deltas = t.streamed.pop((iid, stream), None) if stream is not None else None
            if deltas and ev.text is not None:
                streamed = "".join(d.delta for d in deltas)
                if streamed != ev.text:
                    at = next((i for i, (a, b) in enumerate(zip(streamed, ev.text)) if a != b),
                              min(len(streamed), len(ev.text)))
                    self.report("grammar.item_text_mismatch",
                                f"item {iid!r} completed with {len(ev.text)} characters, its deltas carried "
                                f"{len(streamed)}; first difference at {at}", ev, *deltas)

    def resolution(self, t: _Turn, ev: RequestResolved | UserInputResolved) -> None:
        key = self.fresh(self.resolved, ev, ev.request_id, "grammar.duplicate_request_resolved",
                         "request {id!r} resolved a second time")
        if key is not None:
            self.resolved[key] = ev
            t.requests.pop(key[1], None)

    def fresh(self, seen: dict[tuple[str, str], EventBase], ev: EventBase, ident: str | None, code: str,
              message: str) -> tuple[str, str] | None:
        """The key ``(thread, ident)`` of ``ev``, or ``None`` when it has no ``ident`` or ``seen``
        already holds the key (then ``code`` is reported with ``message`` formatted with the event's
        ``type`` and ``id``, citing the earlier event)."""
        if ident is None:
            return None
        key = (ev.thread_id, ident)
        first = seen.get(key)
        if first is not None:
            self.report(code, message.format(type=ev.type, id=ident), ev, first)
            return None
        return key

    def token_usage(self, ev: ThreadTokenUsageUpdated) -> None:
        seen = self.usage.setdefault(ev.thread_id, {})
        back = []
        for name in CUMULATIVE_USAGE:
            value = getattr(ev.usage, name)
            if value is None:
                continue
            prev = seen.get(name)
            if prev is not None and value < prev:
                back.append(f"{name} {prev:g} -> {value:g}")
            else:
                seen[name] = value
        if back:
            self.report("grammar.token_usage_backwards", "token usage went backwards: " + ", ".join(back), ev)

    def exited(self, ev: SessionExited) -> None:
        for (thread, tid), t in self.turns.items():
            if thread == ev.thread_id and t.completed is None and not t.queued:
                self.open_turn(t, tid, f"turn {tid!r} had not completed when its session exited", ev)

    def open_turn(self, t: _Turn, tid: str, message: str, *more: EventBase) -> None:
        for request in t.requests.values():
            self.report("grammar.request_not_resolved", f"request {request.request_id!r} was never resolved",
                        request, *more)
        t.requests.clear()
        self.report("grammar.turn_not_completed", message, t.first, *more, turn_id=tid)
        t.completed = more[0] if more else t.first

    def finish(self) -> None:
        for (_, tid), t in self.turns.items():
            if t.completed is None:
                self.open_turn(t, tid, f"turn {tid!r} has no turn.completed")


def check_grammar(events: Iterable[EventBase], *, finished: bool = True,
                  turn_bytes: int = TURN_BYTE_LIMIT) -> list[GrammarViolation]:
    """Every violation of the event grammar in ``events`` (a transcript as a subscriber saw it:
    stamped, in order), in the order they were found; empty when the transcript keeps it.

    ``finished`` says the transcript is complete: a turn or request still open at its end is then
    a violation (pass ``False`` for a live stream read so far). ``turn_bytes`` bounds one turn's
    events as encoded JSON. Pure; runs on the caller's thread and never raises on bad events.
    """
    checker = _Checker(turn_bytes)
    for ev in events:
        checker.event(ev)
    if finished:
        checker.finish()
    return checker.out
