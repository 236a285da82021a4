"""The session base (paddock.actors.SessionActor) as an ACP session uses it: the live thread
snapshot is the contract's fold of what the session emitted, requests are answered once, and
an interrupt cancels open requests before the turn's one turn.completed."""

from __future__ import annotations

import pytest

from paddock.contract import RequestError, ValidationError, fold_thread
from tests.adapter_harness import etype


def test_live_snapshot_is_the_fold_of_the_emitted_events_also_mid_turn(make):
    h = make()
    h.start(runtime_mode="approval-required")
    _, first = h.turn("@chunks 3\n@reply one two three")
    h.send("@reply before\n@run touch ran.txt")
    so_far = first + h.events_until(lambda e: etype(e) == "request.opened")
    live = h.adapter.read_thread("t1")
    assert live == fold_thread("t1", so_far)
    running = live.turns[-1]
    assert running.state == "running" and running.items  # the open turn shows its items so far
    opened = so_far[-1]
    h.adapter.respond_to_request("t1", opened.request_id, "accept")
    rest = h.events_until(lambda e: etype(e) == "turn.completed")
    assert h.adapter.read_thread("t1") == fold_thread("t1", so_far + rest)


def test_a_request_is_answered_once_and_decisions_are_checked(make):
    h = make()
    h.start(runtime_mode="approval-required")
    h.send("@run touch ran.txt")
    opened = h.events_until(lambda e: etype(e) == "request.opened")[-1]
    with pytest.raises(ValidationError, match="unknown decision"):
        h.adapter.respond_to_request("t1", opened.request_id, "maybe")
    h.adapter.respond_to_request("t1", opened.request_id, "decline")
    with pytest.raises(RequestError, match="already resolved"):
        h.adapter.respond_to_request("t1", opened.request_id, "accept")
    events = h.events_until(lambda e: etype(e) == "turn.completed")
    resolved = [e for e in events if etype(e) == "request.resolved"]
    assert [(r.request_id, r.resolution, r.decision) for r in resolved] == [(opened.request_id, "answered", "decline")]


def test_interrupt_cancels_open_requests_then_one_turn_completed(make):
    h = make()
    h.start(runtime_mode="approval-required")
    res = h.send("@run touch ran.txt")
    opened = h.events_until(lambda e: etype(e) == "request.opened")[-1]
    h.adapter.interrupt_turn("t1", res.turn_id)
    h.adapter.interrupt_turn("t1", res.turn_id)  # a second interrupt of the same turn is a no-op
    events = h.events_until(lambda e: etype(e) == "turn.completed")
    resolved = [(e.request_id, e.resolution) for e in events if etype(e) == "request.resolved"]
    assert resolved == [(opened.request_id, "cancelled")]
    assert [e.state for e in events if etype(e) == "turn.completed"] == ["interrupted"]
    _, again = h.turn("@reply after")
    assert [e.state for e in again if etype(e) == "turn.completed"] == ["completed"]
    with pytest.raises(RequestError):
        h.adapter.respond_to_request("t1", opened.request_id, "accept")  # resolved by the interrupt
