"""The local agent through the ACP adapter and the real EventHub."""

from __future__ import annotations

from .conftest import etype, text_of


def test_simple_streamed_turn(make):
    h = make()
    session = h.start()
    assert session.status == "ready" and session.resume_cursor is not None
    res, events = h.turn("@reply Hello there\n@chunks 4")
    types = [etype(e) for e in events]
    assert types.index("turn.started") < types.index("item.started") < types.index("content.delta")
    assert types.count("content.delta") == 4
    assert text_of(events, res.turn_id) == "Hello there"
    done = [e for e in events if etype(e) == "item.completed" and e.kind == "assistant_message"]
    assert done and done[0].text == "Hello there"
    assert events[-1].state == "completed" and events[-1].stop_reason == "end_turn"
    assert res.resume_cursor is not None and res.resume_cursor.driver == "local"
