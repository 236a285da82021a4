"""The soak's limits lane (issue 35): local instances under ``limits`` and ``max_running_turns``
with a queue, hit by over-limit turns (``@alloc`` / ``@fork``) and bursts of sends, through
``paddock bench soak``. A short soak computes the lane's invariants and they hold; the log judge
reports each broken invariant on a fabricated log."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks.soak import LIMITS_INVARIANTS, judge_limits_log
from tests.benchmarks.test_smoke import bench


@pytest.mark.timeout(300)
def test_the_limits_lane_kills_over_limit_agents_alone_resumes_them_and_keeps_its_queue(capsys):
    doc = bench(capsys, "soak", "--minutes", "0.4", "--sessions", "2", "--instances", "1", "--seed", "7",
                "--fault-interval", "1", "--faults", "limit_memory,limit_processes,queue_burst",
                "--no-disk", "--no-server")
    counts = doc["faults"]["counts"]
    assert set(counts) <= {"limit_memory", "limit_processes", "queue_burst", "agent_stop_at_close"}, counts
    assert counts.get("limit_memory", 0) + counts.get("limit_processes", 0) >= 1 and counts["queue_burst"] >= 1
    lane = doc["lanes"]["limits"]
    assert lane["kill_count"] >= 1, lane
    for kill in lane["kills"]:
        assert kill["ended"] in ("failed", "completed") and kill["resumed"] == "completed", kill
        assert "exceeded its limit" in kill["warning"] and not kill.get("touched"), kill
    assert lane["queued"] > 0 and lane["interrupted_while_queued"] >= 1, lane
    assert lane["burst_markers_written"] >= 1  # a burst turn that ran wrote its marker: the check can see one
    assert all(0 < n <= lane["max_running_turns"] for n in lane["peak_running"].values()), lane["peak_running"]
    for name in (*LIMITS_INVARIANTS, "turns_end_exactly_once", "no_process_outlives_its_session"):
        invariant = doc["invariants"][name]
        assert invariant["held"], (name, invariant["details"])
    assert doc["meets_targets"]


def _ev(seq: int, kind: str, turn: str | None, instance: str = "i0", **rest: str) -> SimpleNamespace:
    return SimpleNamespace(seq=seq, type=kind, turn_id=turn, instance_id=instance, state=rest.get("state"),
                           code=rest.get("code"))


def _sound() -> list[SimpleNamespace]:
    """Two slots on i0: a and b run, c queued then started when a ends, d queued and interrupted."""
    return [
        _ev(1, "turn.started", "a"), _ev(2, "turn.started", "b"), _ev(3, "turn.queued", "c"),
        _ev(4, "turn.queued", "d"), _ev(5, "content.delta", "a"), _ev(6, "turn.completed", "d", state="interrupted"),
        _ev(7, "turn.completed", "a", state="completed"), _ev(8, "turn.started", "c"),
        _ev(9, "runtime.warning", "b", code="process.limit_exceeded"), _ev(10, "turn.completed", "b", state="failed"),
        _ev(11, "turn.completed", "c", state="completed"),
    ]


def test_the_limits_log_judge_passes_a_sound_log():
    found, summary = judge_limits_log(_sound(), 2, {"d": False}, {"i0"})
    assert found == []
    assert summary["queued"] == 2 and summary["interrupted_while_queued"] == 1 and summary["peak_running"] == {"i0": 2}


@pytest.mark.parametrize("break_it, invariant, problem", [
    (lambda evs: evs + [_ev(12, "turn.completed", "d", state="interrupted")],
     "queued_turns_end_once_unsent_when_interrupted", "2 turn.completed"),
    (lambda evs: [e for e in evs if e.turn_id != "c" or e.type != "turn.completed"],
     "queued_turns_end_once_unsent_when_interrupted", "0 turn.completed"),
    (lambda evs: evs[:5] + [_ev(5, "content.delta", "d")] + evs[5:],
     "queued_turns_end_once_unsent_when_interrupted", "events of the agent's"),
    (lambda evs: [e if e.turn_id != "d" else _ev(e.seq, e.type, "d", state="completed") for e in evs],
     "queued_turns_end_once_unsent_when_interrupted", "never started, yet ended completed"),
    (lambda evs: evs[:2] + [_ev(3, "turn.started", "e")] + evs[2:],
     "running_turns_within_bound", None),
    (lambda evs: [e if e.type != "runtime.warning" else _ev(9, e.type, "b", "i1", code=e.code) for e in evs],
     "over_limit_agents_killed_alone_and_resumed", "no over-limit turn"),
])
def test_the_limits_log_judge_reports_each_broken_invariant(break_it, invariant, problem):
    found, _ = judge_limits_log(break_it(_sound()), 2, {"d": False}, {"i0"})
    assert found and {name for name, _ in found} == {invariant}, found
    assert problem is None or problem in found[0][1]["problem"], found


def test_the_limits_log_judge_reports_an_interrupted_queued_turn_the_agent_ran():
    found, _ = judge_limits_log(_sound(), 2, {"d": True}, {"i0"})
    assert [(name, detail["turn_id"]) for name, detail in found] == [
        ("queued_turns_end_once_unsent_when_interrupted", "d")]
