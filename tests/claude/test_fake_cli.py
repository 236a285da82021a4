"""The claude adapter against a scripted stand-in CLI (fake_claude.py): protocol edges and
faults that the real CLI cannot be made to show on demand. No peer needed."""

from __future__ import annotations

import os
import time

import pytest

from paddock.contract import (
    DriverError,
    RequestError,
    SessionClosedError,
    SessionNotFoundError,
    ValidationError,
)

from .conftest import etype, fake_starts, host_lines, of_type, text_of


def test_argv_env_and_a_turn(make_fake, tmp_path):
    h = make_fake(model="m-1", max_turns=4)
    session = h.start(runtime_mode="auto-accept-edits")
    res, evs = h.turn("hello")
    assert text_of(evs) == "ok" and of_type(evs, "turn.completed")[-1].state == "completed"
    usage = of_type(evs, "thread.token-usage.updated")[-1].usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (15, 2, 5)
    sent = host_lines(h)
    assert sent[0]["request"]["subtype"] == "initialize"
    assert sent[1] == {"type": "user", "message": {"role": "user", "content": "hello"}, "parent_tool_use_id": None,
                       "session_id": sent[1]["session_id"]}
    at_open, at_init = of_type(evs, "session.configured")
    assert at_open.config["pid"] > 0 and at_open.config["permission_mode"] == "acceptEdits"
    assert at_init.config["model"] == "fake-model" and at_init.turn_id == res.turn_id
    assert session.model == "m-1"
    [start] = fake_starts(h)
    sid = session.resume_cursor.payload.split('"session_id":"')[1].split('"')[0]
    assert start["argv"] == [
        "--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--include-partial-messages",
        "--permission-prompt-tool", "stdio", "--permission-mode", "acceptEdits", "--model=m-1",
        f"--session-id={sid}", "--max-turns", "4",
    ]
    assert start["cwd"] == str(h.cwd)
    assert start["env"]["CLAUDE_CONFIG_DIR"] == str(h.home / "claude") and "CLAUDECODE" not in start["env"]


def test_usage_accumulates_and_cursor_carries_it(make_fake):
    h = make_fake()
    h.start()
    h.turn("one")
    res, evs = h.turn("two")
    usage = of_type(evs, "thread.token-usage.updated")[-1].usage
    assert usage.input_tokens == 30 and usage.total_tokens == 34 and usage.cost == pytest.approx(0.02)
    cursor = h.adapter.list_sessions()[0].resume_cursor
    assert '"input_tokens":30' in cursor.payload
    # A new process on the thread (fresh, or resumed from the cursor) continues the count.
    h.adapter.stop_session("t1", timeout=10)
    h.start()
    res, evs = h.turn("three")
    assert of_type(evs, "thread.token-usage.updated")[-1].usage.input_tokens == 45
    h.adapter.stop_session("t1", timeout=10)
    h.start(resume_cursor=cursor)
    res, evs = h.turn("four")
    assert of_type(evs, "thread.token-usage.updated")[-1].usage.input_tokens == 60


def test_garbage_stdout_line_is_a_warning(make_fake):
    h = make_fake()
    h.start()
    res, evs = h.turn("GARBAGE then text")
    warnings = [e for e in of_type(evs, "runtime.warning") if e.code == "transport.malformed_line"]
    assert warnings and warnings[0].detail["first"] == "this is not json"
    assert of_type(evs, "turn.completed")[-1].state == "completed"


def test_odd_lines_are_skipped_or_warned_and_the_turn_goes_on(make_fake):
    h = make_fake()
    h.start()
    res, evs = h.turn("ODD then text")
    codes = [e.code for e in of_type(evs, "runtime.warning")]
    assert codes == ["transport.malformed_line", "claude.message_failed"], codes  # the unknown type: ignored
    [failed] = [e for e in of_type(evs, "runtime.warning") if e.code == "claude.message_failed"]
    assert "assistant" in failed.message and "$.message.content" in failed.message
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    assert [e.text for e in of_type(evs, "item.completed") if e.kind == "assistant_message"]


def test_crash_mid_turn_reports_exit_code_and_stderr(make_fake):
    h = make_fake()
    h.start()
    res = h.send("CRASH now")
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    [done] = of_type(evs, "turn.completed")
    assert done.state == "failed" and "exit code 3" in done.error
    exited = of_type(evs, "session.exited")[0]
    assert exited.exit_code == 3 and "fatal: the fake crashed" in exited.stderr_tail
    with pytest.raises(SessionClosedError):
        h.send("again")
    # The thread can start again (a fresh process).
    h.start()
    res, evs = h.turn("hello")
    assert of_type(evs, "turn.completed")[-1].state == "completed"


