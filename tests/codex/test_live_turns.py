"""Live: the codex driver against the pinned Codex app-server and the scripted model server
(every acceptance item of the driver's issue, checked on disk where it says so)."""

from __future__ import annotations

import os
import signal
import threading
import time

import psutil
import pytest

from paddock.contract import ConfigError, RequestError, ValidationError

from tests.live.conftest import require_peer

from .conftest import etype, of_type, text_of

pytestmark = pytest.mark.live


def test_simple_turn_streams_text(make, model_server):
    h = make()
    session = h.start()
    assert session.status == "ready" and session.resume_cursor is not None and not session.resumed
    res, evs = h.turn("say hi SCENARIO:text")
    assert text_of(evs, res.turn_id) == "Hello from mock"
    [started] = of_type(evs, "turn.started")
    assert started.input_text == "say hi SCENARIO:text" and started.provider_refs.turn == res.turn_id
    [done] = of_type(evs, "turn.completed")
    assert done.state == "completed"
    [item] = [e for e in of_type(evs, "item.completed") if e.kind == "assistant_message"]
    assert item.text == "Hello from mock"
    assert len([e for e in evs if etype(e) == "content.delta"]) >= 2  # streamed, not one blob
    assert of_type(evs, "thread.token-usage.updated")[-1].usage.output_tokens > 0
    [call] = model_server.wait_for(timeout=5)
    assert (call.scenario, call.status) == ("text", 200)
    assert call.headers["authorization"] == "Bearer paddock-mock-key"
    snapshot = h.adapter.read_thread("t1")
    assert snapshot.turns[-1].state == "completed" and snapshot.turns[-1].user_text == "say hi SCENARIO:text"
    models = h.adapter.models()
    assert models and models[0].id == "mock-model" and models[0].is_default


def test_multi_turn_keeps_the_conversation(make, model_server):
    h = make()
    h.start()
    first, _ = h.turn("remember PELICAN SCENARIO:text")
    second, evs = h.turn("what was the word? SCENARIO:text")
    assert first.turn_id != second.turn_id
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    calls = model_server.wait_for(count=2, timeout=5)
    assert "PELICAN" in str(calls[-1].body["input"])
    usage = [e.usage.total_tokens for e in of_type(evs, "thread.token-usage.updated")]
    assert usage and usage == sorted(usage)
    assert [t.state for t in h.adapter.read_thread("t1").turns] == ["completed", "completed"]
    with pytest.raises(ValidationError):
        h.send("   ")


def _approval_turn(h, prompt: str, kind: str, decision: str):
    res = h.send(prompt)
    evs = h.events_until(lambda e: etype(e) in ("request.opened", "turn.completed"))
    [opened] = of_type(evs, "request.opened")
    assert opened.kind == kind and opened.turn_id == res.turn_id and opened.provider_refs.request is not None
    h.adapter.respond_to_request("t1", opened.request_id, decision, timeout=10)
    evs += h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id and resolved.decision == decision
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    [item] = [e for e in of_type(evs, "item.completed") if e.item_id == opened.item_id]
    return opened, item, evs


def test_command_approval_accepted_runs_the_command(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    opened, item, _ = _approval_turn(h, "create hello.txt SCENARIO:tool_shell", "command", "accept")
    assert "touch hello.txt" in (opened.title or "") and opened.data["method"] == "item/commandExecution/requestApproval"
    assert opened.provider_refs.request == opened.item_id == opened.provider_refs.item  # the model's call id
    assert item.kind == "command" and item.status == "completed"
    assert (workspace / "hello.txt").exists()
    with pytest.raises(RequestError):  # answered once
        h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=10)


