"""The conformance suite over every driver and flavor (``paddock.testing._conformance``).

The local agent (no CLI, no model) and each pinned CLI (against the scripted model server) run
every scenario, one Runtime and one instance per driver shared by its scenarios; a missing CLI
skips with the install command (fails under PADDOCK_REQUIRE_PEERS=1).
Every case's events went through the grammar checker; a declared flag whose scenario fails, a
flag that is off but not refused, and every grammar violation fail the driver. Each driver's
wall time is printed (``-s``) for the CI note.
"""

from __future__ import annotations

import os
import time

import pytest

from paddock.drivers.local.agent._agent import NO_ATTACHMENTS_ENV
from paddock.testing._conformance import (
    LIVE_DRIVERS,
    SCENARIOS,
    encode_report,
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
                "08-kill-9", "09-sigstop", "12-concurrent-threads", "14a-mcp-tool-call", "14b-mcp-server-fails",
                "15-preamble", "16b-fork", "16d-image-attachment", "17-token-usage"):
        assert results[ran] == "pass", ran
    reasons = {c.scenario: c.reason for c in report.cases}
    assert reasons["06-steer"] == "turns.steer is off"
    # Refused before the process was touched (else the case would have failed), and said so.
    assert reasons["16c-compact"] == "context.compaction is off"
    # Where usage comes from, in the report; a usage limit is classified with its reset time.
    assert report.capabilities["usage"] == {"source": "per_turn", "cost": True}
    assert (results["19-usage-limit"], reasons["19-usage-limit"]) == ("pass", "usage_limit with resets_at")


def test_an_attachment_flag_that_is_off_is_refused_and_named(tmp_path):
    """The local agent told to declare no prompt blocks: scenario 16d's image turn is refused with
    ``CapabilityUnsupportedError`` (else the case would fail) and the ``n/a`` names the flag."""
    target = local_target()
    target.config = {**target.config, "env": {NO_ATTACHMENTS_ENV: "1"}}
    report = run_target(target, tmp_path, only=("16d-image-attachment",))
    assert not report.capabilities["turns"]["attachments"]
    [case] = [c for c in report.cases if c.scenario == "16d-image-attachment"]
    assert (case.result, case.reason) == ("n/a", "turns.attachments.image is off")


@pytest.mark.live
@pytest.mark.parametrize("kind", LIVE_DRIVERS)
def test_live_driver_conforms(kind, tmp_path):
    target = live_target(kind)
    if isinstance(target, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(target + " (PADDOCK_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(target)
    t0 = time.monotonic()
    report = run_target(target, tmp_path)
    print(f"\nconformance {kind}: {time.monotonic() - t0:.1f} s")
    save(kind, report, time.monotonic() - t0, target.secrets)
    assert target.secrets[0].encode() not in encode_report(report, target.secrets)
    failed = {c.scenario for c in report.cases if c.result == "fail"}
    known = {"07-resume"}
    if kind == "acp-registry" and failed and failed <= known:
        # An open bug of the registry's claude-code-acp 0.16.0, not a pass (the table keeps the
        # cell `fail`): it answers the turn about 0.5 s before Claude Code writes the session file,
        # so a runtime closed at once leaves nothing to load ("session/load ... Session not found"
        # in the new process; about one run in two). The runtime then starts fresh with
        # acp.resume_failed, as documented. Its fork is off (KNOWN_DEFECTS), so 16b hands off.
        pytest.xfail("acp-registry: " + "; ".join(sorted(failed)) + " (claude-code-acp 0.16.0's session-file race)")
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
