"""The conformance suite over every driver and flavor (``paddock.testing._conformance``).

The local agent runs every scenario (no CLI, no model). Each pinned CLI runs the live selection
against the scripted model server, one Runtime and one instance per driver shared by its
scenarios; a missing CLI skips with the install command (fails under PADDOCK_REQUIRE_PEERS=1).
Every case's events went through the grammar checker; a declared flag whose scenario fails, a
flag that is off but not refused, and every grammar violation fail the driver. Each driver's
wall time is printed (``-s``) for the CI note.
"""

from __future__ import annotations

import os
import time

import pytest

from paddock.testing._conformance import (
    LIVE_DRIVERS,
    SCENARIOS,
    encode_report,
    live_scenarios,
    live_target,
    local_target,
    run_target,
)

from .table import save

pytestmark = pytest.mark.timeout(300)


def _assert_conforms(report) -> None:
    failed = [(c.scenario, c.reason) for c in report.cases if c.result == "fail"]
    assert not failed, failed
    assert [c.scenario for c in report.cases] == list(SCENARIOS)
    for case in report.cases:
        assert case.reason, case  # every pass says what held, every n/a why


def test_local_agent_conforms_on_every_scenario(tmp_path):
    t0 = time.monotonic()
    report = run_target(local_target(), tmp_path)
    print(f"\nconformance local: {time.monotonic() - t0:.1f} s")
    save("local", report, time.monotonic() - t0)
    _assert_conforms(report)
    results = {c.scenario: c.result for c in report.cases}
    # The local agent declares what these need: they ran, they did not become n/a.
    for ran in ("01-simple-turn", "03b-approval-command", "04-runtime-modes", "05-interrupt", "07-resume",
                "08-kill-9", "09-sigstop", "12-concurrent-threads", "17-token-usage"):
        assert results[ran] == "pass", ran
    assert {c.scenario: c.reason for c in report.cases}["06-steer"] == "turns.steer is off"


@pytest.mark.live
@pytest.mark.parametrize("kind", LIVE_DRIVERS)
def test_live_driver_conforms(kind, tmp_path):
    target = live_target(kind, scenarios=live_scenarios(kind))
    if isinstance(target, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(target + " (PADDOCK_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(target)
    t0 = time.monotonic()
    report = run_target(target, tmp_path)
    print(f"\nconformance {kind}: {time.monotonic() - t0:.1f} s")
    save(kind, report, time.monotonic() - t0, target.secrets)
    assert target.secrets[0].encode() not in encode_report(report, target.secrets)
    _assert_conforms(report)


@pytest.mark.live
def test_codex_acp_never_runs_a_command_unasked(tmp_path):
    """codex-acp asks before every command and edit in approval-required (Codex's "untrusted"
    policy in a read-only sandbox), before commands in auto-accept-edits, and again after a
    thread is restarted from full-access: a declined ``touch`` leaves no file on disk."""
    scenarios = ("03a-approval-file-edit", "03b-approval-command", "04-runtime-modes", "04b-mode-change")
    target = live_target("codex-acp", scenarios=scenarios)
    if isinstance(target, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(target, pytrace=False)
        pytest.skip(target)
    report = run_target(target, tmp_path, only=scenarios)
    cases = {c.scenario: c for c in report.cases}
    for name in scenarios:
        assert cases[name].result == "pass", cases[name]
    assert cases["04-runtime-modes"].reason == (
        "approval-required: honoured; auto-accept-edits: honoured; full-access: honoured")
