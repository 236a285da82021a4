"""The public Runtime API with the local agent: routing, validation, isolation, resume."""

from __future__ import annotations

import threading
import time

import pytest

from paddock import Runtime
from paddock.contract import (
    MAX_PROMPT_CHARS,
    CapabilityUnsupportedError,
    ConfigError,
    InstanceNotFoundError,
    RequestError,
    SessionClosedError,
    SessionNotFoundError,
    ValidationError,
)
from tests.runtime.conftest import TWO_LOCAL, run_turn, text_of


def test_simple_turn_and_snapshot(rt, workspace):
    session = rt.start_session("t1", instance="local-a", cwd=workspace)
    assert session.thread_id == "t1" and session.instance_id == "local-a"
    assert rt.has_session("t1") and [s.thread_id for s in rt.list_sessions()] == ["t1"]
    turn, events = run_turn(rt, "t1", "@chunks 4\n@reply hello world")
    assert text_of(events) == "hello world"
    assert events[-1].state == "completed"
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    snapshot = rt.read_thread("t1")
    [t] = snapshot.turns
    assert t.turn_id == turn.turn_id and t.state == "completed" and t.user_text.endswith("@reply hello world")
    assert any(i.kind == "assistant_message" and i.text == "hello world" for i in t.items)


def test_instances_lists_unknown_driver_and_missing_binary_as_unavailable(tmp_path):
    config = {
        "instances": {
            "ok": {"driver": "local"},
            "mystery": {"driver": "no-such-driver"},
            "gone": {"driver": "acp", "binary": str(tmp_path / "missing-agent")},
        }
    }
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        infos = {i.id: i for i in rt.instances()}
        assert infos["ok"].status == "available"
        assert infos["mystery"].status == "unavailable" and "no-such-driver" in infos["mystery"].reason
        assert infos["gone"].status == "unavailable" and "missing-agent" in infos["gone"].reason
        with pytest.raises(InstanceNotFoundError, match="no-such-driver"):
            rt.start_session("t", instance="mystery", cwd=tmp_path)
        with pytest.raises(InstanceNotFoundError, match="missing-agent"):
            rt.start_session("t", instance="gone", cwd=tmp_path)
        with pytest.raises(InstanceNotFoundError, match="not configured"):
            rt.start_session("t", instance="nobody", cwd=tmp_path)


def test_a_driver_table_with_a_bad_key_names_the_table_and_key(tmp_path):
    with pytest.raises(ConfigError, match=r"\[instances.a\] key 'env'"):
        Runtime.open({"instances": {"a": {"driver": "local", "env": "oops"}}}, state_dir=tmp_path / "s")
    with pytest.raises(ConfigError, match=r"\[instances.a\].*unknown field `bianry`"):
        Runtime.open({"instances": {"a": {"driver": "local", "bianry": "x"}}}, state_dir=tmp_path / "s")


def test_validation_errors_reach_no_process(rt, workspace):
    with pytest.raises(SessionNotFoundError):
        rt.send_turn("nope", "hi")
    with pytest.raises(SessionNotFoundError):
        rt.interrupt_turn("nope")
    with pytest.raises(SessionNotFoundError):
        rt.respond_to_request("nope", "r1", "accept")
    with pytest.raises(ValidationError, match="runtime_mode"):
        rt.start_session("t1", instance="local-a", cwd=workspace, runtime_mode="yolo")
    with pytest.raises(ValidationError, match="interaction_mode"):
        rt.start_session("t1", instance="local-a", cwd=workspace, interaction_mode="chatty")
    with pytest.raises(ValidationError, match="not a directory"):
        rt.start_session("t1", instance="local-a", cwd=workspace / "missing")
    assert rt.list_sessions() == []  # nothing was started by the refused calls
    rt.start_session("t1", instance="local-a", cwd=workspace)
    with pytest.raises(ValidationError, match="empty"):
        rt.send_turn("t1", "   ")
    with pytest.raises(ValidationError, match="limit"):
        rt.send_turn("t1", "x" * (MAX_PROMPT_CHARS + 1))
    with pytest.raises(ValidationError, match="decision"):
        rt.respond_to_request("t1", "r1", "maybe")
    with pytest.raises(RequestError):
        rt.respond_to_request("t1", "no-such-request", "accept")
    with pytest.raises(CapabilityUnsupportedError, match="threads.rollback"):
        rt.rollback_thread("t1", 1)


