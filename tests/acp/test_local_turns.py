"""The local agent through the ACP adapter and the real EventHub."""

from __future__ import annotations

import pytest

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


def test_multi_turn_keeps_one_session_and_usage_grows(make):
    h = make()
    h.start()
    r1, e1 = h.turn("@reply one\n@usage 10 5")
    r2, e2 = h.turn("@reply two\n@usage 3 2")
    assert r1.turn_id != r2.turn_id
    assert text_of(e1, r1.turn_id) == "one" and text_of(e2, r2.turn_id) == "two"
    assert e2[-1].usage.total_tokens == 5
    usage = [e.usage for e in e1 + e2 if etype(e) == "thread.token-usage.updated"]
    totals = [u.total_tokens or 0 for u in usage]
    assert totals == sorted(totals) and totals[-1] == 20
    snap = h.adapter.read_thread("t1")
    assert [t.state for t in snap.turns] == ["completed", "completed"]
    assert snap.turns[1].items[0].text == "two"


def test_plan_and_session_configured(make):
    h = make()
    h.start()
    res, events = h.turn("@plan read; write; test\n@reply ok")
    plans = [e for e in events if etype(e) == "turn.plan.updated"]
    assert plans and [s.step for s in plans[0].steps] == ["read", "write", "test"]
    assert plans[0].turn_id == res.turn_id


def _approval(make, directive: str, kind: str, decision: str):
    h = make()
    h.start(runtime_mode="approval-required")
    res = h.send(directive)
    opened = h.events_until(lambda e: etype(e) == "request.opened")[-1]
    assert opened.kind == kind and opened.turn_id == res.turn_id
    assert set(opened.decisions) >= {"accept", "accept_for_session", "decline", "cancel"}
    h.adapter.respond_to_request("t1", opened.request_id, decision)
    events = h.events_until(lambda e: etype(e) == "turn.completed")
    resolved = [e for e in events if etype(e) == "request.resolved"]
    assert [(r.request_id, r.resolution, r.decision) for r in resolved] == [(opened.request_id, "answered", decision)]
    assert events[-1].state == "completed"
    return h, events


def test_approval_accept_runs_the_command(make):
    h, events = _approval(make, "@run touch ran.txt", "command", "accept")
    assert (h.cwd / "ran.txt").exists()
    done = [e for e in events if etype(e) == "item.completed" and e.kind == "command"]
    assert done and done[0].status == "completed"


def test_approval_decline_leaves_the_file_system_alone(make):
    h, events = _approval(make, "@run touch ran.txt", "command", "decline")
    assert not (h.cwd / "ran.txt").exists()
    done = [e for e in events if etype(e) == "item.completed" and e.kind == "command"]
    assert done and done[0].status in ("declined", "failed")


def test_write_accept_goes_through_confined_fs(make):
    h, _ = _approval(make, "@write notes/a.txt hello file", "file_change", "accept")
    assert (h.cwd / "notes" / "a.txt").read_text() == "hello file"


def test_write_decline(make):
    h, _ = _approval(make, "@write a.txt nope", "file_change", "decline")
    assert not (h.cwd / "a.txt").exists()


def test_answering_twice_or_unknown_is_a_typed_error(make):
    from paddock.contract import RequestError

    h, events = _approval(make, "@run true", "command", "accept")
    rid = next(e.request_id for e in events if etype(e) == "request.resolved")
    with pytest.raises(RequestError):
        h.adapter.respond_to_request("t1", rid, "accept")
    with pytest.raises(RequestError):
        h.adapter.respond_to_request("t1", "nope", "accept")


def test_full_access_answers_by_itself_but_shows_the_request(make):
    h = make()
    h.start(runtime_mode="full-access")
    res, events = h.turn("@write auto.txt yes\n@run touch ran.txt")
    resolved = [e for e in events if etype(e) == "request.resolved"]
    assert len(resolved) == 2 and all(r.decision == "accept" for r in resolved)
    assert len([e for e in events if etype(e) == "request.opened"]) == 2
    assert (h.cwd / "auto.txt").read_text() == "yes" and (h.cwd / "ran.txt").exists()


