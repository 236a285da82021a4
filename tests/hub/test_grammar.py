"""One test per grammar rule: feed a violating sequence through the hub, check the repaired
stream and the runtime.warning that describes the violation."""

from __future__ import annotations

import pytest

from paddock.actors import EventHub
from paddock.contract import (
    ContentDelta,
    ItemCompleted,
    RequestResolved,
    RuntimeWarningEvent,
    SessionExited,
    ThreadTokenUsageUpdated,
    TokenUsage,
    TurnAborted,
    TurnCompleted,
    UserInputRequested,
    UserInputResolved,
)

from .conftest import (
    _ID,
    delta,
    drain,
    item_completed,
    item_started,
    request_opened,
    request_resolved,
    tag,
    turn_completed,
    turn_started,
)


@pytest.fixture
def run(log_path):
    """Emit ``events`` for thread t1; return (repaired stream, warnings) as the host sees them."""
    hub = EventHub.start(log_path)
    sub = hub.subscribe(thread_id="t1")
    emitter = hub.emitter("local", "loc", "t1")

    def feed(*batches):
        for batch in batches:
            emitter.emit(list(batch))
        hub.flush()
        got = drain(sub)
        seqs = [e.seq for e in got]
        assert seqs == sorted(set(seqs))
        return (
            [e for e in got if not isinstance(e, RuntimeWarningEvent)],
            [e for e in got if isinstance(e, RuntimeWarningEvent)],
        )

    yield feed
    hub.close()


def shape(events):
    return [(tag(e), e.turn_id, e.item_id or e.request_id) for e in events]


def test_rule1_session_exit_mid_turn_synthesizes_failed_completion(run):
    events, warnings = run([
        turn_started("u1"),
        item_started("u1", "i1"),
        request_opened("u1", "r1"),
        SessionExited(**_ID, reason="process killed by signal 9", recoverable=True),
    ])
    assert shape(events) == [
        ("turn.started", "u1", None),
        ("item.started", "u1", "i1"),
        ("request.opened", "u1", "r1"),
        ("request.resolved", "u1", "r1"),
        ("turn.completed", "u1", None),
        ("session.exited", None, None),
    ]
    assert events[3].resolution == "expired"
    assert events[4].state == "failed" and "signal 9" in events[4].error
    assert [w.code for w in warnings] == ["grammar.request_not_resolved", "grammar.turn_not_completed"]
    assert warnings[1].detail["rule"] == 1 and warnings[1].turn_id == "u1"


def test_rule1_duplicate_turn_completed_is_dropped(run):
    events, warnings = run(
        [turn_started("u1"), turn_completed("u1")],
        [turn_completed("u1", state="failed")],
    )
    assert shape(events) == [("turn.started", "u1", None), ("turn.completed", "u1", None)]
    assert events[1].state == "completed"
    assert [(w.code, w.detail["rule"], w.turn_id) for w in warnings] == [
        ("grammar.duplicate_turn_completed", 1, "u1")
    ]


def test_rule2_late_delta_and_items_after_turn_completed_are_dropped(run):
    events, warnings = run(
        [turn_started("u1"), item_started("u1", "i1"), delta("u1", "i1", "a"), turn_completed("u1")],
        [delta("u1", "i1", "late"), delta("u1", "i1", "later"), item_completed("u1", "i1", "alate")],
    )
    assert shape(events) == [
        ("turn.started", "u1", None),
        ("item.started", "u1", "i1"),
        ("content.delta", "u1", "i1"),
        ("turn.completed", "u1", None),
    ]
    assert [(w.code, w.detail["event_type"], w.detail["count"]) for w in warnings] == [
        ("grammar.late_event", "content.delta", 2),
        ("grammar.late_event", "item.completed", 1),
    ]
    assert all(w.detail["rule"] == 2 for w in warnings)


