"""The small pieces of the session base: the turn tracker and the pending-request table."""

from __future__ import annotations

import pytest

from paddock.actors import PendingRequests, TurnTracker

_ID = {"driver": "d", "instance_id": "i", "thread_id": "t"}


def test_a_turn_completes_exactly_once():
    turn = TurnTracker(_ID)
    started = turn.start("u1", input_text="hi")
    assert started.turn_id == "u1" and started.input_text == "hi" and turn.in_turn
    with pytest.raises(RuntimeError, match="still running"):
        turn.start("u2")
    turn.interrupt_requested = True
    done = turn.complete("interrupted", error="stopped")
    assert done is not None and (done.turn_id, done.state, done.error) == ("u1", "interrupted", "stopped")
    assert turn.complete("failed") is None  # every later end of the same turn is a no-op
    assert not turn.in_turn and not turn.interrupt_requested


def test_turn_ids_are_the_hosts_or_fresh():
    assert TurnTracker.new_id("mine") == "mine"
    a, b = TurnTracker.new_id(), TurnTracker.new_id()
    assert a != b and a.startswith("turn-")


def test_requests_are_taken_once_and_ids_never_repeat():
    table: PendingRequests[str] = PendingRequests()
    ids = [table.new_id("u1"), table.new_id("u1"), table.new_id("u2")]
    assert ids == ["u1:req1", "u1:req2", "u2:req3"]
    for rid in ids:
        table.add(rid, f"native-{rid}", ("accept", "decline"))
    assert table.offered(ids[0]) == ("accept", "decline")
    assert table.take(ids[0]) == "native-u1:req1" and table.take(ids[0]) is None
    assert table.offered(ids[0]) is None
    assert table.take_where(lambda n: n.endswith("req2")) == [ids[1]]
    assert ids[2] in table and len(table) == 1
    assert table.take_all() == [(ids[2], "native-u2:req3")] and len(table) == 0
