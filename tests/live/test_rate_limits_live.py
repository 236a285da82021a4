"""Live: ``account.rate-limits.updated`` from the pinned codex and claude (issue 39). The scripted
model server's ``rate_limits`` scenario answers with the account's window in the headers each CLI
reads (Codex's ``x-codex-primary-*``, which it reports as ``account/rateLimits/updated``;
Anthropic's unified ``anthropic-ratelimit-unified-*``, which Claude Code reports as a
``rate_limit_event``, for a claude.ai login only: the claude instance here logs in with an OAuth
token instead of an API key). A plain answer carries no window (codex sends nothing for it,
claude at most its status)."""

from __future__ import annotations

import time

import pytest

from paddock import Runtime
from paddock.testing import ModelServer

from tests.runtime.test_usage_limits import until

from .test_host_handoff import _instance, proxied  # noqa: F401  (proxied: a fixture)

pytestmark = [pytest.mark.live, pytest.mark.timeout(240)]


@pytest.mark.parametrize("driver", ["codex", "claude"])
def test_the_agent_reports_the_accounts_window(driver, tmp_path, proxied):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ModelServer(workspace=workspace, log_path=tmp_path / "requests.jsonl") as server:
        instance = _instance(driver, tmp_path, server, proxied)
        if driver == "claude":  # Claude Code reads the unified window for a claude.ai login only
            instance["env"] = {k: v for k, v in instance["env"].items() if k != "ANTHROPIC_API_KEY"}
            instance["env"]["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-paddock-live-test"
        with Runtime.open({"instances": {"agent": instance}}, state_dir=tmp_path / "state") as rt:
            rt.start_session("t", instance="agent", cwd=str(workspace), runtime_mode="full-access", timeout=90)
            with rt.subscribe(thread_id="t") as sub:
                rt.send_turn("t", "say hi SCENARIO:text", timeout=60)
                plain = until(sub, lambda e: e.type == "turn.completed", 90)
                rt.send_turn("t", "count me SCENARIO:rate_limits", timeout=60)
                counted = until(sub, lambda e: e.type == "turn.completed", 90)
    # Without the headers: nothing from codex; from claude at most its status, with no window.
    assert not [e for e in plain if e.type == "account.rate-limits.updated" and e.limits["windows"]]
    [update] = [e for e in counted if e.type == "account.rate-limits.updated"]
    assert update.turn_id is None and update.limits["status"] == "allowed"
    [window] = update.limits["windows"]
    assert window["name"] == ("primary" if driver == "codex" else "five_hour") and window["window_minutes"] == 300
    assert time.time() + 3400 < window["resets_at"] <= time.time() + 3600  # the scenario's window: an hour ahead
    if driver == "codex":
        assert window["used_percent"] == 42.0
