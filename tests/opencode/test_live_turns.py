"""Live: the opencode driver against the pinned ``opencode serve`` and the scripted model server."""

from __future__ import annotations

import msgspec
import pytest

from paddock.contract import RequestError, ValidationError

from .conftest import etype, of_type, text_of

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(240)]


def test_simple_and_multi_turn(make, model_server):
    h = make()
    session = h.start()
    assert session.status == "ready" and session.resume_cursor is not None and not session.resumed
    res, evs = h.turn("say hi SCENARIO:text")
    assert text_of(evs, res.turn_id) == "Hello from mock"
    [done] = of_type(evs, "turn.completed")
    assert done.state == "completed" and done.stop_reason == "stop"
    [item] = [e for e in of_type(evs, "item.completed") if e.kind == "assistant_message"]
    assert item.text == "Hello from mock" and item.item_id.startswith("prt_")
    assert of_type(evs, "thread.token-usage.updated")[-1].usage.output_tokens > 0
    res2, evs2 = h.turn("again SCENARIO:text")
    assert text_of(evs2, res2.turn_id) == "Hello from mock"
    assert of_type(evs2, "turn.completed")[0].state == "completed"
    # No title-generation call: exactly one model call per turn.
    assert [(c.scenario, c.status) for c in model_server.wait_for(timeout=5)] == [("text", 200), ("text", 200)]
    snapshot = h.adapter.read_thread("t1")
    assert [t.state for t in snapshot.turns] == ["completed", "completed"]
    messages = h.adapter.native_messages("t1")
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    # The generated server password appears in no event.
    password = h.adapter._link._password
    assert password and not [e for e in evs + evs2 if password in msgspec.json.encode(e).decode()]


def _tool_turn(h, decision: str):
    res = h.send("please create hello.txt SCENARIO:tool_shell")
    evs = h.events_until(lambda e: etype(e) in ("request.opened", "turn.completed"))
    [opened] = of_type(evs, "request.opened")
    assert opened.kind == "command" and opened.turn_id == res.turn_id and opened.detail == "touch hello.txt"
    assert opened.provider_refs.request.startswith("per_") and opened.item_id is not None
    h.adapter.respond_to_request("t1", opened.request_id, decision, timeout=20)
    evs += h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    [tool] = [e for e in of_type(evs, "item.completed") if e.item_id == opened.item_id]
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id and resolved.decision == decision
    with pytest.raises(RequestError):
        h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=10)
    return evs, tool


def test_bash_permission_once_then_rejected(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    evs, tool = _tool_turn(h, "accept")
    assert tool.kind == "command" and tool.status == "completed"
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    assert (workspace / "hello.txt").exists()
    (workspace / "hello.txt").unlink()
    evs, tool = _tool_turn(h, "decline")
    assert tool.status == "declined"
    assert of_type(evs, "turn.completed")[-1].state == "completed"  # the loop goes on after a reject
    assert not (workspace / "hello.txt").exists()


def test_abort_mid_stream_ends_interrupted_then_model_error_fails(make):
    h = make()
    h.start()
    res = h.send("stream slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    with pytest.raises(ValidationError, match="still running"):
        h.send("another one")
    h.adapter.interrupt_turn("t1", res.turn_id, timeout=20)
    evs = h.events_until(lambda e: etype(e) == "turn.completed")
    assert [e.reason for e in of_type(evs, "turn.aborted")] == ["interrupted by the host"]
    [done] = of_type(evs, "turn.completed")
    assert done.turn_id == res.turn_id and done.state == "interrupted"
    res2, evs2 = h.turn("fail please SCENARIO:http400")
    [failed] = of_type(evs2, "turn.completed")
    assert failed.state == "failed" and "400" in (failed.error or "")
    res3, evs3 = h.turn("after SCENARIO:text")
    assert of_type(evs3, "turn.completed")[0].state == "completed" and text_of(evs3) == "Hello from mock"


def test_fork_and_compact(make, model_server):
    h = make()
    h.start()
    h.turn("remember HERON SCENARIO:text")
    h.subs["t2"] = h.hub.subscribe(thread_id="t2")
    forked = h.adapter.fork_thread("t1", "t2", timeout=60)
    assert forked.resumed and forked.thread_id == "t2"
    assert forked.resume_cursor.payload != h.adapter.list_sessions()[0].resume_cursor.payload
    assert [m["role"] for m in h.adapter.native_messages("t2")] == ["user", "assistant"]
    res, evs = h.turn("and now? SCENARIO:text", "t2")
    assert of_type(evs, "turn.completed")[0].state == "completed"
    assert len(h.adapter.native_messages("t1")) == 2  # the source is untouched
    calls_before = len(model_server.requests)
    compaction = h.adapter.compact_thread("t1", timeout=60)  # a turn of its own: it ends at idle
    evs = h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == compaction.turn_id)
    assert evs[-1].state == "completed"
    assert len(model_server.requests) > calls_before  # the summary is one model call
    res, evs = h.turn("after the summary SCENARIO:text")
    assert of_type(evs, "turn.completed")[0].state == "completed"