def test_interrupt_the_cli_never_ends_is_ended_by_the_driver(make_fake):
    h = make_fake(interrupt_timeout=0.3)
    h.start()
    res = h.send("HANG please")
    h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.interrupt_turn("t1", timeout=5)
    evs = h.events_until(lambda e: etype(e) == "turn.completed")
    assert of_type(evs, "turn.aborted") and evs[-1].state == "interrupted"
    assert [e.code for e in of_type(evs, "runtime.warning")] == ["claude.interrupt_unacknowledged"]
    assert any(m.get("request", {}).get("subtype") == "interrupt" for m in host_lines(h))


@pytest.mark.parametrize(("decision", "expected"), [
    ("accept", {"behavior": "allow", "updatedInput": {"command": "echo hi"}}),
    ("accept_for_session", {"behavior": "allow", "updatedInput": {"command": "echo hi"}, "updatedPermissions": [
        {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "echo hi"}], "behavior": "allow",
         "destination": "session"}]}),
    ("decline", {"behavior": "deny", "message": "The user declined this action.", "interrupt": False}),
    ("cancel", {"behavior": "deny", "message": "The user cancelled this action.", "interrupt": True}),
])
def test_decisions_become_control_responses(make_fake, decision, expected):
    h = make_fake()
    h.start(runtime_mode="approval-required")
    res = h.send("ASK for a tool")
    evs = h.events_until(lambda e: etype(e) == "request.opened")
    opened = evs[-1]
    assert opened.decisions == ("accept", "accept_for_session", "decline", "cancel")
    assert opened.provider_refs.request == "ask-1" and opened.item_id == "toolu_1"
    with pytest.raises(ValidationError):
        h.adapter.respond_to_request("t1", opened.request_id, "maybe", timeout=5)
    h.adapter.respond_to_request("t1", opened.request_id, decision, timeout=5)
    evs += h.events_until(lambda e: etype(e) == "turn.completed")
    answer = next(m for m in host_lines(h) if m.get("type") == "control_response")
    assert answer["response"] == {"subtype": "success", "request_id": "ask-1", "response": expected}
    with pytest.raises(RequestError):
        h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=5)
    # The fake never sends a tool_result: the tool item is closed at the turn's end.
    assert [e.status for e in of_type(evs, "item.completed") if e.item_id == "toolu_1"] == ["completed"]


def test_cli_cancels_its_own_request(make_fake):
    h = make_fake()
    h.start(runtime_mode="approval-required")
    res, evs = h.turn("CANCELREQ")
    [opened] = of_type(evs, "request.opened")
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id and resolved.resolution == "cancelled"


def test_full_access_answers_allow_at_once(make_fake):
    h = make_fake()
    h.start(runtime_mode="full-access")
    res, evs = h.turn("ASK for a tool")
    [opened] = of_type(evs, "request.opened")
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id and resolved.decision == "accept"
    assert text_of(evs).startswith('answer {"behavior": "allow"')


def test_unsupported_control_request_is_refused(make_fake):
    h = make_fake()
    h.start()
    res, evs = h.turn("HOOK")
    answer = next(m for m in host_lines(h) if m.get("type") == "control_response")
    assert answer["response"]["subtype"] == "error" and "hook_callback" in answer["response"]["error"]


def test_stop_mid_request_cancels_turn_and_request(make_fake):
    h = make_fake()
    h.start("fresh")
    h.adapter.stop_session("fresh", timeout=10)
    assert not h.events_until(lambda e: etype(e) == "session.exited", thread_id="fresh")[-1].recoverable
    h.start(runtime_mode="approval-required")
    h.turn("hello")
    h.send("ASK for a tool")
    h.events_until(lambda e: etype(e) == "request.opened")
    h.adapter.stop_session("t1", timeout=10)
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    assert of_type(evs, "request.resolved")[0].resolution == "cancelled"
    assert of_type(evs, "turn.completed")[0].state == "cancelled"
    assert evs[-1].reason == "stopped" and evs[-1].recoverable
    assert not h.adapter.has_session("t1")
    with pytest.raises(SessionClosedError):
        h.send("more")
    assert h.adapter.read_thread("t1").turns[-1].state == "cancelled"


