"""Approval rules on a real session (the local agent over ACP, approval-required): a rule-accepted
command runs without a person, a rule-declined one does not run (checked on disk), an unmatched
one asks; the audit on ``request.resolved``; the order of deciders (thread, instance, runtime,
host hook, person)."""

from __future__ import annotations

import threading
import time

import pytest

from paddock import Runtime
from paddock.contract import ApprovalRule, RuleMatch
from tests.runtime.conftest import run_turn

pytestmark = pytest.mark.timeout(120)

RULES = [
    {"match": {"program": ["touch", "accepted.txt"]}, "decision": "accept"},
    {"match": {"program": ["touch", "declined.txt"]}, "decision": "decline"},
]


def _config(runtime_rules=(), instance_rules=()):
    return {
        "runtime": {"approval_rules": list(runtime_rules)},
        "instances": {"local": {"driver": "local", "approval_rules": list(instance_rules)}},
    }


@pytest.fixture
def ws(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _resolved(events, request_id):
    return next(e for e in events if e.type == "request.resolved" and e.request_id == request_id)


def _opened(events):
    return [e for e in events if e.type == "request.opened"]


def test_a_rule_accepts_declines_or_leaves_it_to_a_person(tmp_path, ws):
    with Runtime.open(_config(runtime_rules=RULES), state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required")

        _, events = run_turn(rt, "t", "@run touch accepted.txt")
        (opened,) = _opened(events)
        done = _resolved(events, opened.request_id)
        assert (done.decision, done.decided_by, done.rule_index) == ("accept", "rule", 0)
        assert done.rule is not None and '"touch"' in done.rule and done.reason
        assert (ws / "accepted.txt").exists()

        _, events = run_turn(rt, "t", "@run touch declined.txt")
        (opened,) = _opened(events)
        done = _resolved(events, opened.request_id)
        assert (done.decision, done.decided_by, done.rule_index) == ("decline", "rule", 1)
        assert not (ws / "declined.txt").exists()

        # A compound whose second part no rule accepts: a person decides (here: declines).
        answered = []

        def person(event):
            answered.append(event.request_id)
            rt.respond_to_request("t", event.request_id, "decline", surface="cli")

        _, events = run_turn(rt, "t", "@run touch accepted.txt && touch asked.txt", on_request=person)
        (opened,) = _opened(events)
        assert answered == [opened.request_id]
        done = _resolved(events, opened.request_id)
        assert (done.decision, done.decided_by, done.surface, done.rule) == ("decline", "person", "cli", None)
        assert not (ws / "asked.txt").exists()


def test_thread_rules_come_before_instance_and_runtime_rules(tmp_path, ws):
    decline_all = [{"match": {"kind": "command"}, "decision": "decline"}]
    accept_touch = [{"match": {"program": ["touch"]}, "decision": "accept"}]
    with Runtime.open(_config(runtime_rules=accept_touch, instance_rules=decline_all),
                      state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required")
        _, events = run_turn(rt, "t", "@run touch a.txt")
        assert _resolved(events, _opened(events)[0].request_id).decision == "decline"  # instance before runtime
        assert not (ws / "a.txt").exists()

        rules = [ApprovalRule(match=RuleMatch(program=("touch", "b.txt")), decision="accept")]
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required", approval_rules=rules)
        _, events = run_turn(rt, "t", "@run touch b.txt")
        done = _resolved(events, _opened(events)[0].request_id)
        assert (done.decision, done.rule_index) == ("accept", 0)
        assert (ws / "b.txt").exists()

    # A new host process: the thread's own rules are persisted with it.
    with Runtime.open(_config(instance_rules=decline_all), state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required")
        _, events = run_turn(rt, "t", "@run touch b.txt")
        assert _resolved(events, _opened(events)[0].request_id).decision == "accept"


def test_the_host_hook_decides_after_the_rules_and_before_a_person(tmp_path, ws):
    seen = []

    def hook(request):
        seen.append((request.request_id, threading.current_thread().name))
        command = request.subject.command if request.subject is not None else ""
        if "hook-accepts" in command:
            return "accept"
        if "slow" in command:
            time.sleep(3)
            return "accept"
        return None

    with Runtime.open(_config(runtime_rules=RULES), state_dir=tmp_path / "state", approval_hook=hook,
                      approval_hook_timeout=1.0) as rt:
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required")
        _, events = run_turn(rt, "t", "@run touch accepted.txt")
        assert _resolved(events, _opened(events)[0].request_id).decided_by == "rule"
        assert seen == []  # a rule decided: the hook is not asked

        _, events = run_turn(rt, "t", "@run touch hook-accepts.txt")
        done = _resolved(events, _opened(events)[0].request_id)
        assert (done.decision, done.decided_by) == ("accept", "host")
        assert (ws / "hook-accepts.txt").exists()
        assert seen and not seen[-1][1].startswith("paddock-dispatch")

        # The hook says nothing: a person decides.
        _, events = run_turn(rt, "t", "@run touch person.txt",
                             on_request=lambda e: rt.respond_to_request("t", e.request_id, "accept"))
        done = _resolved(events, _opened(events)[0].request_id)
        assert (done.decided_by, done.surface) == ("person", "api")

        # The hook overruns its timeout: the request waits for a person; the late answer is dropped.
        started = time.monotonic()
        _, events = run_turn(rt, "t", "@run touch slow.txt",
                             on_request=lambda e: threading.Timer(
                                 1.5, rt.respond_to_request, ("t", e.request_id, "decline")).start())
        done = _resolved(events, _opened(events)[0].request_id)
        assert (done.decision, done.decided_by) == ("decline", "person")
        assert time.monotonic() - started < 10
        warnings = [e for e in events if e.type == "runtime.warning" and e.code == "approval.hook_timeout"]
        assert len(warnings) == 1
        time.sleep(2)  # the hook's late answer must not reach the agent
        assert not (ws / "slow.txt").exists()


@pytest.mark.parametrize("toml, where", [
    ('[[runtime.approval_rules]]\nmatch = { program = ["git", "status"] }\ndecision = "accept"\n'
     '[[runtime.approval_rules]]\nmatch = { progam = ["rm"] }\ndecision = "decline"\n',
     "[runtime] key 'approval_rules[1].match'"),
    ('[instances.a]\ndriver = "local"\n[[instances.a.approval_rules]]\nmatch = { path = "docs/[a" }\ndecision = "accept"\n',
     "[instances.a] key 'approval_rules[0].match'"),
    ('[instances.a]\ndriver = "local"\n[[instances.a.approval_rules]]\nmatch = { tool = "x" }\ndecision = "accept_for_session"\n',
     "[instances.a] key 'approval_rules[0].decision'"),
])
def test_config_check_names_the_file_table_and_index_of_a_bad_rule(tmp_path, capsys, toml, where):
    from paddock.cli import main

    config = tmp_path / "p.toml"
    config.write_text(toml)
    assert main(["config", "check", "--config", str(config), "--state-dir", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert str(config) in err and where in err, err


def test_an_async_hook_runs_on_the_host_loop(tmp_path, ws):
    import asyncio

    from paddock.aio import AsyncRuntime

    async def main():
        loop = asyncio.get_running_loop()
        seen = []

        async def hook(request):
            seen.append(asyncio.get_running_loop() is loop)
            await asyncio.sleep(0)
            return "decline"

        async with await AsyncRuntime.open(_config(), state_dir=tmp_path / "state", approval_hook=hook) as rt:
            await rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required")
            events = rt.subscribe(thread_id="t")
            turn = await rt.send_turn("t", "@run touch hooked.txt")
            got = []
            async for event in events:
                got.append(event)
                if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                    await events.aclose()
                    break
            done = next(e for e in got if e.type == "request.resolved")
            assert (done.decision, done.decided_by) == ("decline", "host")
            assert seen == [True]
            assert not (ws / "hooked.txt").exists()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_requests_resolved_lists_recent_decisions_with_who_decided(tmp_path, ws, capsys):
    from paddock.cli import main

    state = tmp_path / "state"
    with Runtime.open(_config(runtime_rules=RULES), state_dir=state) as rt:
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required")
        run_turn(rt, "t", "@run touch accepted.txt")
        run_turn(rt, "t", "@run touch person.txt",
                 on_request=lambda e: rt.respond_to_request("t", e.request_id, "decline", surface="dashboard"))
    capsys.readouterr()
    assert main(["requests", "--resolved", "--state-dir", str(state)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["thread", "request", "answer", "decided"]
    rule_row = next(i for i, line in enumerate(lines) if "rule #0" in line)
    assert "accept" in lines[rule_row] and "touch accepted.txt" in lines[rule_row]
    assert any('rule: {"match":{"program":["touch","accepted.txt"]}' in line for line in lines[rule_row:])
    assert any("decline" in line and "person (dashboard)" in line and "touch person.txt" in line for line in lines)
    assert main(["requests", "--resolved", "--limit", "1", "--json", "--state-dir", str(state)]) == 0
    (only,) = capsys.readouterr().out.splitlines()
    assert '"decided_by":"person"' in only and '"surface":"dashboard"' in only


def test_the_same_subject_after_accept_for_session_is_accepted_by_the_session(tmp_path, ws):
    # The local agent does not remember allow_always: it asks again; the session answers.
    with Runtime.open(_config(), state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required")
        _, events = run_turn(rt, "t", "@run touch again.txt",
                             on_request=lambda e: rt.respond_to_request("t", e.request_id, "accept_for_session"))
        assert _resolved(events, _opened(events)[0].request_id).decided_by == "person"
        _, events = run_turn(rt, "t", "@run touch again.txt")
        done = _resolved(events, _opened(events)[0].request_id)
        assert (done.decision, done.decided_by) == ("accept", "session")
        asked = []
        _, events = run_turn(rt, "t", "@run touch other.txt", on_request=lambda e: (
            asked.append(e.request_id), rt.respond_to_request("t", e.request_id, "decline")))
        assert asked  # another subject still asks


def test_rules_check_says_which_rule_decides_and_why(tmp_path, capsys):
    from paddock.cli import main

    config = tmp_path / "p.toml"
    config.write_text('[[runtime.approval_rules]]\nmatch = { program = ["git", "status"] }\ndecision = "accept"\n'
                      '[instances.a]\ndriver = "local"\n[[instances.a.approval_rules]]\nmatch = { program = ["rm"] }\n'
                      'decision = "decline"\n[[instances.a.approval_rules]]\nmatch = { path = "docs/**" }\n'
                      'decision = "accept"\n')

    def check(*argv):
        capsys.readouterr()
        assert main(["rules", "check", "--config", str(config), "--cwd", str(tmp_path), *argv]) == 0
        return capsys.readouterr().out

    assert main(["config", "check", "--config", str(config), "--state-dir", str(tmp_path / "s")]) == 0
    assert "rules:    2 approval rules of its own" in capsys.readouterr().out
    out = check("git status && rm -rf ~")
    assert "decides: decline, by rule #0 ([instances.a] approval_rules[0])" in out and "why: part" in out
    out = check("git status --short")
    assert "decides: accept, by rule #2 ([runtime] approval_rules[0])" in out
    assert "ambiguous" in check("git status $HOME") and "decides: no rule" in check("git status $HOME")
    assert "decides: accept, by rule #1" in check("--path", "docs/a.md")
    assert "decides: no rule" in check("--path", "../docs/a.md")
    assert "decides: no rule" in check("--tool", "github/list_issues")


def test_a_hook_that_raises_or_answers_nonsense_leaves_the_request_to_a_person(tmp_path, ws):
    def hook(request):
        if "raises" in request.subject.command:
            raise RuntimeError("the host's bug")
        return "maybe"

    with Runtime.open(_config(), state_dir=tmp_path / "state", approval_hook=hook) as rt:
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required")
        for name in ("raises.txt", "nonsense.txt"):
            answer = threading.Timer  # a person answers once the hook has failed (its warning is first)
            _, events = run_turn(rt, "t", f"@run touch {name}", on_request=lambda e: answer(
                0.5, rt.respond_to_request, ("t", e.request_id, "decline")).start())
            warning = next(e for e in events if e.type == "runtime.warning")
            assert warning.code == "approval.hook_failed"
            assert ("RuntimeError" in warning.message) == (name == "raises.txt")
            done = _resolved(events, _opened(events)[0].request_id)
            assert (done.decision, done.decided_by) == ("decline", "person")


def test_a_malformed_thread_rule_is_refused_naming_its_index(tmp_path, ws):
    from paddock.contract import ValidationError

    with Runtime.open(_config(), state_dir=tmp_path / "state") as rt:
        good = {"match": {"program": ["git", "status"]}, "decision": "accept"}
        with pytest.raises(ValidationError, match=r"approval_rules\[1\]\.match") as caught:
            rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required",
                             approval_rules=[good, {"match": {"path": "a/[b"}, "decision": "accept"}])
        assert "never closed" in str(caught.value)
        assert rt.list_sessions() == []  # refused before anything started
