"""Live: the claude driver against the pinned Claude Code CLI and the scripted model server."""

from __future__ import annotations

import pytest

from .conftest import etype, of_type, text_of

pytestmark = pytest.mark.live


def test_simple_turn_streams_text(make, model_server):
    h = make()
    session = h.start()
    assert session.status == "ready" and session.resume_cursor is not None and not session.resumed
    res, evs = h.turn("say hi SCENARIO:text")
    assert text_of(evs, res.turn_id) == "Hello from mock"
    started = of_type(evs, "turn.started")
    assert started[0].input_text == "say hi SCENARIO:text"
    [done] = of_type(evs, "turn.completed")
    assert done.state == "completed" and done.stop_reason == "end_turn"
    [item] = [e for e in of_type(evs, "item.completed") if e.kind == "assistant_message"]
    assert item.text == "Hello from mock"
    assert of_type(evs, "thread.token-usage.updated")[-1].usage.output_tokens > 0
    assert [(c.scenario, c.status) for c in model_server.wait_for(timeout=5)] == [("text", 200)]
    snapshot = h.adapter.read_thread("t1")
    assert snapshot.turns[-1].state == "completed" and snapshot.turns[-1].user_text == "say hi SCENARIO:text"
