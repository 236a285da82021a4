"""One set of scenarios, run against the in-process Runtime and against RemoteRuntime over a real
``paddock serve`` (unix socket and TCP): same calls, same results, same error types."""

from __future__ import annotations

import threading
import time

import pytest

from paddock.contract import (
    CapabilityUnsupportedError,
    ImageAttachment,
    InstanceNotFoundError,
    RequestError,
    SessionClosedError,
    SessionNotFoundError,
    ValidationError,
)
from tests.runtime.conftest import run_turn, text_of


def test_turn_snapshot_instances_and_sessions(any_rt):
    rt, ws = any_rt
    assert {i.id: i.status for i in rt.instances()} == {"local-a": "available", "local-b": "available"}
    caps = {i.id: i.capabilities for i in rt.instances()}
    assert caps["local-a"] is not None and caps["local-a"].turns.interrupt
    session = rt.start_session("t1", instance="local-a", cwd=ws)
    assert session.thread_id == "t1" and session.instance_id == "local-a" and session.status == "ready"
    assert rt.has_session("t1") and not rt.has_session("t2")
    assert [s.thread_id for s in rt.list_sessions()] == ["t1"]
    turn, events = run_turn(rt, "t1", "@chunks 4\n@reply hello world")
    assert text_of(events) == "hello world" and events[-1].state == "completed"
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    [t] = rt.read_thread("t1").turns
    assert t.turn_id == turn.turn_id and t.state == "completed"
    assert any(i.kind == "assistant_message" and i.text == "hello world" for i in t.items)
    # the runtime's tracker marks the binding ready after the turn.completed it follows
    deadline = time.monotonic() + 10
    while (binding := rt.list_threads()[0]).status != "ready" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert binding.thread_id == "t1" and binding.status == "ready" and len(rt.list_threads()) == 1


def test_approval_accept_writes_and_decline_does_not(any_rt):
    rt, ws = any_rt
    rt.start_session("t1", instance="local-a", cwd=ws, runtime_mode="approval-required")
    seen = []

    def answer(decision):
        def on_request(event):
            [pending] = rt.pending_requests()
            assert pending.request_id == event.request_id and pending.thread_id == "t1"
            assert rt.pending_requests("other") == []
            seen.append(event)
            rt.respond_to_request("t1", event.request_id, decision)
        return on_request

    _, events = run_turn(rt, "t1", f"@write {ws}/yes.txt accepted", on_request=answer("accept"))
    assert (ws / "yes.txt").read_text() == "accepted"
    assert [e.decision for e in events if e.type == "request.resolved"] == ["accept"]
    _, events = run_turn(rt, "t1", f"@write {ws}/no.txt declined", on_request=answer("decline"))
    assert not (ws / "no.txt").exists()
    assert rt.pending_requests() == []
    with pytest.raises(RequestError):
        rt.respond_to_request("t1", seen[-1].request_id, "accept")
    with pytest.raises(ValidationError, match="decision"):
        rt.respond_to_request("t1", seen[-1].request_id, "maybe")


def test_interrupt_and_a_turn_while_one_runs(any_rt):
    rt, ws = any_rt
    rt.start_session("t1", instance="local-a", cwd=ws)
    with rt.subscribe(thread_id="t1", types=["turn.completed"]) as sub:
        first = rt.send_turn("t1", "@chunks 200\n@delay 0.02")
        with pytest.raises(ValidationError, match="still running"):
            rt.send_turn("t1", "second")
        rt.interrupt_turn("t1", first.turn_id)
        done = sub.get(timeout=10)
        assert done.turn_id == first.turn_id and done.state == "interrupted"
    _, events = run_turn(rt, "t1", "@reply after")
    assert text_of(events) == "after"


def test_steer_interrupts_and_starts_a_new_turn(any_rt):
    rt, ws = any_rt
    rt.start_session("t1", instance="local-a", cwd=ws)
    with rt.subscribe(thread_id="t1", types=["turn.completed"]) as sub:
        first = rt.send_turn("t1", "@chunks 200\n@delay 0.02")
        second = rt.steer_turn("t1", "@reply steered")
        assert second.turn_id != first.turn_id
        states = {}
        while len(states) < 2:
            event = sub.get(timeout=10)
            assert event is not None
            states[event.turn_id] = event.state
    assert states == {first.turn_id: "interrupted", second.turn_id: "completed"}


def test_stop_then_start_resumes(any_rt):
    rt, ws = any_rt
    rt.start_session("t1", instance="local-a", cwd=ws)
    run_turn(rt, "t1", "@reply one")
    rt.stop_session("t1")
    assert not rt.has_session("t1")
    assert [b.status for b in rt.list_threads()] == ["stopped"]
    with pytest.raises(SessionClosedError):
        rt.send_turn("t1", "hi")
    assert rt.start_session("t1", instance="local-a", cwd=ws).resumed
    _, events = run_turn(rt, "t1", "@reply-history")
    assert "1" in text_of(events)
    rt.stop_all()
    assert rt.list_sessions() == []


