"""Live: the claude driver against the pinned Claude Code CLI and the scripted model server."""

from __future__ import annotations

import os
import signal

import psutil
import pytest

from paddock.contract import SessionClosedError, ValidationError

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


def _tool_turn(h, decision: str | None):
    res = h.send("please create hello.txt SCENARIO:tool_shell")
    evs = h.events_until(lambda e: etype(e) in ("request.opened", "turn.completed"))
    [opened] = of_type(evs, "request.opened")
    assert opened.kind == "command" and opened.turn_id == res.turn_id
    assert opened.data["input"]["command"] == "touch hello.txt"
    [started] = [e for e in of_type(evs, "item.started") if e.item_id == opened.item_id]
    assert started.kind == "command" and started.title == "Bash"
    [updated] = [e for e in of_type(evs, "item.updated") if e.item_id == opened.item_id]
    assert updated.title == "touch hello.txt" and updated.data["input"]["command"] == "touch hello.txt"
    if decision is not None:
        h.adapter.respond_to_request("t1", opened.request_id, decision, timeout=10)
    evs += h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    return res, opened, evs


def test_shell_tool_accepted_runs_the_command(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    res, opened, evs = _tool_turn(h, "accept")
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id and resolved.decision == "accept"
    [tool] = [e for e in of_type(evs, "item.completed") if e.item_id == opened.item_id]
    assert tool.kind == "command" and tool.status == "completed"
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    assert (workspace / "hello.txt").exists()


def test_shell_tool_declined_does_not_run(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    res, opened, evs = _tool_turn(h, "decline")
    [tool] = [e for e in of_type(evs, "item.completed") if e.item_id == opened.item_id]
    assert tool.status == "declined"
    assert of_type(evs, "request.resolved")[0].decision == "decline"
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    assert not (workspace / "hello.txt").exists()
    # A decided request cannot be answered twice.
    from paddock.contract import RequestError

    with pytest.raises(RequestError):
        h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=10)


def test_full_access_allows_at_once_but_reports_the_request(make, workspace):
    h = make()
    h.start(runtime_mode="full-access")
    res, evs = h.turn("please create hello.txt SCENARIO:tool_shell")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    assert (workspace / "hello.txt").exists()
    opened = of_type(evs, "request.opened")
    resolved = of_type(evs, "request.resolved")
    # Either the CLI asked (answered by the driver at once) or it bypassed the ask natively.
    assert [r.request_id for r in resolved] == [o.request_id for o in opened]
    assert all(r.decision == "accept" for r in resolved)


@pytest.mark.skipif(os.geteuid() != 0, reason="the fallback applies only to root")
def test_full_access_as_root_without_sandbox_flag_answers_asks_itself(make, workspace):
    h = make(drop_env=("IS_SANDBOX",))
    h.start(runtime_mode="full-access")
    res, evs = h.turn("please create hello.txt SCENARIO:tool_shell")
    [opened] = of_type(evs, "request.opened")
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id and resolved.decision == "accept"
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    assert (workspace / "hello.txt").exists()


def test_interrupt_of_a_slow_stream(make):
    h = make()
    h.start()
    res = h.send("stream slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    with pytest.raises(ValidationError, match="still running"):
        h.send("another one")
    h.adapter.interrupt_turn("t1", res.turn_id, timeout=10)
    evs = h.events_until(lambda e: etype(e) == "turn.completed")
    assert [e.reason for e in of_type(evs, "turn.aborted")] == ["interrupted by the host"]
    [done] = of_type(evs, "turn.completed")
    assert done.turn_id == res.turn_id and done.state == "interrupted"
    # The session goes on.
    res2, evs2 = h.turn("after the interrupt SCENARIO:text")
    assert of_type(evs2, "turn.completed")[-1].state == "completed" and text_of(evs2) == "Hello from mock"


def test_resume_in_a_fresh_process_keeps_the_history(make, model_server):
    h = make()
    h.start()
    h.turn("remember the word PELICAN SCENARIO:text")
    cursor = h.adapter.list_sessions()[0].resume_cursor
    h.adapter.stop_session("t1", timeout=15)
    exited = h.events_until(lambda e: etype(e) == "session.exited")
    assert exited[-1].reason == "stopped"
    session = h.start(resume_cursor=cursor)
    assert session.resumed
    evs = h.events_until(lambda e: etype(e) == "session.started")
    assert evs[-1].resumed and not evs[-1].resume_failed
    res, evs = h.turn("what was the word? SCENARIO:text")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    last = [c for c in model_server.wait_for(count=2, timeout=10) if c.kind == "turn"][-1]
    history = str(last.body["messages"])
    assert "PELICAN" in history and "what was the word?" in history


def test_resume_of_an_unknown_session_starts_fresh(make):
    from paddock.drivers.claude._cursor import cursor_for

    h = make()
    session = h.start(resume_cursor=cursor_for("claude", "11111111-2222-3333-4444-555555555555"))
    assert not session.resumed
    evs = h.events_until(lambda e: etype(e) == "session.started")
    assert evs[-1].resume_failed and "No conversation found" in evs[-1].detail
    res, evs = h.turn("hello SCENARIO:text")
    assert of_type(evs, "turn.completed")[-1].state == "completed"


def test_kill_9_mid_turn_fails_the_turn_and_exits_the_session(make):
    h = make()
    h.start()
    configured = h.events_until(lambda e: etype(e) == "session.configured")[-1]
    pid = configured.config["pid"]
    res = h.send("stream slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    os.kill(pid, signal.SIGKILL)
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    [done] = of_type(evs, "turn.completed")
    assert done.turn_id == res.turn_id and done.state == "failed"
    exited = of_type(evs, "session.exited")[0]
    assert exited.signal == signal.SIGKILL or exited.exit_code not in (None, 0), exited
    assert not exited.recoverable  # killed during its first turn, the CLI saved nothing to resume
    assert "killed" in exited.reason or "exit" in exited.reason
    with pytest.raises(SessionClosedError):
        h.send("anyone there?")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_accept_for_session_stops_asking_for_the_same_command(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    res, opened, evs = _tool_turn(h, "accept_for_session")
    assert "accept_for_session" in opened.decisions and (workspace / "hello.txt").exists()
    (workspace / "hello.txt").unlink()
    res2, evs2 = h.turn("again please SCENARIO:tool_shell")
    assert not of_type(evs2, "request.opened")
    assert of_type(evs2, "turn.completed")[-1].state == "completed" and (workspace / "hello.txt").exists()


def test_model_switch_per_turn(make, model_server):
    # Model ids as the pinned CLI knows them (it maps unknown older ids to its current default).
    h = make(model="claude-opus-4-8")
    h.start()
    h.turn("first SCENARIO:text")
    res, evs = h.turn("second SCENARIO:text", model="claude-sonnet-4-5")
    assert of_type(evs, "turn.started")[-1].model == "claude-sonnet-4-5"
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    turns = [c for c in model_server.wait_for(count=2, timeout=10) if c.kind == "turn"]
    assert [c.model for c in turns] == ["claude-opus-4-8", "claude-sonnet-4-5"]


def test_interrupt_while_an_approval_is_pending(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    res = h.send("please create hello.txt SCENARIO:tool_shell")
    opened = h.events_until(lambda e: etype(e) == "request.opened")[-1]
    h.adapter.interrupt_turn("t1", timeout=10)
    evs = h.events_until(lambda e: etype(e) == "turn.completed")
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id and resolved.resolution == "cancelled"
    assert evs[-1].turn_id == res.turn_id and evs[-1].state == "interrupted"
    assert not (workspace / "hello.txt").exists()
    res2, evs2 = h.turn("still there? SCENARIO:text")
    assert of_type(evs2, "turn.completed")[-1].state == "completed"


def test_stop_mid_stream_ends_turn_and_process(make):
    h = make()
    h.start()
    pid = h.events_until(lambda e: etype(e) == "session.configured")[-1].config["pid"]
    res = h.send("stream slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.stop_session("t1", timeout=15)
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    assert of_type(evs, "turn.completed")[-1].state == "cancelled"
    assert evs[-1].reason == "stopped"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_model_http_500_fails_the_turn(make):
    h = make()
    h.start()
    res, evs = h.turn("break SCENARIO:http500")
    done = of_type(evs, "turn.completed")[-1]
    assert done.state == "failed" and "500" in done.error
    res2, evs2 = h.turn("recovered SCENARIO:text")
    assert of_type(evs2, "turn.completed")[-1].state == "completed"


def test_interrupt_right_after_send(make):
    h = make()
    h.start()
    res = h.send("stream slowly SCENARIO:slow")
    h.adapter.interrupt_turn("t1", timeout=10)
    evs = h.events_until(lambda e: etype(e) == "turn.completed")
    assert evs[-1].turn_id == res.turn_id and evs[-1].state == "interrupted"
    assert not [w for w in of_type(evs, "runtime.warning") if w.code == "claude.interrupt_unacknowledged"]
    res2, evs2 = h.turn("after SCENARIO:text")
    assert text_of(evs2) == "Hello from mock"
