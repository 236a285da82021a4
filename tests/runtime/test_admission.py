"""Admission through the public API on the ``local`` driver: ``max_running_turns`` (queued FIFO
per instance, or refused with ``queue = false``), ``max_live_sessions`` (the least recently
active idle session is stopped, else the start waits, else it is refused) and ``[runtime]
memory_mb`` (new sessions refused while the agents' RSS is over it)."""

from __future__ import annotations

import time

import pytest

from paddock import Runtime
from paddock.contract import CapacityError, ConfigError, ValidationError
from tests.helpers.admission import ADMITTED, ten_turns_two_at_a_time
from tests.runtime.conftest import run_turn

LONG = "@chunks 4\n@delay 0.5\na long turn"


def _open(tmp_path, instance: dict, runtime: dict | None = None) -> Runtime:
    config = {"instances": {"gated": {"driver": "local", **instance}}}
    if runtime:
        config["runtime"] = runtime
    return Runtime.open(config, state_dir=tmp_path / "state")


def _until(sub, kind: str, thread_id: str | None = None, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        event = sub.get(timeout=left)
        if event is not None and event.type == kind and thread_id in (None, event.thread_id):
            return event
    raise AssertionError(f"no {kind} of {thread_id} within {timeout} s")


def test_ten_turns_run_two_at_a_time_in_order_and_each_ends_once(tmp_path, workspace):
    with Runtime.open(ADMITTED, state_dir=tmp_path / "state") as rt:
        ten_turns_two_at_a_time(rt, workspace)


def test_an_interrupted_queued_turn_ends_interrupted_and_never_reaches_the_agent(tmp_path, workspace):
    with _open(tmp_path, {"max_running_turns": 1}) as rt:
        for t in ("a", "b", "c"):
            rt.start_session(t, instance="gated", cwd=workspace)
        with rt.subscribe(instance_id="gated") as sub:
            running = rt.send_turn("a", LONG)
            removed = rt.send_turn("b", "@reply never sent")
            after = rt.send_turn("c", "@reply sent after a")
            assert (running.queued, removed.queued, after.queued) == (None, 1, 2)
            rt.interrupt_turn("b", removed.turn_id)
            assert [q.thread_id for q in rt.queue()] == ["c"]
            events = []
            while not any(e.type == "turn.completed" and e.thread_id == "c" for e in events):
                event = sub.get(timeout=20)
                assert event is not None, [e.type for e in events]
                events.append(event)
    of_b = [e for e in events if e.thread_id == "b"]
    assert [e.type for e in of_b] == ["turn.queued", "turn.completed"]
    assert of_b[1].state == "interrupted" and of_b[1].turn_id == removed.turn_id
    started = [e.thread_id for e in events if e.type == "turn.started"]
    assert started == ["a", "c"]  # b's text never went to the agent


def test_queue_false_refuses_a_turn_beyond_the_bound_with_capacity_error(tmp_path, workspace):
    with _open(tmp_path, {"max_running_turns": 1, "queue": False}) as rt:
        rt.start_session("a", instance="gated", cwd=workspace)
        rt.start_session("b", instance="gated", cwd=workspace)
        with rt.subscribe(thread_id="b") as sub:
            rt.send_turn("a", LONG)
            with pytest.raises(CapacityError) as err:
                rt.send_turn("b", "@reply refused")
            assert (err.value.limit, err.value.scope, err.value.figure, err.value.bound) == \
                ("max_running_turns", "instance", 1, 1)
            assert err.value.thread_id == "b" and err.value.instance_id == "gated"
            assert sub.get(timeout=0.3) is None  # nothing of b was queued or started
        assert rt.queue() == []


def test_the_runtimes_bound_queues_turns_of_every_instance(tmp_path, workspace):
    config = {"runtime": {"max_running_turns": 1},
              "instances": {"x": {"driver": "local"}, "y": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("a", instance="x", cwd=workspace)
        rt.start_session("b", instance="y", cwd=workspace)
        with rt.subscribe(thread_id="b", types=["turn.started", "turn.completed"]) as sub:
            rt.send_turn("a", LONG)
            assert rt.send_turn("b", "@reply second").queued == 1
            rt.interrupt_turn("a")
            assert _until(sub, "turn.started", "b") is not None
            assert _until(sub, "turn.completed", "b").state == "completed"


def test_a_second_turn_of_a_thread_with_a_queued_turn_is_refused(tmp_path, workspace):
    with _open(tmp_path, {"max_running_turns": 1}) as rt:
        rt.start_session("a", instance="gated", cwd=workspace)
        rt.start_session("b", instance="gated", cwd=workspace)
        rt.send_turn("a", LONG)
        rt.send_turn("b", "@reply one")
        with pytest.raises(ValidationError, match="is queued"):
            rt.send_turn("b", "@reply two")
        rt.stop_session("b")  # its queued turn ends with it
        assert rt.queue() == []


def test_max_live_sessions_stops_the_least_recently_active_idle_session(tmp_path, workspace):
    with _open(tmp_path, {"max_live_sessions": 2}) as rt:
        rt.start_session("old", instance="gated", cwd=workspace)
        rt.start_session("recent", instance="gated", cwd=workspace)
        run_turn(rt, "old", "@reply keeps old active")  # now "recent" is the least recently active
        rt.start_session("new", instance="gated", cwd=workspace)
        assert {s.thread_id for s in rt.list_sessions()} == {"old", "new"}
        assert {b.thread_id: b.status for b in rt.list_threads()}["recent"] == "idle"
        # The stopped one resumes on its next turn, stopping the least recently active again.
        run_turn(rt, "recent", "@reply back")
        assert {s.thread_id for s in rt.list_sessions()} == {"new", "recent"}


def test_max_live_sessions_waits_for_a_session_to_go_idle_else_refuses(tmp_path, workspace):
    with _open(tmp_path, {"max_live_sessions": 1}) as rt:
        rt.start_session("busy", instance="gated", cwd=workspace)
        with rt.subscribe(thread_id="busy", types=["turn.completed"]) as sub:
            rt.send_turn("busy", LONG)  # about 1.5 s
            started = time.monotonic()
            with pytest.raises(CapacityError) as err:
                rt.start_session("next", instance="gated", cwd=workspace, timeout=0.3)
            assert time.monotonic() - started >= 0.3
            assert (err.value.limit, err.value.scope, err.value.figure, err.value.bound) == \
                ("max_live_sessions", "instance", 1, 1)
            rt.start_session("next", instance="gated", cwd=workspace, timeout=20)  # waits for the turn's end
            assert sub.get(timeout=0) is not None  # the busy turn had ended: it was not cut short
        assert [s.thread_id for s in rt.list_sessions()] == ["next"]


def test_memory_mb_refuses_new_sessions_while_the_agents_rss_is_over_it(tmp_path, workspace):
    with _open(tmp_path, {}, {"memory_mb": 1}) as rt:  # one agent's RSS is over 1 MiB
        rt.start_session("first", instance="gated", cwd=workspace)  # no agent ran yet: 0 MiB
        with pytest.raises(CapacityError) as err:
            rt.start_session("second", instance="gated", cwd=workspace)
        assert (err.value.limit, err.value.scope, err.value.bound) == ("memory_mb", "runtime", 1)
        assert err.value.figure >= 1
        assert [s.thread_id for s in rt.list_sessions()] == ["first"]


@pytest.mark.parametrize("table, key", [
    ({"max_running_turns": 0}, "max_running_turns"),
    ({"max_live_sessions": "2"}, "max_live_sessions"),
    ({"queue": "no"}, "queue"),
])
def test_bad_admission_keys_are_config_errors_naming_the_key(tmp_path, table, key):
    with pytest.raises(ConfigError, match=rf"\[instances.gated\] key '{key}'"):
        Runtime.open({"instances": {"gated": {"driver": "local", **table}}}, state_dir=tmp_path / "state")
    with pytest.raises(ConfigError, match=rf"\[runtime\] key '{key}'"):
        Runtime.open({"runtime": table, "instances": {}}, state_dir=tmp_path / "state2")


def test_an_instance_without_bounds_has_no_gate(tmp_path):
    """The hot path: without a bound no turn or event goes through admission."""
    with Runtime.open({"instances": {"free": {"driver": "local"}}}, state_dir=tmp_path / "state") as rt:
        assert rt._threads._turn_gate is None and rt._threads._session_gate is None


def test_turns_still_queued_at_close_end_interrupted_once(tmp_path, workspace):
    from paddock.contract import check_grammar

    with _open(tmp_path, {"max_running_turns": 1}) as rt:
        rt.start_session("a", instance="gated", cwd=workspace)
        rt.start_session("b", instance="gated", cwd=workspace)
        rt.send_turn("a", LONG)
        queued = rt.send_turn("b", "@reply never")
    with _open(tmp_path, {"max_running_turns": 1}) as rt:
        [turn] = rt.read_thread("b").turns
        assert (turn.turn_id, turn.state) == (queued.turn_id, "interrupted")
        with rt.subscribe(from_seq=1) as sub:
            events = list(iter(lambda: sub.get(timeout=0.5), None))
    assert [v.code for v in check_grammar(events)] == []


def test_a_queued_turn_that_cannot_start_ends_failed_with_a_runtime_error(tmp_path, workspace):
    gone = tmp_path / "gone"
    gone.mkdir()
    with _open(tmp_path, {"max_running_turns": 1}, {"idle_timeout": 0.3}) as rt:
        with rt.subscribe(thread_id="b") as sub:
            rt.start_session("b", instance="gated", cwd=gone)
            assert _until(sub, "session.exited", "b").reason  # reaped while idle: it resumes on its next turn
            gone.rmdir()  # ... in a folder that is no longer there
            rt.start_session("a", instance="gated", cwd=workspace)
            rt.send_turn("a", "@chunks 2\n@delay 0.3\nbusy")
            queued = rt.send_turn("b", "@reply cannot start")
            assert queued.queued == 1
            error = _until(sub, "runtime.error", "b")
            ended = _until(sub, "turn.completed", "b")
    assert error.code == "turn.queued_start_failed" and "is not a directory" in error.message
    assert (ended.turn_id, ended.state) == (queued.turn_id, "failed")
    assert rt.queue() == []


def test_a_turn_of_a_stopped_thread_is_refused_at_once_not_queued(tmp_path, workspace):
    from paddock.contract import SessionClosedError

    with _open(tmp_path, {"max_running_turns": 1}) as rt:
        rt.start_session("a", instance="gated", cwd=workspace)
        rt.start_session("b", instance="gated", cwd=workspace)
        rt.stop_session("b")
        rt.send_turn("a", LONG)
        with pytest.raises(SessionClosedError):
            rt.send_turn("b", "@reply stopped")
        assert rt.queue() == []


def test_the_runtimes_max_live_sessions_stops_an_idle_session_of_any_instance(tmp_path, workspace):
    config = {"runtime": {"max_live_sessions": 1},
              "instances": {"x": {"driver": "local"}, "y": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("a", instance="x", cwd=workspace)
        rt.start_session("b", instance="y", cwd=workspace)
        assert [s.thread_id for s in rt.list_sessions()] == ["b"]
        assert {t.thread_id: t.status for t in rt.list_threads()}["a"] == "idle"