def test_auto_accept_edits_asks_only_for_commands(make):
    h = make()
    h.start(runtime_mode="auto-accept-edits")
    h.send("@write edit.txt ok\n@run touch ran.txt")
    opened = [e for e in h.events_until(lambda e: etype(e) == "request.opened" and e.kind == "command")
              if etype(e) == "request.opened"]
    assert [o.kind for o in opened] == ["file_change", "command"]
    h.adapter.respond_to_request("t1", opened[-1].request_id, "decline")
    h.events_until(lambda e: etype(e) == "turn.completed")
    assert (h.cwd / "edit.txt").read_text() == "ok" and not (h.cwd / "ran.txt").exists()


def test_cancel_mid_stream_is_interrupted(make):
    h = make()
    h.start()
    res = h.send("@reply " + "x" * 200 + "\n@chunks 100\n@delay 0.05")
    first = h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.interrupt_turn("t1", res.turn_id)
    events = first + h.events_until(lambda e: etype(e) == "turn.completed")
    types = [etype(e) for e in events]
    assert events[-1].state == "interrupted" and events[-1].turn_id == res.turn_id
    assert types.index("turn.aborted") == len(types) - 2
    streamed = text_of(events)
    assert 0 < len(streamed) < 200
    done = [e for e in events if etype(e) == "item.completed" and e.kind == "assistant_message"]
    assert done[0].text == streamed
    # the session is usable afterwards
    res2, ev2 = h.turn("@reply again")
    assert text_of(ev2, res2.turn_id) == "again"


def test_interrupt_right_after_prompt_is_not_lost(make):
    h = make()
    h.start()
    res = h.send("@reply slow\n@chunks 50\n@delay 0.05")
    h.adapter.interrupt_turn("t1")
    events = h.events_until(lambda e: etype(e) == "turn.completed")
    assert events[-1].state == "interrupted"


def test_pending_request_is_cancelled_by_interrupt(make):
    h = make()
    h.start(runtime_mode="approval-required")
    h.send("@run touch never.txt")
    opened = h.events_until(lambda e: etype(e) == "request.opened")[-1]
    h.adapter.interrupt_turn("t1")
    events = h.events_until(lambda e: etype(e) == "turn.completed")
    resolved = [e for e in events if etype(e) == "request.resolved"]
    assert [(r.request_id, r.resolution) for r in resolved] == [(opened.request_id, "cancelled")]
    assert events[-1].state == "interrupted"
    assert not (h.cwd / "never.txt").exists()


def test_env_directive_sees_only_the_instance_environment(make, monkeypatch):
    monkeypatch.setenv("PADDOCK_AMBIENT_SECRET", "leak")
    h = make(env={"MY_VAR": "mine"})
    h.start()
    _, e1 = h.turn("@env MY_VAR")
    _, e2 = h.turn("@env PADDOCK_AMBIENT_SECRET")
    assert text_of(e1) == "mine" and text_of(e2) == "<unset>"


def test_plan_interaction_sets_the_native_mode(make):
    h = make()
    h.start(interaction_mode="plan")
    caps = h.adapter.capabilities()
    assert caps.planning.plan_mode and caps.sessions.load and caps.sessions.resume
    configured = h.events_until(lambda e: etype(e) == "session.configured" and e.config.get("current_mode") == "plan")
    assert configured
    res, events = h.turn("@reply planned", interaction_mode="default")
    modes = [e.config["current_mode"] for e in events if etype(e) == "session.configured" and "current_mode" in e.config]
    assert modes == ["default"]
    started = [e for e in events if etype(e) == "turn.started"]
    assert started[0].interaction_mode == "default" and started[0].input_text == "@reply planned"


def test_model_without_a_model_option_is_a_warning(make):
    h = make()
    h.start(model="big-model")
    warnings = h.events_until(lambda e: etype(e) == "runtime.warning")
    assert warnings[-1].code == "acp.model_unsupported"


