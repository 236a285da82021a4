"""The conformance scenario ``20-confinement`` with the local agent (and, live, a pinned CLI)."""

from __future__ import annotations

import os
import sys

import pytest

from paddock.supervisors import landlock_abi, set_landlock_probe
from paddock.testing._conformance import live_target, local_target, run_target

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(not sys.platform.startswith("linux") or landlock_abi() < 6, reason="needs Landlock ABI 6+")]


def test_the_local_agent_is_refused_by_the_kernel(tmp_path) -> None:
    [case] = run_target(local_target(), tmp_path, only=("20-confinement",)).cases
    assert case.result == "pass", case
    assert case.reason.startswith("refused by the kernel (Landlock ABI")


_OPEN = ("read server.token, read another instance's credentials, wrote into the state dir, "
         "signalled the host")


def test_the_local_agent_unconfined_does_every_access(tmp_path) -> None:
    target = local_target()
    target.config["confinement"] = "none"
    [case] = run_target(target, tmp_path, only=("20-confinement",)).cases
    assert case.result == "n/a" and (case.reason or "").endswith(_OPEN), case


@pytest.mark.live
@pytest.mark.parametrize("kind", ["claude", "codex", "gemini", "opencode"])
def test_a_pinned_cli_unconfined_does_every_access(kind, tmp_path) -> None:
    """The live case above can fail: with ``confinement = "none"`` the same command, run by the
    same agent against the same scripted model, reads, writes and signals."""
    target = live_target(kind, scenarios=("20-confinement",))
    if isinstance(target, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(target, pytrace=False)
        pytest.skip(target)
    target.config["confinement"] = "none"
    [case] = run_target(target, tmp_path, only=("20-confinement",)).cases
    assert case.result == "n/a" and (case.reason or "").endswith(_OPEN), case


def test_an_unconfined_instance_is_not_applicable(tmp_path) -> None:
    set_landlock_probe(lambda: 0)
    try:
        [case] = run_target(local_target(), tmp_path, only=("20-confinement",)).cases
    finally:
        set_landlock_probe(None)
    assert case.result == "n/a" and "not confined" in (case.reason or "")


@pytest.mark.live
@pytest.mark.parametrize("kind", ["claude", "codex", "gemini", "opencode", "qwen", "claude-acp", "copilot", "codex-acp", "acp-registry"])
def test_a_pinned_cli_is_refused_by_the_kernel(kind, tmp_path) -> None:
    target = live_target(kind, scenarios=("20-confinement",))
    if isinstance(target, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(target, pytrace=False)
        pytest.skip(target)
    [case] = run_target(target, tmp_path, only=("20-confinement",)).cases
    assert case.result == "pass", case
