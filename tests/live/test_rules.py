"""Approval rules on the pinned CLIs against the scripted model server (conformance scenario
``03c-approval-rules``): a rule-accepted command runs without a person, a rule-declined one does
not run (checked on disk), an unmatched one asks a person. Nothing in the rules is per driver:
they decide on the ``request.opened`` subject each driver already builds."""

from __future__ import annotations

import os

import pytest

from paddock.testing._conformance import live_target, run_target

pytestmark = [pytest.mark.live, pytest.mark.timeout(600)]

SCENARIO = "03c-approval-rules"


@pytest.mark.parametrize("kind", ["claude", "codex", "gemini", "opencode", "copilot"])
def test_rules_decide_on_a_pinned_cli(kind, tmp_path):
    target = live_target(kind, scenarios=(SCENARIO,))
    if isinstance(target, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(target + " (PADDOCK_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(target)
    report = run_target(target, tmp_path, only=(SCENARIO,))
    [case] = [c for c in report.cases if c.scenario == SCENARIO]
    assert case.result == "pass", case
    assert case.reason.startswith("rule accept; rule decline; person decline"), case