def test_errors_are_the_same_family(any_rt):
    rt, ws = any_rt
    with pytest.raises(SessionNotFoundError) as missing:
        rt.send_turn("ghost", "hi")
    assert missing.value.thread_id == "ghost" and "call start_session() first" in str(missing.value)
    with pytest.raises(InstanceNotFoundError) as unknown:
        rt.start_session("t1", instance="nope", cwd=ws)
    assert unknown.value.instance_id == "nope"
    with pytest.raises(ValidationError, match="not a directory"):
        rt.start_session("t1", instance="local-a", cwd=ws / "missing")
    rt.start_session("t1", instance="local-b", cwd=ws)
    with pytest.raises(ValidationError, match="empty"):
        rt.send_turn("t1", "   ")
    with pytest.raises(CapabilityUnsupportedError) as rollback:
        rt.rollback_thread("t1", 1)
    assert rollback.value.capability == "threads.rollback"
    with pytest.raises(CapabilityUnsupportedError):
        rt.respond_to_user_input("t1", "r1", {"q": "a"})
    with pytest.raises(SessionNotFoundError):
        rt.read_thread("ghost")
    with pytest.raises(ValidationError, match="unknown event types"):
        rt.subscribe(types=["no.such.type"])


def test_bad_arguments_are_validation_errors_naming_the_parameter(any_rt):
    rt, ws = any_rt
    rt.start_session("t1", instance="local-a", cwd=ws)
    bad = {
        "types": lambda: rt.subscribe(types=5),
        "from_seq": lambda: rt.subscribe(from_seq=-3),
        "max_buffered": lambda: rt.subscribe(max_buffered=0),
        "timeout": lambda: rt.send_turn("t1", "@reply no", timeout=-1),
    }
    for field, call in bad.items():
        with pytest.raises(ValidationError, match=field) as err:
            call()
        assert getattr(err.value, "field", None) == field, err.value
    with pytest.raises(ValidationError, match="timeout"):
        rt.stop_session("t1", timeout=0)
    with pytest.raises(ValidationError, match="mime_type 'image/bmp'"):
        rt.send_turn("t1", "@reply no", attachments=[ImageAttachment(mime_type="image/bmp", path="x.bmp")])  # type: ignore[arg-type]
    assert rt.read_thread("t1").turns == ()
    with rt.subscribe(thread_id="t1", types="turn.completed") as one_name:  # one type name as a plain string
        turn = rt.send_turn("t1", "@reply yes")
        done = one_name.get(timeout=30)
    assert done is not None and done.type == "turn.completed" and done.turn_id == turn.turn_id


def test_replay_from_seq_equals_the_live_stream(any_rt):
    rt, ws = any_rt
    rt.start_session("t1", instance="local-a", cwd=ws)
    _, live = run_turn(rt, "t1", "@chunks 30\n@reply the quick brown fox jumps")
    with rt.subscribe(thread_id="t1", from_seq=live[0].seq) as sub:
        replayed = [sub.get(timeout=10) for _ in live]
    assert replayed == live
    with rt.subscribe(thread_id="t1", from_seq=live[0].seq, assistant_delivery="buffered") as sub:
        merged = sub.get(timeout=10)
        while merged is not None and merged.type != "content.delta":
            merged = sub.get(timeout=10)
    assert merged is not None and merged.delta == text_of(live) and merged.seq == [e for e in live if e.type == "content.delta"][-1].seq


def test_ten_threads_at_once(any_rt):
    rt, ws = any_rt
    results: dict[str, str] = {}
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            rt.start_session(f"c{i}", instance="local-a" if i % 2 else "local-b", cwd=ws)
            _, events = run_turn(rt, f"c{i}", f"@reply thread {i}")
            results[f"c{i}"] = text_of(events)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert results == {f"c{i}": f"thread {i}" for i in range(10)}


def test_connecting_to_a_state_dir_without_a_live_server(short_root, make_server):
    from paddock.client import RemoteRuntime, find_server

    with pytest.raises(SessionClosedError, match="(?i)no paddock server owns"):
        RemoteRuntime.connect(short_root / "nothing")
    served = make_server("unix")
    assert find_server(served.state).socket == str(served.state / "paddock.sock")
    rt = served.remote()
    served.stop()
    assert find_server(served.state) is None
    with pytest.raises(SessionClosedError, match="unreachable"):
        rt.list_sessions()
    rt.close()