def test_rule3_open_requests_are_cancelled_at_turn_end_and_resolved_once(run):
    ui = UserInputRequested(**_ID, turn_id="u1", request_id="q1")
    events, warnings = run(
        [turn_started("u1"), request_opened("u1", "r1"), request_opened("u1", "r2"), ui,
         request_resolved("u1", "r1"), turn_completed("u1")],
        [request_resolved("u1", "r1")],
    )
    assert shape(events) == [
        ("turn.started", "u1", None),
        ("request.opened", "u1", "r1"),
        ("request.opened", "u1", "r2"),
        ("user-input.requested", "u1", "q1"),
        ("request.resolved", "u1", "r1"),
        ("request.resolved", "u1", "r2"),
        ("user-input.resolved", "u1", "q1"),
        ("turn.completed", "u1", None),
    ]
    assert isinstance(events[5], RequestResolved) and events[5].resolution == "cancelled"
    assert isinstance(events[6], UserInputResolved) and events[6].resolution == "cancelled"
    assert [(w.code, w.request_id) for w in warnings] == [
        ("grammar.request_not_resolved", "r2"),
        ("grammar.request_not_resolved", "q1"),
        ("grammar.duplicate_request_resolved", "r1"),
    ]
    assert [w.detail["resolution"] for w in warnings[:2]] == ["cancelled", "cancelled"]
    assert all(w.detail["rule"] == 3 for w in warnings)


def test_rule4_token_usage_never_goes_backwards(run):
    def usage(inp, out, total):
        return ThreadTokenUsageUpdated(
            **_ID, usage=TokenUsage(input_tokens=inp, output_tokens=out, total_tokens=total,
                                    context_window=200_000))

    events, warnings = run([usage(100, 10, 110), usage(90, 20, 110), usage(50, 5, 55), usage(120, 30, 150)])
    assert [(e.usage.input_tokens, e.usage.output_tokens, e.usage.total_tokens) for e in events] == [
        (100, 10, 110),
        (100, 20, 110),  # input clamped, output's progress kept
        (120, 30, 150),  # the all-backwards update was dropped
    ]
    # Said once per thread (a restarted agent's counts can trail for many turns); the second
    # drop is repaired without a warning.
    assert [w.code for w in warnings] == ["grammar.token_usage_backwards"]
    assert warnings[0].detail["fields"] == {"input_tokens": {"previous": 100, "reported": 90}}
    assert "clamped" in warnings[0].message and warnings[0].detail["rule"] == 4


def test_rule5_item_text_must_equal_its_deltas(run):
    events, warnings = run([
        turn_started("u1"),
        item_started("u1", "i1"),
        delta("u1", "i1", "Hello, "),
        item_completed("u1", "i1", "Hello, world"),  # the last delta never came
        item_started("u1", "i2"),
        delta("u1", "i2", "abc"),
        item_completed("u1", "i2", "abX"),  # disagrees: the final text is kept
        item_started("u1", "i3"),
        delta("u1", "i3", "fine"),
        item_completed("u1", "i3", "fine"),
        turn_completed("u1"),
    ])
    texts = [(tag(e), e.item_id, getattr(e, "delta", None) or getattr(e, "text", None))
             for e in events if isinstance(e, (ContentDelta, ItemCompleted))]
    assert texts == [
        ("content.delta", "i1", "Hello, "),
        ("content.delta", "i1", "world"),
        ("item.completed", "i1", "Hello, world"),
        ("content.delta", "i2", "abc"),
        ("item.completed", "i2", "abX"),
        ("content.delta", "i3", "fine"),
        ("item.completed", "i3", "fine"),
    ]
    assert [(w.code, w.item_id, w.detail["repair"]) for w in warnings] == [
        ("grammar.item_text_mismatch", "i1", "suffix_delta"),
        ("grammar.item_text_mismatch", "i2", "kept_completed_text"),
    ]
    assert warnings[1].detail["first_difference"] == 2 and warnings[1].detail["rule"] == 5


