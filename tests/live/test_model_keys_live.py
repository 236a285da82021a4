"""Live: the claude driver configured only with driver/endpoint/api_key/model (no binary, no env)
finds its pinned CLI and reaches the scripted model server, behind the tripwire proxy."""

from __future__ import annotations

import pytest

from paddock import Runtime

from .conftest import require_peer, turn_text

pytestmark = [pytest.mark.live, pytest.mark.timeout(90)]


def test_claude_with_only_the_model_keys(tmp_path, workspace, model_server, tripwire, monkeypatch):
    require_peer("claude")
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(key, tripwire.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    config = {"instances": {"c": {"driver": "claude", "endpoint": model_server.url + "/v1",
                                  "api_key": "sk-claude-live", "model": "claude-sonnet-4-5"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="c", cwd=str(workspace), runtime_mode="approval-required", timeout=60)
        text, end = turn_text(rt, "t", "say hi SCENARIO:text")
    assert end.state == "completed", end
    assert text == "Hello from mock"
    [call] = [c for c in model_server.model_calls() if c.kind == "turn"]
    assert call.dialect == "anthropic" and call.body["model"] == "claude-sonnet-4-5"