def test_close_with_live_sessions_leaves_nothing_running(make_fake):
    h = make_fake()
    h.start("a")
    h.start("b")
    h.send("HANG", thread_id="a")
    h.events_until(lambda e: etype(e) == "content.delta", thread_id="a")
    h.adapter.close(timeout=10)
    for tid in ("a", "b"):
        evs = h.events_until(lambda e: etype(e) == "session.exited", thread_id=tid)
        assert evs[-1].reason == "stopped"
    with pytest.raises(DriverError):
        h.start("c")


def test_no_initialize_answer_is_a_start_error(make_fake):
    h = make_fake(fake_args=["--no-init"], start_timeout=1.0)
    with pytest.raises(DriverError, match="initialize"):
        h.start()
    assert not h.adapter.has_session("t1")
    with pytest.raises(SessionNotFoundError):
        h.send("hi")


def test_missing_binary_is_a_driver_error(make_fake, tmp_path):
    h = make_fake(binary=str(tmp_path / "nope"))
    with pytest.raises(DriverError, match="does not exist"):
        h.start()


def test_bad_input_is_refused_before_any_process(make_fake, tmp_path):
    h = make_fake()
    with pytest.raises(ValidationError):
        h.start(cwd="relative/dir")
    with pytest.raises(ValidationError):
        h.start(runtime_mode="yolo")
    h.start()
    with pytest.raises(ValidationError):
        h.send("   ")
    assert os.path.exists(h.log)


def test_concurrent_starts_and_turns_on_separate_processes(make_fake):
    import threading

    h = make_fake()
    for tid in ("a", "b", "c"):
        h.subs[tid] = h.hub.subscribe(thread_id=tid)
    errors: list = []

    def run(tid: str) -> None:
        try:
            h.start(tid)
            h.turn(f"hello {tid}", thread_id=tid)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert {h.adapter.read_thread(t).turns[-1].state for t in ("a", "b", "c")} == {"completed"}
    assert len({s["env"]["FAKE_CLAUDE_LOG"] for s in fake_starts(h)}) == 1 and len(fake_starts(h)) == 3
    assert sorted(s.thread_id for s in h.adapter.list_sessions()) == ["a", "b", "c"]


def test_process_death_while_idle_exits_the_session_without_a_turn(make_fake):
    import signal

    h = make_fake()
    h.start()
    h.turn("hello")
    os.kill(fake_starts(h)[0]["pid"], signal.SIGKILL)
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    assert not of_type(evs, "turn.completed")
    assert evs[-1].signal == signal.SIGKILL and evs[-1].recoverable
    # The session's scope closes behind it: no actor of it is left under the instance.
    deadline = time.monotonic() + 10
    while [c.id for c in h.adapter._scope.which_children(timeout=5)] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert h.adapter._scope.which_children(timeout=5) == []
    with pytest.raises(SessionClosedError):
        h.send("hello?")


def test_thinking_and_text_blocks_of_one_message_are_two_items(make_fake):
    h = make_fake()
    h.start()
    res, evs = h.turn("THINK first")
    reasoning = "".join(e.delta for e in of_type(evs, "content.delta") if e.stream == "reasoning_text")
    assert reasoning == "let me think" and text_of(evs) == "the answer"
    done = {e.kind: e for e in of_type(evs, "item.completed")}
    assert done["reasoning"].text == "let me think" and done["assistant_message"].text == "the answer"
    assert done["reasoning"].item_id != done["assistant_message"].item_id
    assert [e.kind for e in of_type(evs, "item.started")] == ["reasoning", "assistant_message"]


def test_plan_interaction_mode_maps_to_the_plan_permission_mode(make_fake):
    h = make_fake()
    h.start(runtime_mode="approval-required", interaction_mode="plan")
    assert fake_starts(h)[0]["argv"][fake_starts(h)[0]["argv"].index("--permission-mode") + 1] == "plan"
    h.turn("hello", interaction_mode="default")
    h.turn("hello", interaction_mode="plan")
    modes = [m["request"]["mode"] for m in host_lines(h) if m.get("request", {}).get("subtype") == "set_permission_mode"]
    assert modes == ["default", "plan"]


def test_a_foreign_error_in_send_turn_is_typed_and_unwinds_the_turn(make_fake):
    from paddock.contract import PaddockError

    h = make_fake()
    h.start()
    with pytest.raises(PaddockError):
        h.send("lone surrogate \ud800")  # below the Runtime's validation: the wire cannot encode it
    res, evs = h.turn("hello after")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
