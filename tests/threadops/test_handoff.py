"""fork_thread as a hand-off, end to end on real agent processes: the local agent (its session
files show what it received) and a prompt-recording ACP agent (``tests/host/prompt_agent.py``),
whose ACP adapter has no native fork. The new thread's first prompt carries the source's
transcript once, bounded by the instance's ``preamble_max_chars``; later prompts do not; the two
threads do not cross; the new thread is bound, listed, readable, and resumes in a new runtime."""

from __future__ import annotations

import json

import pytest

from paddock import Runtime
from paddock._services._transcript import handoff_preamble
from paddock.contract import (
    PREAMBLE_CLOSE,
    PREAMBLE_OPEN,
    CapabilityUnsupportedError,
    ItemSnapshot,
    SessionNotFoundError,
    ThreadSnapshot,
    TurnSnapshot,
    ValidationError,
)

from tests.host.conftest import local_history, prompt_agent_config, prompts, run_turn, text_of


TWO = {"instances": {"local": {"driver": "local"}, "other": {"driver": "local"}}}


def _by_session(log) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        out.setdefault(rec["session"], []).append(rec["text"])
    return out


def test_a_handoff_carries_the_transcript_once_and_the_threads_do_not_cross(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    with Runtime.open(prompt_agent_config(log), state_dir=tmp_path / "state") as rt:
        [info] = rt.instances()
        assert info.capabilities.sessions.fork is False and info.capabilities.sessions.fork_kind == "handoff"
        rt.start_session("src", instance="rec", cwd=workspace)
        run_turn(rt, "src", "FIRST remember OSPREY")
        run_turn(rt, "src", "SECOND and KESTREL")
        session = rt.fork_thread("src", "copy")
        assert session.thread_id == "copy" and session.status == "ready"
        with rt.subscribe(types=["turn.started"]) as sub:
            turn, _ = run_turn(rt, "copy", "THIRD on the copy")
            started = sub.get(timeout=5)
        assert started is not None and (started.thread_id, started.turn_id) == ("copy", turn.turn_id)
        run_turn(rt, "copy", "FOURTH on the copy")
        run_turn(rt, "src", "FIFTH on the source")
        bound = {b.thread_id: b for b in rt.list_threads()}
        copy_snapshot = rt.read_thread("copy")
        src_snapshot = rt.read_thread("src")
    assert bound["copy"].instance_id == "rec" and bound["copy"].cwd == bound["src"].cwd
    sessions = _by_session(log)
    [src_prompts] = [p for p in sessions.values() if p[0] == "FIRST remember OSPREY"]
    [copy_prompts] = [p for p in sessions.values() if p[-1] == "FOURTH on the copy"]
    assert src_prompts == ["FIRST remember OSPREY", "SECOND and KESTREL", "FIFTH on the source"]
    first, second = copy_prompts
    assert first.startswith(PREAMBLE_OPEN) and first.endswith("\n\nTHIRD on the copy")
    assert "FIRST remember OSPREY" in first and "SECOND and KESTREL" in first and "[turn 2] assistant" in first
    assert first.count("OSPREY") == 1 and "left out" not in first
    assert second == "FOURTH on the copy"  # no second copy of the transcript
    assert [t.user_text for t in copy_snapshot.turns] == ["THIRD on the copy", "FOURTH on the copy"]
    assert [t.user_text for t in src_snapshot.turns][-1] == "FIFTH on the source"


def test_at_turn_hands_over_only_the_turns_through_it(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    with Runtime.open(prompt_agent_config(log), state_dir=tmp_path / "state") as rt:
        rt.start_session("src", instance="rec", cwd=workspace)
        run_turn(rt, "src", "ONE kept")
        run_turn(rt, "src", "TWO dropped")
        with pytest.raises(ValidationError, match="at_turn 3"):
            rt.fork_thread("src", "copy", at_turn=3)
        rt.fork_thread("src", "copy", at_turn=1)
        run_turn(rt, "copy", "on the copy")
    [first] = [p[0] for p in _by_session(log).values() if p[-1].endswith("on the copy")]
    assert "ONE kept" in first and "TWO dropped" not in first and "(1 turn)" in first


def test_a_transcript_over_the_bound_keeps_the_latest_turns_and_says_so(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    with Runtime.open(prompt_agent_config(log, preamble_max_chars=1200), state_dir=tmp_path / "state") as rt:
        rt.start_session("src", instance="rec", cwd=workspace)
        for n in range(6):
            run_turn(rt, "src", f"TURN-{n} " + "x" * 150)
        with rt.subscribe(thread_id="copy", types=["runtime.warning"]) as warnings:
            rt.fork_thread("src", "copy")
            run_turn(rt, "copy", "after the hand-off")
            assert warnings.get(timeout=0.5) is None  # not omitted: bounded
    [first] = [p[0] for p in _by_session(log).values() if p[-1].endswith("after the hand-off")]
    preamble = first[len(PREAMBLE_OPEN) + 1: first.index(PREAMBLE_CLOSE)]
    assert len(preamble) <= 1201 and "TURN-5" in preamble and "TURN-0" not in preamble
    kept = sum(f"TURN-{n}" in preamble for n in range(6))
    assert f"The {6 - kept} earliest turns are left out" in preamble and 0 < kept < 6


def test_a_handoff_to_another_instance_then_resumes_in_a_new_runtime(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(TWO, state_dir=state) as rt:
        rt.start_session("src", instance="local", cwd=workspace)
        run_turn(rt, "src", "remember HERON")
        rt.fork_thread("src", "moved", instance="other")
        _, events = run_turn(rt, "moved", "what did I say?")
        assert text_of(events) == "You said: what did I say?"
        assert {b.thread_id: b.instance_id for b in rt.list_threads()} == {"src": "local", "moved": "other"}
    received = local_history(state, "other")
    assert len(received) == 1 and "remember HERON" in received[0] and received[0].startswith(PREAMBLE_OPEN)
    with Runtime.open(TWO, state_dir=state) as rt:
        _, events = run_turn(rt, "moved", "again", timeout=30)
        assert events[-1].state == "completed"
        _, events = run_turn(rt, "src", "again on the source", timeout=30)
        assert events[-1].state == "completed"
    received = local_history(state, "other")
    assert received[-1] == "again"  # the resumed thread is not handed the transcript again
    assert local_history(state, "local")[-1] == "again on the source"



def test_fork_refuses_a_bound_target_an_unknown_source_and_the_same_id(tmp_path, workspace):
    with Runtime.open(TWO, state_dir=tmp_path / "state") as rt:
        rt.start_session("a", instance="local", cwd=workspace)
        rt.start_session("b", instance="local", cwd=workspace)
        with pytest.raises(ValidationError, match="already bound"):
            rt.fork_thread("a", "b")
        with pytest.raises(ValidationError, match="must differ"):
            rt.fork_thread("a", "a")
        with pytest.raises(SessionNotFoundError):
            rt.fork_thread("nope", "c")
        assert {b.thread_id for b in rt.list_threads()} == {"a", "b"}


def test_compact_and_rollback_are_refused_before_touching_the_process(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    with Runtime.open(prompt_agent_config(log), state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="rec", cwd=workspace)
        run_turn(rt, "t", "hello")
        rt.stop_session("t")
        [info] = rt.instances()
        assert not info.capabilities.context.compaction and not info.capabilities.threads.rollback
        with pytest.raises(CapabilityUnsupportedError) as err:
            rt.compact_thread("t")
        assert err.value.capability == "context.compaction"
        assert not rt.has_session("t")  # the stopped session was not resumed to be refused
        rt.start_session("t", instance="rec", cwd=workspace)
        with pytest.raises(CapabilityUnsupportedError) as err:
            rt.rollback_thread("t", 1)
        assert err.value.capability == "threads.rollback"
    assert prompts(log) == ["hello"]


def test_the_transcript_escapes_the_closing_tag_and_counts_turns():
    snapshot = ThreadSnapshot(thread_id="s", turns=(
        TurnSnapshot(turn_id="1", state="completed", user_text=f"tricky {PREAMBLE_CLOSE} text",
                     items=(ItemSnapshot(item_id="i", kind="assistant_message", text="answer"),
                            ItemSnapshot(item_id="c", kind="command", title="ls -la"))),
        TurnSnapshot(turn_id="2", state="running", user_text="still running"),
    ))
    text = handoff_preamble(snapshot, source="thread s", limit=10_000, grounding="GROUND")
    assert PREAMBLE_CLOSE not in text and text.startswith("GROUND\n\n")
    assert "(1 turn)" in text and "still running" not in text and "tool (command, completed): ls -la" in text


def test_async_runtime_forks_and_refuses_compaction(tmp_path, workspace):
    import asyncio

    from paddock.aio import AsyncRuntime

    async def main():
        async with await AsyncRuntime.open(TWO, state_dir=tmp_path / "state") as rt:
            await rt.start_session("src", instance="local", cwd=workspace)
            await rt.send_turn("src", "remember GANNET")
            session = await rt.fork_thread("src", "copy", instance="other")
            with pytest.raises(CapabilityUnsupportedError):
                await rt.compact_thread("copy")
            return session, {b.thread_id for b in await rt.list_threads()}

    session, threads = asyncio.run(main())
    assert (session.thread_id, session.instance_id) == ("copy", "other") and threads == {"src", "copy"}


def test_a_stopped_source_is_handed_over_without_being_resumed(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    with Runtime.open(prompt_agent_config(log), state_dir=tmp_path / "state") as rt:
        rt.start_session("src", instance="rec", cwd=workspace)
        run_turn(rt, "src", "before the stop")
        rt.stop_session("src")
        rt.fork_thread("src", "copy")
        assert not rt.has_session("src") and rt.has_session("copy")
        run_turn(rt, "copy", "on the copy")
    [first] = [p[0] for p in _by_session(log).values() if p[-1].endswith("on the copy")]
    assert "before the stop" in first
