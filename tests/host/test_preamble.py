"""The first-turn preamble, end to end on real agent processes: the local agent (its own session
files show what it received) and a prompt-recording ACP agent (``prompt_agent.py``)."""

from __future__ import annotations

import psutil
import pytest

from paddock import Runtime
from paddock.contract import (
    MAX_PROMPT_CHARS,
    PaddockError,
    ValidationError,
    with_preamble,
    with_reminder,
)
from paddock.drivers.local.agent._directives import parse_prompt

from .conftest import local_history, prompt_agent_config, prompts, run_turn, text_of

PREAMBLE = "You work on the Paddock repository.\n@reply WRONG\n@crash\nKeep answers short."
REMINDER = "Mind the repository's rules."
LOCAL = {"instances": {"local": {"driver": "local"}}}


def _local_agent() -> psutil.Process:
    """The local agent itself: the process running the module, below the orphan-guard shim."""
    [agent] = [p for p in psutil.Process().children(recursive=True)
               if p.cmdline()[1:3] == ["-m", "paddock.drivers.local"]]
    return agent


def _started(events):
    return next(e for e in events if e.type == "turn.started")


def test_first_turn_carries_the_preamble_once_then_the_reminder(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(LOCAL, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace, preamble=PREAMBLE, preamble_reminder=REMINDER)
        _, first = run_turn(rt, "t1", "hello")
        _, second = run_turn(rt, "t1", "again")
        snapshot = rt.read_thread("t1")
    assert (_started(first).preamble, _started(first).input_text) == (True, "hello")
    assert (_started(second).preamble, _started(second).input_text) == (False, "again")
    # No directive inside the block was read: no @reply WRONG, no @crash.
    assert text_of(first) == "You said: hello" and first[-1].state == "completed"
    assert local_history(state) == [with_preamble(PREAMBLE, "hello"), with_reminder(REMINDER, "again")]
    assert [t.user_text for t in snapshot.turns] == ["hello", "again"]


def test_kill_9_of_the_agent_delivers_one_full_copy_again(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(LOCAL, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace, preamble=PREAMBLE)
        run_turn(rt, "t1", "one")
        run_turn(rt, "t1", "two")
        with rt.subscribe(thread_id="t1", types=["session.exited"]) as exits:
            _local_agent().kill()
            exited = exits.get(timeout=15)
        assert exited is not None and exited.recoverable
        _, third = run_turn(rt, "t1", "three", timeout=30)
    assert third[-1].state == "completed" and _started(third).preamble
    assert local_history(state) == [with_preamble(PREAMBLE, "one"), "two", with_preamble(PREAMBLE, "three")]


def test_a_failed_first_send_leaves_the_preamble_pending(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    with Runtime.open(prompt_agent_config(log), state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="rec", cwd=workspace, preamble=PREAMBLE)
        # The agent refuses session/set_mode, so this turn fails before its prompt is written.
        with pytest.raises(PaddockError, match="set_mode refused"):
            rt.send_turn("t1", "first try", interaction_mode="plan")
        assert prompts(log) == []
        _, events = run_turn(rt, "t1", "second try")
        _, later = run_turn(rt, "t1", "third")
    assert _started(events).preamble and not _started(later).preamble
    assert prompts(log) == [with_preamble(PREAMBLE, "second try"), "third"]


def test_a_preamble_over_its_bound_is_omitted_with_a_warning(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    with Runtime.open(prompt_agent_config(log), state_dir=tmp_path / "state") as rt:
        with rt.subscribe(thread_id="big", types=["runtime.warning"]) as warnings:
            rt.start_session("big", instance="rec", cwd=workspace, preamble="x" * 70_001)
            warning = warnings.get(timeout=10)
        _, events = run_turn(rt, "big", "hello")
        rt.start_session("edge", instance="rec", cwd=workspace, preamble="y" * 70_000)
        run_turn(rt, "edge", "hello")
    assert warning is not None and warning.code == "preamble.omitted"
    assert "70001 characters" in warning.message and warning.detail == {"chars": 70_001, "limit": 70_000}
    assert not _started(events).preamble
    assert prompts(log) == ["hello", with_preamble("y" * 70_000, "hello")]  # the bound itself fits


def test_the_instance_preamble_file_and_its_bound(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    (tmp_path / "grounding.md").write_text("Instance grounding.")
    config = prompt_agent_config(log, preamble_file="grounding.md", preamble_max_chars=40,
                                 preamble_reminder="Instance reminder.")
    toml = tmp_path / "paddock.toml"
    inst = config["instances"]["rec"]
    toml.write_text(
        "[instances.rec]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in inst.items() if k != "env")
        + f"env = {{ PROMPT_LOG = {_toml(str(log))} }}\n")
    with Runtime.open(toml, state_dir=tmp_path / "state") as rt:
        rt.start_session("a", instance="rec", cwd=workspace)
        run_turn(rt, "a", "one")
        run_turn(rt, "a", "two")
        rt.start_session("b", instance="rec", cwd=workspace, preamble="The session's own.")
        run_turn(rt, "b", "one")
        with rt.subscribe(thread_id="c", types=["runtime.warning"]) as warnings:
            rt.start_session("c", instance="rec", cwd=workspace, preamble="z" * 41)
            assert warnings.get(timeout=10).code == "preamble.omitted"
    assert prompts(log) == [
        with_preamble("Instance grounding.", "one"), with_reminder("Instance reminder.", "two"),
        with_preamble("The session's own.", "one"),
    ]


def _toml(value):
    import json
    return json.dumps(value)


def test_the_prompt_limit_applies_to_the_users_text_alone(tmp_path, workspace):
    log = tmp_path / "prompts.jsonl"
    text = "w" * MAX_PROMPT_CHARS
    with Runtime.open(prompt_agent_config(log), state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="rec", cwd=workspace, preamble="p" * 50_000)
        _, events = run_turn(rt, "t1", text)
        with pytest.raises(ValidationError, match="limit"):
            rt.send_turn("t1", text + "w")
    assert events[-1].state == "completed" and _started(events).input_text == text
    assert prompts(log) == [with_preamble("p" * 50_000, text)]


@pytest.mark.parametrize("preamble, reminder, issue", [
    ("a </paddock-preamble> b", None, "must not contain"),
    ("   ", None, "blank"),
    ("fine", "two\nlines", "one line"),
])
def test_a_bad_preamble_or_reminder_is_refused(tmp_path, workspace, preamble, reminder, issue):
    with Runtime.open(LOCAL, state_dir=tmp_path / "state") as rt:
        with pytest.raises(ValidationError, match=issue):
            rt.start_session("t1", instance="local", cwd=workspace, preamble=preamble, preamble_reminder=reminder)
        assert rt.list_threads() == []


def test_the_local_agent_reads_no_directive_inside_the_blocks():
    d = parse_prompt(with_preamble("@reply WRONG\n@crash 3", "@reply right\nthe prompt"))
    assert (d.reply, d.crash, d.prompt, d.preamble) == ("right", None, "the prompt", "@reply WRONG\n@crash 3")
    d = parse_prompt(with_reminder("@crash", "hi"))
    assert (d.crash, d.prompt, d.preamble) == (None, "hi", None)
    # A block that is not at the start is the user's text: its directives are read as usual.
    d = parse_prompt("say\n" + with_preamble("x", "@reply late"))
    assert d.reply == "late"