def test_typed_errors(make, tmp_path):
    from paddock.contract import (
        CapabilityUnsupportedError, SendTurnInput, SessionClosedError, SessionNotFoundError, ValidationError,
    )

    h = make()
    with pytest.raises(ValidationError):
        h.start(cwd=str(tmp_path / "missing"))
    with pytest.raises(SessionNotFoundError):
        h.send("@reply x", thread_id="nobody")
    h.start()
    with pytest.raises(ValidationError):
        h.send("   ")
    with pytest.raises(ValidationError):
        h.send("x" * 120_001)
    h.send("@reply slow\n@chunks 20\n@delay 0.05")
    with pytest.raises(ValidationError):
        h.send("@reply second")
    with pytest.raises(CapabilityUnsupportedError):
        h.adapter.steer_turn("t1", SendTurnInput(thread_id="t1", text="more"))
    h.adapter.interrupt_turn("t1")
    h.events_until(lambda e: etype(e) == "turn.completed")
    h.adapter.stop_session("t1")
    exited = h.events_until(lambda e: etype(e) == "session.exited")[-1]
    assert exited.reason == "stopped"
    assert not h.adapter.has_session("t1")
    with pytest.raises(SessionClosedError):
        h.send("@reply after stop")


def test_stop_mid_turn_completes_the_turn(make):
    h = make()
    h.start()
    res = h.send("@reply slow\n@chunks 50\n@delay 0.05")
    h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.stop_session("t1")
    events = h.events_until(lambda e: etype(e) == "session.exited")
    done = [e for e in events if etype(e) == "turn.completed"]
    assert len(done) == 1 and done[0].turn_id == res.turn_id and done[0].state == "cancelled"


def test_sessions_share_one_agent_process(make):
    h = make()
    for i in range(3):
        h.start(f"t{i}")
    results = [h.send(f"@reply r{i}\n@chunks 2", thread_id=f"t{i}") for i in range(3)]
    for i, res in enumerate(results):
        events = h.events_until(lambda e, r=res: etype(e) == "turn.completed" and e.turn_id == r.turn_id, thread_id=f"t{i}")
        assert text_of(events, res.turn_id) == f"r{i}"
    assert len(h.adapter.list_sessions()) == 3
    import psutil

    agents = [p for p in psutil.Process().children(recursive=True) if p.cmdline()[1:3] == ["-m", "paddock.drivers.local"]]
    assert len(agents) == 1


def test_command_output_is_streamed(make):
    h = make()
    h.start(runtime_mode="full-access")
    res, events = h.turn("@run printf 'one\\ntwo\\n'")
    out = "".join(e.delta for e in events if etype(e) == "content.delta" and e.stream == "command_output")
    done = [e for e in events if etype(e) == "item.completed" and e.kind == "command"]
    assert out == "one\ntwo\n" and done[0].text == out


def test_close_exits_every_session(make):
    h = make()
    for i in range(3):
        h.start(f"t{i}")
    res = h.send("@reply long\n@chunks 40\n@delay 0.05", thread_id="t0")
    h.adapter.close(timeout=10)
    for i in range(3):
        events = h.events_until(lambda e: etype(e) == "session.exited", thread_id=f"t{i}")
        assert events[-1].reason == "stopped"
        done = [e for e in events if etype(e) == "turn.completed"]
        assert [(d.turn_id, d.state) for d in done] == ([(res.turn_id, "cancelled")] if i == 0 else [])
    assert h.adapter.list_sessions() == []


def test_a_foreign_error_in_send_turn_unwinds_the_turn(make):
    # Below the Runtime (which refuses such text with a ValidationError) the adapter itself must
    # not be wedged by it: the text cannot be encoded for the agent's pipe.
    from paddock.contract import PaddockError

    h = make()
    h.start()
    with pytest.raises(PaddockError):
        h.send("lone surrogate \ud800")
    _, events = h.turn("@reply after the failed turn")
    assert text_of(events) == "after the failed turn"
    turn = h.send("@chunks 200\n@delay 0.05\n@reply slow")
    h.adapter.interrupt_turn("t1", turn.turn_id, timeout=10)
    done = h.events_until(lambda e: etype(e) == "turn.completed")
    assert done[-1].state == "interrupted"