def test_a_turn_sent_while_one_runs_is_refused(rt, workspace):
    rt.start_session("t1", instance="local-a", cwd=workspace)
    with rt.subscribe(thread_id="t1", types=["turn.completed"]) as sub:
        first = rt.send_turn("t1", "@chunks 50\n@delay 0.02")
        with pytest.raises(ValidationError, match="still running"):
            rt.send_turn("t1", "second")
        rt.interrupt_turn("t1", first.turn_id)
        done = sub.get(timeout=10)
        assert done.turn_id == first.turn_id and done.state == "interrupted"


def test_stopped_session_is_closed_until_started_again(rt, workspace):
    rt.start_session("t1", instance="local-a", cwd=workspace)
    run_turn(rt, "t1", "@reply one")
    rt.stop_session("t1")
    assert not rt.has_session("t1")
    with pytest.raises(SessionClosedError):
        rt.send_turn("t1", "hi")
    session = rt.start_session("t1", instance="local-a", cwd=workspace)
    assert session.resumed
    _, events = run_turn(rt, "t1", "@reply-history")
    assert "1" in text_of(events)


def test_isolation_each_instance_sees_only_its_env_and_home(rt, workspace, monkeypatch):
    seen = {}
    for inst in ("local-a", "local-b"):
        rt.start_session(f"t-{inst}", instance=inst, cwd=workspace)
        seen[inst] = {
            name: text_of(run_turn(rt, f"t-{inst}", f"@env {name}")[1])
            for name in ("ACCOUNT", "HOME", "OPENAI_API_KEY")
        }
    assert seen["local-a"]["ACCOUNT"] == "a" and seen["local-b"]["ACCOUNT"] == "b"
    assert seen["local-a"]["HOME"] != seen["local-b"]["HOME"]
    assert seen["local-a"]["HOME"].endswith("/instances/local-a")
    assert seen["local-a"]["OPENAI_API_KEY"] == "<unset>"


def test_ambient_credentials_are_stripped_unless_passed(tmp_path, monkeypatch, workspace):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient-secret")
    config = {"instances": {"plain": {"driver": "local"}, "passing": {"driver": "local", "pass_env": ["OPENAI_API_KEY"]}}}
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        # The passed key reaches the agent; its echo in the agent's answer is masked at the hub.
        for inst, expected in (("plain", "<unset>"), ("passing", "[redacted]")):
            rt.start_session(inst, instance=inst, cwd=workspace)
            assert text_of(run_turn(rt, inst, "@env OPENAI_API_KEY")[1]) == expected


def test_starting_on_another_instance_stops_the_stale_session(rt, workspace):
    rt.start_session("t1", instance="local-a", cwd=workspace)
    with rt.subscribe(thread_id="t1", types=["session.exited", "session.started"]) as sub:
        rt.start_session("t1", instance="local-b", cwd=workspace)
        kinds = [(e.type, e.instance_id) for e in (sub.get(timeout=10), sub.get(timeout=10))]
    assert ("session.exited", "local-a") in kinds and ("session.started", "local-b") in kinds
    assert [s.instance_id for s in rt.list_sessions()] == ["local-b"]
    assert "b" == text_of(run_turn(rt, "t1", "@env ACCOUNT")[1])


def test_resume_after_close(tmp_path, workspace):
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        rt.start_session("t1", instance="local-a", cwd=workspace)
        run_turn(rt, "t1", "@reply first")
        run_turn(rt, "t1", "@reply second")
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        # No start_session: a bound thread resumes on demand.
        _, events = run_turn(rt, "t1", "@reply-history")
        assert "2" in text_of(events)
        assert rt.has_session("t1")