def test_rule5_interleaved_delta_runs_are_each_checked_against_their_item(run):
    events, warnings = run([
        turn_started("u1"),
        item_started("u1", "i1"),
        item_started("u1", "i2", kind="reasoning"),
        delta("u1", "i1", "a"), delta("u1", "i1", "b"),
        delta("u1", "i2", "x", stream="reasoning_text"),
        delta("u1", "i1", "c"),
        delta("u1", "i2", "y", stream="reasoning_text"), delta("u1", "i2", "z", stream="reasoning_text"),
        item_completed("u1", "i1", "abc"),
        delta("u1", "i1", "late"),  # after its item completed: dropped
        item_completed("u1", "i2", "xyZ", kind="reasoning"),  # disagrees with its deltas
        turn_completed("u1"),
    ])
    assert [e.delta for e in events if isinstance(e, ContentDelta)] == ["a", "b", "x", "c", "y", "z"]
    assert [(w.code, w.item_id) for w in warnings] == [
        ("grammar.out_of_order", "i1"),
        ("grammar.item_text_mismatch", "i2"),
    ]


def test_rule6_no_new_item_after_the_interrupt_is_acknowledged(run):
    events, warnings = run([
        turn_started("u1"),
        item_started("u1", "i1"),
        delta("u1", "i1", "before"),
        TurnAborted(**_ID, turn_id="u1", reason="interrupted by the host"),
        delta("u1", "i1", " still finishing"),  # an item already running may finish
        item_completed("u1", "i1", "before still finishing"),
        item_started("u1", "i2", kind="command"),  # a new item may not start
        delta("u1", "i2", "$ ls", stream="command_output"),
        item_completed("u1", "i2", kind="command"),
        TurnCompleted(**_ID, turn_id="u1", state="interrupted"),
    ])
    assert shape(events) == [
        ("turn.started", "u1", None),
        ("item.started", "u1", "i1"),
        ("content.delta", "u1", "i1"),
        ("turn.aborted", "u1", None),
        ("content.delta", "u1", "i1"),
        ("item.completed", "u1", "i1"),
        ("turn.completed", "u1", None),
    ]
    assert [(w.code, w.item_id, w.detail["event_type"], w.detail["count"]) for w in warnings] == [
        ("grammar.item_after_abort", "i2", "item.started", 1),
        ("grammar.item_after_abort", "i2", "content.delta", 1),
        ("grammar.item_after_abort", "i2", "item.completed", 1),
    ]
    assert all(w.detail["rule"] == 6 for w in warnings)


def test_rule7_events_that_belong_before_a_completion_are_dropped(run):
    events, warnings = run(
        [turn_started("u1"), item_started("u1", "i1"), delta("u1", "i1", "a"), item_completed("u1", "i1", "a"),
         delta("u1", "i1", "b"), item_started("u1", "i1"), item_completed("u1", "i1", "ab"),
         turn_completed("u1")],
        [turn_started("u1")],
    )
    assert shape(events) == [
        ("turn.started", "u1", None),
        ("item.started", "u1", "i1"),
        ("content.delta", "u1", "i1"),
        ("item.completed", "u1", "i1"),
        ("turn.completed", "u1", None),
    ]
    assert [(w.code, w.detail["event_type"]) for w in warnings] == [
        ("grammar.out_of_order", "content.delta"),
        ("grammar.out_of_order", "item.started"),
        ("grammar.out_of_order", "item.completed"),
        ("grammar.out_of_order", "turn.started"),
    ]
    assert all(w.detail["rule"] == 7 for w in warnings)


def test_rule7_per_thread_order_is_the_emitted_order_across_batches(run):
    batches = [[delta("u1", "i1", f"{b}.{n}") for n in range(7)] for b in range(50)]
    events, warnings = run([turn_started("u1"), item_started("u1", "i1")], *batches)
    assert [e.delta for e in events[2:]] == [f"{b}.{n}" for b in range(50) for n in range(7)]
    assert warnings == []


def test_guard_state_is_per_thread(log_path):
    hub = EventHub.start(log_path)
    try:
        sub = hub.subscribe()
        hub.emitter("local", "loc", "t1").emit([turn_started("u1"), turn_completed("u1")])
        # another thread may reuse a native turn id without being taken for a late event
        hub.emitter("local", "loc", "t2").emit([turn_started("u1"), delta("u1", "i", "x"), turn_completed("u1")])
        hub.flush()
        got = drain(sub)
        assert [tag(e) for e in got] == ["turn.started", "turn.completed"] * 1 + [
            "turn.started", "content.delta", "turn.completed"]
    finally:
        hub.close()
