"""Approval rules through ``paddock serve`` (RemoteRuntime): the config's rules and a thread's own
rules (passed over HTTP) decide on the server; an unmatched request waits for a person, whose
answer is audited with the surface it came from (``api``, ``cli``)."""

from __future__ import annotations

import pytest

from paddock.contract import ApprovalRule, RuleMatch

pytestmark = pytest.mark.timeout(120)

CONFIG = """
[[runtime.approval_rules]]
match = { program = ["touch", "declined.txt"] }
decision = "decline"

[instances.local]
driver = "local"
"""


def _turn(rt, text, on_request=None):
    with rt.subscribe(thread_id="t") as sub:
        turn = rt.send_turn("t", text)
        events = []
        while True:
            event = sub.get(timeout=30)
            assert event is not None, [e.type for e in events]
            events.append(event)
            if event.type == "request.opened" and on_request is not None:
                on_request(event)
            if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                return events


def _resolved(events):
    (done,) = [e for e in events if e.type == "request.resolved"]
    return done


def test_rules_decide_on_the_server(make_server, capsys):
    from paddock.cli import main

    served = make_server("unix", CONFIG)
    ws = served.workspace
    with served.remote() as rt:
        rules = [ApprovalRule(match=RuleMatch(program=("touch", "accepted.txt")), decision="accept")]
        rt.start_session("t", instance="local", cwd=ws, runtime_mode="approval-required", approval_rules=rules)

        done = _resolved(_turn(rt, "@run touch accepted.txt"))
        assert (done.decision, done.decided_by, done.rule_index) == ("accept", "rule", 0)
        assert (ws / "accepted.txt").exists()

        done = _resolved(_turn(rt, "@run touch declined.txt"))
        assert (done.decision, done.decided_by, done.rule_index) == ("decline", "rule", 1)
        assert not (ws / "declined.txt").exists()

        done = _resolved(_turn(rt, "@run touch asked.txt",
                               on_request=lambda e: rt.respond_to_request("t", e.request_id, "decline")))
        assert (done.decision, done.decided_by, done.surface) == ("decline", "person", "api")
        assert not (ws / "asked.txt").exists()

        def from_the_cli(event):
            assert main(["approve", "t", event.request_id, "yes", "--state-dir", str(served.state)]) == 0

        done = _resolved(_turn(rt, "@run touch approved.txt", on_request=from_the_cli))
        assert (done.decision, done.decided_by, done.surface) == ("accept", "person", "cli")
        assert (ws / "approved.txt").exists()