def test_command_approval_declined_runs_nothing(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    _, item, _ = _approval_turn(h, "create hello.txt SCENARIO:tool_shell", "command", "decline")
    assert item.status == "declined"
    assert not (workspace / "hello.txt").exists()


def test_file_change_approval_accepted_writes_the_file(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    opened, item, evs = _approval_turn(h, "add a file SCENARIO:patch", "file_change", "accept")
    assert item.kind == "file_change" and item.status == "completed" and "patched.txt" in (item.title or "")
    assert (workspace / "patched.txt").read_text() == "created by apply_patch\n"
    assert any("patched.txt" in e.diff for e in of_type(evs, "turn.diff.updated"))


def test_file_change_approval_declined_writes_nothing(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    _, item, _ = _approval_turn(h, "add a file SCENARIO:patch", "file_change", "decline")
    assert item.status == "declined"
    assert not (workspace / "patched.txt").exists()


def test_interrupt_mid_stream_ends_interrupted_with_no_delta_after(make):
    h = make()
    h.start()
    res = h.send("count slowly SCENARIO:slow")
    evs = h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.interrupt_turn("t1", res.turn_id, timeout=10)
    after = h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    assert after[-1].state == "interrupted"
    # Nothing of the turn streams once the interrupt is acknowledged (no delta, no new item).
    assert not [e for e in after if etype(e) in ("content.delta", "item.started")]
    streamed = text_of(evs + after, res.turn_id)
    assert streamed.startswith("tick0") and len(streamed) < len("".join(f"tick{i} " for i in range(100)))
    res2, evs2 = h.turn("again SCENARIO:text")
    assert text_of(evs2, res2.turn_id) == "Hello from mock"


def test_model_http_500_fails_the_turn_with_the_message(make, model_server):
    h = make()
    h.start()
    res, evs = h.turn("break SCENARIO:http500")
    [done] = of_type(evs, "turn.completed")
    assert done.state == "failed" and "internalServerError" in (done.error or "")
    assert of_type(evs, "runtime.error")[0].message == done.error
    assert [c.status for c in model_server.wait_for(timeout=5)] == [500]
    res2, evs2 = h.turn("recover SCENARIO:text")
    assert of_type(evs2, "turn.completed")[-1].state == "completed"


def test_resume_in_a_fresh_process_sends_the_history(tmp_path, make, model_server):
    h = make()
    h.start()
    h.turn("the word is PELICAN SCENARIO:text")
    cursor = h.adapter.list_sessions()[0].resume_cursor
    h.close()
    h2 = make(home=str(h.home))  # same instance home: same CODEX_HOME, a new app-server process
    session = h2.start(resume_cursor=cursor)
    assert session.resumed and session.resume_cursor == cursor
    started = h2.events_until(lambda e: etype(e) == "session.started")
    assert started[-1].resumed and not started[-1].resume_failed
    res, evs = h2.turn("what was the word? SCENARIO:text")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    last = model_server.wait_for(count=2, timeout=5)[-1]
    assert "PELICAN" in str(last.body["input"]) and "what was the word?" in str(last.body["input"])


def test_resume_of_an_unpersisted_thread_says_so_and_starts_fresh(make):
    h = make()
    cursor = h.start().resume_cursor  # no turn: Codex never wrote the thread
    h.close()
    h2 = make(home=str(h.home))
    session = h2.start(resume_cursor=cursor)
    assert not session.resumed and session.resume_cursor != cursor
    evs = h2.events_until(lambda e: etype(e) == "session.started")
    assert evs[-1].resume_failed
    assert [e.code for e in of_type(evs, "runtime.warning")] == ["codex.resume_failed"]


def _app_server(h) -> psutil.Process:
    pid = h.adapter.link.conn.process.pid
    return psutil.Process(pid)


def test_kill_9_mid_turn_restarts_resumes_and_completes(make, model_server):
    h = make()
    h.start()
    h.turn("the word is PELICAN SCENARIO:text")
    old = _app_server(h)
    res = h.send("count slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    os.kill(old.pid, signal.SIGKILL)
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    [done] = [e for e in of_type(evs, "turn.completed") if e.turn_id == res.turn_id]
    assert done.state == "failed" and "signal 9" in (done.error or "")
    assert evs[-1].recoverable and evs[-1].signal == signal.SIGKILL
    deadline = time.monotonic() + 20
    while (h.adapter.link is None or h.adapter.link.conn.process.pid == old.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert h.adapter.link is not None and h.adapter.link.conn.process.pid != old.pid
    assert not old.is_running() or old.status() == psutil.STATUS_ZOMBIE
    res2, evs2 = h.turn("what was the word? SCENARIO:text")
    resumed = [e for e in of_type(evs2, "session.started")]
    assert resumed and resumed[-1].resumed
    assert of_type(evs2, "turn.completed")[-1].state == "completed"
    assert "PELICAN" in str(model_server.model_calls()[-1].body["input"])


def test_kill_9_before_the_first_turn_warns_and_starts_fresh(make):
    h = make()
    h.start()
    old = _app_server(h).pid
    os.kill(old, signal.SIGKILL)
    h.events_until(lambda e: etype(e) == "session.exited")
    deadline = time.monotonic() + 20
    while (h.adapter.link is None or h.adapter.link.conn.process.pid == old) and time.monotonic() < deadline:
        time.sleep(0.05)
    res, evs = h.turn("hello SCENARIO:text")
    assert [e.code for e in of_type(evs, "runtime.warning")] == ["codex.resume_unpersisted"]
    assert of_type(evs, "session.started")[-1].resume_failed
    assert of_type(evs, "turn.completed")[-1].state == "completed"


def test_two_instances_with_their_own_homes_share_nothing(tmp_path, make, workspace):
    a = make(instance_id="codex-a")
    b = make(instance_id="codex-b")
    a.start()
    b.start()
    results: dict = {}

    def run(h, name):
        results[name] = h.turn(f"hello from {name} SCENARIO:text")

    threads = [threading.Thread(target=run, args=(h, n)) for h, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for name in ("a", "b"):
        res, evs = results[name]
        assert of_type(evs, "turn.completed")[-1].state == "completed"
    home_a, home_b = a.adapter.codex_home, b.adapter.codex_home
    assert home_a != home_b and not home_a.is_relative_to(home_b) and not home_b.is_relative_to(home_a)
    rollouts_a = list((home_a / "sessions").rglob("rollout-*.jsonl"))
    rollouts_b = list((home_b / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts_a) == 1 and len(rollouts_b) == 1
    assert "hello from a" in rollouts_a[0].read_text() and "hello from b" not in rollouts_a[0].read_text()
    assert "hello from b" in rollouts_b[0].read_text() and "hello from a" not in rollouts_b[0].read_text()
    for home, other in ((home_a, home_b), (home_b, home_a)):
        for path in home.rglob("*"):  # nothing in one home leads into the other
            assert not path.resolve().is_relative_to(other)
        assert (os.stat(home).st_mode & 0o077) == 0
    pa, pb = _app_server(a), _app_server(b)
    assert pa.pid != pb.pid
    assert pa.environ()["CODEX_HOME"] == str(home_a) and pb.environ()["CODEX_HOME"] == str(home_b)


def test_shadow_home_shares_sessions_and_keeps_auth_private(tmp_path, make):
    main = tmp_path / "main-codex"
    main.mkdir()
    (main / "auth.json").write_text('{"account": "main"}')
    h = make(home=str(main), shadow_home=str(tmp_path / "shadow"))
    h.start()
    h.turn("hello SCENARIO:text")
    assert list((main / "sessions").rglob("rollout-*.jsonl"))  # written through the link
    assert (main / "auth.json").read_text() == '{"account": "main"}'
    assert not (tmp_path / "shadow" / "auth.json").is_symlink()
    assert _app_server(h).environ()["CODEX_HOME"] == str(tmp_path / "shadow")


@pytest.mark.parametrize("case", ["same", "real_folder", "auth_link"])
def test_shadow_home_refusals_are_config_errors(tmp_path, make, case):
    main, shadow = tmp_path / "main-codex", tmp_path / "shadow"
    main.mkdir()
    shadow.mkdir()
    if case == "same":
        shadow = main
    elif case == "real_folder":
        (shadow / "sessions").mkdir()
    else:
        (main / "auth.json").write_text("{}")
        (shadow / "auth.json").symlink_to(main / "auth.json")
    h = make(home=str(main), shadow_home=str(shadow))
    from paddock.drivers.codex._spec import probe

    assert probe(h.ctx) is not None
    with pytest.raises(ConfigError):
        h.start()
    assert h.adapter.link is None  # nothing was spawned


def test_steer_adds_input_to_the_running_turn(make, model_server):
    h = make()
    h.start()
    res = h.send("count slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    from paddock.contract import SendTurnInput

    steered = h.adapter.steer_turn("t1", SendTurnInput(thread_id="t1", text="also mention OSPREY"), timeout=10)
    assert steered.turn_id == res.turn_id
    h.adapter.interrupt_turn("t1", timeout=10)
    h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    with pytest.raises(ValidationError):  # no turn to steer any more
        h.adapter.steer_turn("t1", SendTurnInput(thread_id="t1", text="late"), timeout=10)


def test_rollback_drops_the_last_turn_from_what_the_model_sees(make, model_server):
    h = make()
    h.start()
    h.turn("the word is PELICAN SCENARIO:text")
    h.turn("the other word is HERON SCENARIO:text")
    snapshot = h.adapter.rollback_thread("t1", 1, timeout=10)
    assert [t.user_text for t in snapshot.turns] == ["the word is PELICAN SCENARIO:text"]
    h.turn("which words? SCENARIO:text")
    sent = str(model_server.model_calls()[-1].body["input"])
    assert "PELICAN" in sent and "HERON" not in sent
    with pytest.raises(ValidationError):
        h.adapter.rollback_thread("t1", 5, timeout=10)


def test_open_request_is_cancelled_by_an_interrupt_and_nothing_runs(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    res = h.send("create hello.txt SCENARIO:tool_shell")
    evs = h.events_until(lambda e: etype(e) == "request.opened")
    h.adapter.interrupt_turn("t1", timeout=10)
    evs += h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    [opened] = of_type(evs, "request.opened")
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id
    assert resolved.resolution == "cancelled" and evs[-1].state == "interrupted"
    assert not (workspace / "hello.txt").exists()


def test_open_request_expires_when_the_app_server_dies(make, workspace):
    h = make()
    h.start(runtime_mode="approval-required")
    res = h.send("create hello.txt SCENARIO:tool_shell")
    [opened] = of_type(h.events_until(lambda e: etype(e) == "request.opened"), "request.opened")
    os.kill(_app_server(h).pid, signal.SIGKILL)
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.request_id == opened.request_id and resolved.resolution == "expired"
    assert [e.state for e in of_type(evs, "turn.completed") if e.turn_id == res.turn_id] == ["failed"]
    with pytest.raises(RequestError):
        h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=20)


def test_fork_copies_the_history_into_a_new_thread(make, model_server):
    h = make()
    h.start()
    h.subs.setdefault("t2", h.hub.subscribe(thread_id="t2"))
    with pytest.raises(ValidationError):  # nothing persisted yet
        h.adapter.fork_thread("t1", "t2", timeout=10)
    h.turn("the word is PELICAN SCENARIO:text")
    forked = h.adapter.fork_thread("t1", "t2", timeout=20)
    assert forked.thread_id == "t2" and forked.resumed
    assert forked.resume_cursor != h.adapter.list_sessions()[0].resume_cursor
    res, evs = h.turn("what was the word? SCENARIO:text", thread_id="t2")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    assert "PELICAN" in str(model_server.model_calls()[-1].body["input"])
    h.turn("only on the original SCENARIO:text")
    res, evs = h.turn("and now? SCENARIO:text", thread_id="t2")
    assert "only on the original" not in str(model_server.model_calls()[-1].body["input"])


def test_compaction_is_accepted_and_the_thread_goes_on(make, model_server):
    h = make()
    h.start()
    h.turn("the word is PELICAN SCENARIO:text")
    before = len(model_server.model_calls())
    compaction = h.adapter.compact_thread("t1", timeout=20)
    evs = h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == compaction.turn_id)
    assert evs[-1].state == "completed"
    assert len(model_server.model_calls()) > before  # the summary was asked of the model
    assert "contextCompaction" in [e.data["native_type"] for e in of_type(evs, "item.completed")]
    res, evs = h.turn("go on SCENARIO:text")
    assert of_type(evs, "turn.completed")[-1].state == "completed"


def _wait_new_server(h, old_pid: int, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        link = h.adapter.link
        if link is not None and link.conn.process.pid not in (None, old_pid) and link.exit_info is None:
            return link.conn.process.pid
        time.sleep(0.05)
    raise AssertionError("the app-server was not restarted")


@pytest.mark.timeout(120)
def test_every_thread_of_the_process_exits_recoverable_and_past_the_budget_the_instance_gives_up(make):
    from paddock.contract import SessionClosedError

    h = make()
    h.start("t1")
    h.start("t2")
    h.turn("one SCENARIO:text", thread_id="t1")
    pid = _app_server(h).pid
    os.kill(pid, signal.SIGKILL)
    for tid in ("t1", "t2"):
        exited = h.events_until(lambda e: etype(e) == "session.exited", thread_id=tid)[-1]
        assert exited.recoverable and exited.signal == signal.SIGKILL
    for _ in range(3):  # the budget: 3 restarts in 60 s
        pid = _wait_new_server(h, pid)
        os.kill(pid, signal.SIGKILL)
    evs = h.events_until(lambda e: etype(e) == "runtime.error", thread_id="t1", timeout=30)
    assert evs[-1].code == "codex.restart_limit"
    with pytest.raises(SessionClosedError):
        h.send("again SCENARIO:text", "t1")
    h.start("t3")  # a fresh tree
    res, evs = h.turn("fresh SCENARIO:text", thread_id="t3")
    assert evs[-1].state == "completed"


def test_a_non_zero_exit_is_restarted_like_a_kill(tmp_path, make):
    # The app-server behind a wrapper that exits 3 when it ends: the supervisor sees a non-zero
    # exit of its child (not a signal), and recovers the same way.
    _, argv = require_peer("codex")
    wrapper = tmp_path / "codex-wrapper"
    wrapper.write_text(f'#!/bin/sh\n"{argv[0]}" "$@"\nexit 3\n')
    wrapper.chmod(0o755)
    h = make(binary=str(wrapper))
    h.start()
    h.turn("the word is PELICAN SCENARIO:text")
    codex = [p for p in _app_server(h).children(recursive=True) if p.name() == "codex"]
    assert len(codex) == 1
    old = h.adapter.link.conn.process.pid
    codex[0].kill()
    exited = h.events_until(lambda e: etype(e) == "session.exited")[-1]
    assert exited.recoverable and exited.exit_code == 3 and exited.signal is None
    _wait_new_server(h, old)
    res, evs = h.turn("what was the word? SCENARIO:text")
    assert of_type(evs, "session.started")[-1].resumed and evs[-1].state == "completed"


def test_stop_mid_turn_cancels_it_and_the_thread_resumes_later(make, model_server):
    from paddock.contract import SessionClosedError

    h = make()
    h.start()
    h.turn("the word is PELICAN SCENARIO:text")
    res = h.send("count slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    cursor = h.adapter.list_sessions()[0].resume_cursor
    h.adapter.stop_session("t1", timeout=10)
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    [done] = [e for e in of_type(evs, "turn.completed") if e.turn_id == res.turn_id]
    assert done.state == "cancelled" and evs[-1].reason == "stopped"
    with pytest.raises(SessionClosedError):
        h.send("late SCENARIO:text")
    session = h.start(resume_cursor=cursor)  # same app-server, the thread comes back
    assert session.resumed
    res2, evs2 = h.turn("what was the word? SCENARIO:text")
    assert evs2[-1].state == "completed"
    assert "PELICAN" in str(model_server.model_calls()[-1].body["input"])
