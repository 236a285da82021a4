"""Hostile transcripts: one deliberately broken event stream per grammar code.

Each is a list of batches of unstamped events of thread ``t1`` (the hub stamps them), written the
way a broken driver would emit them. ``HOSTILE[code]`` breaks exactly the rule of ``code``.
"""

from __future__ import annotations

from collections.abc import Callable

from paddock.contract import (
    ContentDelta,
    EventBase,
    ItemCompleted,
    ItemStarted,
    RequestOpened,
    RequestResolved,
    SessionExited,
    ThreadTokenUsageUpdated,
    TokenUsage,
    TurnAborted,
    TurnCompleted,
    TurnStarted,
)

__all__ = ["HOSTILE", "HOSTILE_TURN_BYTES", "HUB_CODES", "ID", "stamp"]

ID = {"driver": "local", "instance_id": "hostile", "thread_id": "t1"}


def _started(turn: str = "u1") -> TurnStarted:
    return TurnStarted(**ID, turn_id=turn)


def _completed(turn: str = "u1", state: str = "completed") -> TurnCompleted:
    return TurnCompleted(**ID, turn_id=turn, state=state)


def _item(item: str, turn: str = "u1", kind: str = "assistant_message") -> ItemStarted:
    return ItemStarted(**ID, turn_id=turn, item_id=item, kind=kind)


def _done(item: str, text: str | None = None, turn: str = "u1", kind: str = "assistant_message") -> ItemCompleted:
    return ItemCompleted(**ID, turn_id=turn, item_id=item, kind=kind, text=text)


def _delta(item: str, text: str, turn: str = "u1") -> ContentDelta:
    return ContentDelta(**ID, turn_id=turn, item_id=item, stream="assistant_text", delta=text)


def _opened(rid: str = "r1", turn: str = "u1") -> RequestOpened:
    return RequestOpened(**ID, turn_id=turn, request_id=rid, kind="command")


def _resolved(rid: str = "r1", turn: str = "u1") -> RequestResolved:
    return RequestResolved(**ID, turn_id=turn, request_id=rid, resolution="answered", decision="accept")


def _usage(total: int) -> ThreadTokenUsageUpdated:
    return ThreadTokenUsageUpdated(**ID, usage=TokenUsage(total_tokens=total))


Batches = list[list[EventBase]]

HOSTILE: dict[str, Callable[[], Batches]] = {
    "grammar.turn_not_completed": lambda: [
        [_started(), _item("i1"), _delta("i1", "hi")],
        [SessionExited(**ID, reason="killed", recoverable=True)],
    ],
    "grammar.duplicate_turn_completed": lambda: [[_started(), _completed(), _completed(state="failed")]],
    "grammar.late_event": lambda: [[_started(), _completed(), _item("i9"), _delta("i9", "late")]],
    "grammar.request_not_resolved": lambda: [[_started(), _opened(), _completed()]],
    "grammar.duplicate_request_resolved": lambda: [[_started(), _opened(), _resolved(), _resolved(), _completed()]],
    "grammar.token_usage_backwards": lambda: [[_started(), _usage(100), _usage(40), _completed()]],
    "grammar.item_text_mismatch": lambda: [
        [_started(), _item("i1"), _delta("i1", "Hello "), _delta("i1", "world"), _done("i1", "Hello there"),
         _completed()],
    ],
    "grammar.item_after_abort": lambda: [
        [_started(), TurnAborted(**ID, turn_id="u1", reason="interrupted"), _item("i2"),
         _completed(state="interrupted")],
    ],
    "grammar.out_of_order": lambda: [[_started(), _item("i1"), _done("i1", ""), _delta("i1", "after"), _completed()]],
    "grammar.unstable_id": lambda: [
        [_started(), _item("i1", kind="command"), _done("i1", kind="file_change"), _completed()],
    ],
    "grammar.turn_without_thread": lambda: [
        [_started(), TurnAborted(**{**ID, "thread_id": ""}, turn_id="u1", reason="orphan"), _completed()],
    ],
    "grammar.event_after_interrupt": lambda: [
        [_started(), _item("i1"), TurnAborted(**ID, turn_id="u1", reason="interrupted"), _delta("i1", "still talking"),
         _completed(state="interrupted")],
    ],
    "grammar.turn_too_large": lambda: [
        [_started(), _item("i1"), *(_delta("i1", "x" * 1000) for _ in range(80)), _done("i1", "x" * 80_000),
         _completed()],
    ],
}
"""Grammar code -> the batches of a transcript that breaks its rule (and only that rule)."""

HUB_CODES = frozenset({
    "grammar.turn_not_completed", "grammar.duplicate_turn_completed", "grammar.late_event",
    "grammar.request_not_resolved", "grammar.duplicate_request_resolved", "grammar.token_usage_backwards",
    "grammar.item_text_mismatch", "grammar.item_after_abort", "grammar.out_of_order",
})
"""The codes the hub's guard repairs (and warns about) itself."""

HOSTILE_TURN_BYTES = 64 * 1024
"""The byte bound the ``grammar.turn_too_large`` fixture is checked with."""


def stamp(batches: Batches) -> list[EventBase]:
    """The batches as one transcript with strictly increasing ``seq`` (as the hub would stamp)."""
    import msgspec

    flat = [ev for batch in batches for ev in batch]
    return [msgspec.structs.replace(ev, seq=i + 1, event_id=f"e{i + 1}") for i, ev in enumerate(flat)]
