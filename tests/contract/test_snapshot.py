"""The one thread fold (paddock.contract.fold_thread / ThreadFold): its rules, and that folding in
batches (the live session) and all at once (read_thread over the log) agree."""

from __future__ import annotations

from paddock.contract import (
    ContentDelta,
    ItemCompleted,
    ItemSnapshot,
    ItemStarted,
    ItemUpdated,
    ThreadFold,
    TurnCompleted,
    TurnSnapshot,
    TurnStarted,
    fold_thread,
)

_ID = {"driver": "d", "instance_id": "i", "thread_id": "t"}


def _turn(turn: str, *, complete: bool = True, finish_item: bool = True) -> list:
    events: list = [
        TurnStarted(**_ID, turn_id=turn, input_text=f"prompt {turn}"),
        ItemStarted(**_ID, turn_id=turn, item_id=f"{turn}:m", kind="assistant_message"),
        ContentDelta(**_ID, turn_id=turn, item_id=f"{turn}:m", stream="assistant_text", delta="hel"),
        ContentDelta(**_ID, turn_id=turn, item_id=f"{turn}:m", stream="assistant_text", delta="lo"),
        ItemStarted(**_ID, turn_id=turn, item_id=f"{turn}:tool", kind="command", title="ls", status="pending"),
        ItemUpdated(**_ID, turn_id=turn, item_id=f"{turn}:tool", kind="command", status="in_progress"),
    ]
    if finish_item:
        events += [
            ItemCompleted(**_ID, turn_id=turn, item_id=f"{turn}:m", kind="assistant_message", text="hello"),
            ItemCompleted(**_ID, turn_id=turn, item_id=f"{turn}:tool", kind="command", status="failed"),
        ]
    if complete:
        events.append(TurnCompleted(**_ID, turn_id=turn, state="completed"))
    return events


def test_completed_turn_has_its_items_in_first_seen_order_with_final_text_status_and_title():
    [turn] = fold_thread("t", _turn("u1")).turns
    assert turn == TurnSnapshot(turn_id="u1", state="completed", user_text="prompt u1", items=(
        ItemSnapshot(item_id="u1:m", kind="assistant_message", status="completed", text="hello"),
        # the completion names no title: the started one stays; a completion without text keeps none
        ItemSnapshot(item_id="u1:tool", kind="command", status="failed", title="ls", text=None),
    ))


def test_incomplete_items_keep_their_last_status_and_the_text_streamed_so_far():
    [turn] = fold_thread("t", _turn("u1", complete=False, finish_item=False)).turns
    assert turn.state == "running"
    assert turn.items == (
        ItemSnapshot(item_id="u1:m", kind="assistant_message", status="in_progress", text="hello"),
        ItemSnapshot(item_id="u1:tool", kind="command", status="in_progress", title="ls", text=None),
    )


def test_events_after_turn_completed_and_events_without_a_turn_are_ignored():
    late = [
        ItemStarted(**_ID, turn_id="u1", item_id="late", kind="assistant_message"),
        ContentDelta(**_ID, turn_id="u1", item_id="u1:m", stream="assistant_text", delta="!!"),
        ContentDelta(**_ID, turn_id=None, item_id=None, stream="assistant_text", delta="x"),
    ]
    assert fold_thread("t", _turn("u1") + late) == fold_thread("t", _turn("u1"))


def test_folding_in_batches_equals_folding_the_whole_log():
    events = _turn("u1") + _turn("u2") + _turn("u3", complete=False, finish_item=False)
    whole = fold_thread("t", events)
    for size in (1, 2, 5, len(events)):
        fold = ThreadFold("t")
        seen = []
        for start in range(0, len(events), size):
            fold.add(events[start:start + size])
            seen.append(fold.snapshot())
        assert fold.snapshot() == whole
        # every intermediate view is the fold of the events so far
        assert seen[0] == fold_thread("t", events[:size])


def test_add_says_whether_the_snapshot_changed():
    fold = ThreadFold("t")
    assert fold.add(_turn("u1")) is True
    assert fold.add([ContentDelta(**_ID, turn_id="u1", item_id="u1:m", stream="assistant_text", delta="x")]) is False
    assert fold.add([]) is False


def test_max_turns_keeps_the_newest_completed_turns_and_drop_last_rolls_back():
    fold = ThreadFold("t", max_turns=2)
    for n in range(4):
        fold.add(_turn(f"u{n}"))
    assert [t.turn_id for t in fold.snapshot().turns] == ["u2", "u3"]
    fold.drop_last(1)
    assert [t.turn_id for t in fold.snapshot().turns] == ["u2"]


def test_a_snapshot_taken_mid_turn_continues_when_fed_the_rest():
    events = _turn("u1")
    head, tail = events[:4], events[4:]
    resumed = ThreadFold("t", turns=fold_thread("t", head).turns)
    resumed.add(tail)
    assert resumed.snapshot() == fold_thread("t", events)


def test_the_live_fold_keeps_one_bounded_buffer_per_item_not_one_object_per_delta():
    import tracemalloc

    from paddock.contract import LIVE_ITEM_CHARS

    deltas = 200_000
    fold = ThreadFold("t")
    fold.add([TurnStarted(**_ID, turn_id="u1"), ItemStarted(**_ID, turn_id="u1", item_id="m", kind="assistant_message")])
    events = [ContentDelta(**_ID, turn_id="u1", item_id="m", stream="assistant_text", delta="ab") for _ in range(100)]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(deltas // len(events)):
            for ev in events:
                fold.add([ev])  # the worst case: one delta per batch
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    # 400,000 characters streamed: the fold holds the first LIVE_ITEM_CHARS of them, once
    assert grown < 2 * LIVE_ITEM_CHARS + 16_384, grown
    [turn] = fold.snapshot().turns
    assert turn.items[0].text == "ab" * (LIVE_ITEM_CHARS // 2)
    fold.add([ItemCompleted(**_ID, turn_id="u1", item_id="m", kind="assistant_message", text="ab" * deltas),
              TurnCompleted(**_ID, turn_id="u1", state="completed")])
    [turn] = fold.snapshot().turns
    assert turn.items[0].text == "ab" * (LIVE_ITEM_CHARS // 2)  # the log keeps all of it
    full = fold_thread("t", [TurnStarted(**_ID, turn_id="u1"), *events,
                             ItemCompleted(**_ID, turn_id="u1", item_id="m", kind="assistant_message", text="ab" * deltas)])
    assert full.turns[0].items[0].text == "ab" * deltas  # read_thread over the log: every character