def test_concurrent_send_turn_on_50_threads(rt, workspace):
    threads = [f"c{i}" for i in range(50)]
    for i, t in enumerate(threads):
        rt.start_session(t, instance=("local-a", "local-b")[i % 2], cwd=workspace)
    results, errors = {}, []
    with rt.subscribe(types=["turn.completed"]) as sub:

        def send(t):
            try:
                results[t] = rt.send_turn(t, f"@chunks 3\n@reply {t}").turn_id
            except Exception as exc:  # collected and asserted below
                errors.append(exc)

        workers = [threading.Thread(target=send, args=(t,)) for t in threads]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=30)
        assert not errors
        done = set()
        while len(done) < 50:
            event = sub.get(timeout=20)
            assert event is not None, f"only {len(done)} of 50 turns completed"
            assert event.state == "completed"
            done.add(event.turn_id)
    assert done == set(results.values())


def test_idle_reaper_stops_and_send_turn_resumes(tmp_path, workspace):
    config = {"runtime": {"idle_timeout": 0.3}, "instances": {"a": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        rt.start_session("t1", instance="a", cwd=workspace)
        with rt.subscribe(thread_id="t1", types=["session.exited"]) as sub:
            run_turn(rt, "t1", "@reply one")
            exited = sub.get(timeout=10)
        assert exited is not None and not rt.has_session("t1")
        _, events = run_turn(rt, "t1", "@reply-history")
        assert "1" in text_of(events)


def _forget_agent_sessions(state_dir):
    sessions = list(state_dir.glob("instances/local-a/local-agent/sessions/*"))
    assert sessions, "the local agent should have kept its session history under its own home"
    for path in sessions:
        path.unlink()


def test_a_failed_resume_warns_and_starts_fresh(tmp_path, workspace):
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        rt.start_session("t1", instance="local-a", cwd=workspace)
        run_turn(rt, "t1", "@reply remembered")
    _forget_agent_sessions(tmp_path / "s")
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        with rt.subscribe(thread_id="t1", types=["runtime.warning", "session.started"]) as sub:
            session = rt.start_session("t1", instance="local-a", cwd=workspace)
            seen = [sub.get(timeout=10), sub.get(timeout=10)]
        assert not session.resumed
        started = next(e for e in seen if e.type == "session.started")
        assert started.resume_failed and not started.resumed
        assert any(e.type == "runtime.warning" for e in seen)
        _, events = run_turn(rt, "t1", "@reply-history")
        assert text_of(events) == "history: 0"


def test_resume_require_raises_when_the_resume_fails(tmp_path, workspace):
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        rt.start_session("t1", instance="local-a", cwd=workspace)
        run_turn(rt, "t1", "@reply remembered")
    _forget_agent_sessions(tmp_path / "s")
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        with pytest.raises(SessionClosedError, match="resume was required"):
            rt.start_session("t1", instance="local-a", cwd=workspace, resume="require")
        assert not rt.has_session("t1")


def test_a_closed_runtime_refuses_calls(tmp_path, workspace):
    rt = Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s")
    rt.close()
    rt.close()  # idempotent
    with pytest.raises(SessionClosedError, match="runtime is closed; open a new runtime"):
        rt.start_session("t1", instance="local-a", cwd=workspace)
    with pytest.raises(SessionClosedError, match="runtime is closed"):
        rt.subscribe()


def test_stop_mid_turn_stays_stopped(rt, workspace):
    rt.start_session("t1", instance="local-a", cwd=workspace)
    with rt.subscribe(thread_id="t1", types=["turn.completed", "session.exited"]) as sub:
        rt.send_turn("t1", "@chunks 500\n@delay 0.01")
        rt.stop_session("t1")
        kinds = {sub.get(timeout=10).type, sub.get(timeout=10).type}
    assert kinds == {"turn.completed", "session.exited"}
    rt._hub.flush()  # the tracker has seen what the host saw
    with pytest.raises(SessionClosedError):
        rt.send_turn("t1", "hi")
    assert not rt.has_session("t1")


def test_a_failed_event_log_makes_the_runtime_refuse_work(rt, workspace):
    from paddock.contract import PersistenceError

    rt.start_session("t1", instance="local-a", cwd=workspace)
    run_turn(rt, "t1", "@reply before")
    with rt.subscribe(thread_id="t1") as sub:
        rt._hub.kill_writer_mid_batch(after_rows=1)
        rt.send_turn("t1", "@reply lost")
        while sub.get(timeout=10) is not None:  # the subscription ends when the hub fails
            pass
        assert sub.ended
    deadline = time.monotonic() + 10
    while True:
        try:
            rt.send_turn("t1", "@reply refused")
        except PersistenceError as exc:
            assert "event hub stopped" in str(exc) and "writer killed mid-batch" in str(exc)
            break
        except ValidationError:
            pass  # the earlier turn may still be running in the agent
        assert time.monotonic() < deadline, "the runtime never noticed the hub failure"
        time.sleep(0.01)


def test_starting_a_live_thread_again_is_a_no_op_unless_its_settings_change(rt, workspace):
    first = rt.start_session("t1", instance="local-a", cwd=workspace)
    with rt.subscribe(thread_id="t1", types=["session.exited", "session.started"]) as sub:
        again = rt.start_session("t1", instance="local-a", cwd=workspace)
        assert again.thread_id == first.thread_id and again.runtime_mode == "full-access"
        rt._hub.flush()
        assert sub.get(timeout=0) is None  # flushed: a restart would have shown by now
        changed = rt.start_session("t1", instance="local-a", cwd=workspace, runtime_mode="approval-required")
        assert changed.runtime_mode == "approval-required" and changed.resumed
        assert [sub.get(timeout=10).type, sub.get(timeout=10).type] == ["session.exited", "session.started"]


@pytest.mark.parametrize("event_log", [True, False])
def test_subscribe_max_buffered_bounds_a_lagging_subscriber(tmp_path, workspace, event_log):
    config = {**TWO_LOCAL, "runtime": {"event_log": event_log}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local-a", cwd=workspace)
        lagging = rt.subscribe(thread_id="t1", max_buffered=5)  # not read until the turn is over
        _, events = run_turn(rt, "t1", "@chunks 50\n@reply " + "x" * 50)
        got = []
        while (ev := lagging.get(timeout=0 if got else 5)) is not None:
            got.append(ev)
            if ev.type == "turn.completed" and not event_log:
                break
        lagging.close()
    if event_log:  # it caught up from the log: every event, in order
        assert [e.seq for e in got] == [e.seq for e in events]
    else:  # the newest events beyond its 5 were dropped for it, and it was told how many;
        # how the turn ended is never dropped, and seq keeps increasing through the gap
        gaps = [e for e in got if e.type == "runtime.warning" and e.code == "subscription.gap"]
        assert [e.seq for e in got if e.type != "runtime.warning"] == [e.seq for e in [*events[:5], events[-1]]]
        assert got[-1].type == "turn.completed"
        assert sum(g.detail["count"] for g in gaps) == len(events) - 6
        seqs = [e.seq for e in got]
        assert all(s > 0 for s in seqs) and seqs == sorted(set(seqs))


def test_a_restarted_session_goes_on_from_the_threads_usage(tmp_path, workspace):
    """The local agent (an ACP agent) counts per turn, as Copilot and OpenCode do: a session
    restarted with other settings (a chat's /mode) or in a new host resumes the thread's usage
    from its cursor, so the counts never go backwards and no grammar warning repeats."""
    def usage(events):
        [update] = [e.usage for e in events if e.type == "thread.token-usage.updated" and e.usage.input_tokens]
        assert not [e for e in events if e.type == "runtime.warning"], events
        return update.input_tokens, update.output_tokens

    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local-a", cwd=workspace)
        assert usage(run_turn(rt, "t1", "@usage 10 5\n@reply x")[1]) == (10, 5)
        rt.start_session("t1", instance="local-a", cwd=workspace, runtime_mode="approval-required")  # a restart
        assert usage(run_turn(rt, "t1", "@usage 3 1\n@reply y")[1]) == (13, 6)
        rt.stop_session("t1")
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "state") as rt:  # a new host
        rt.start_session("t1", instance="local-a", cwd=workspace)
        assert usage(run_turn(rt, "t1", "@usage 1 1\n@reply z")[1]) == (14, 7)
