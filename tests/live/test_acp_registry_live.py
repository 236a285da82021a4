"""Live: an ACP registry agent by id (``acp-registry``, ``agent = "claude-code-acp"``: the
registry's npx distribution ``@zed-industries/claude-code-acp@0.16.0``, installed with
``paddock peers install --registry claude-code-acp``) completes turns against the scripted model
server, behind the tripwire proxy. A registry agent gets no per-agent mapping: its own variables
go in ``env``."""

from __future__ import annotations

import os

import pytest

from paddock import Runtime
from paddock.drivers.acp import load_registry, registry_command

from .conftest import Tripwire, turn_text

pytestmark = [pytest.mark.live, pytest.mark.timeout(120)]

AGENT = "claude-code-acp"


def _require_installed() -> None:
    resolved = registry_command(load_registry().agent(AGENT), {"PATH": os.environ.get("PATH", os.defpath)})
    if isinstance(resolved, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(resolved + " (PADDOCK_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(resolved)


def test_a_registry_agent_by_id_completes_turns_offline(tmp_path, workspace, model_server, monkeypatch, request):
    _require_installed()
    tripwire = Tripwire()  # not the fixture: one known refused attempt is allowed (below)
    request.addfinalizer(tripwire.close)
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(key, tripwire.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    env = {"ANTHROPIC_BASE_URL": model_server.url, "ANTHROPIC_API_KEY": "sk-registry-live",
           "ANTHROPIC_MODEL": "claude-sonnet-4-5", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_ERROR_REPORTING": "1"}
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    config = {"instances": {"reg": {"driver": "acp-registry", "agent": AGENT, "env": env}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        [info] = rt.instances()
        assert info.status == "available", info.reason
        rt.start_session("t", instance="reg", cwd=str(workspace), runtime_mode="approval-required", timeout=60)
        for prompt in ("say hi SCENARIO:text", "and again SCENARIO:text"):
            text, end = turn_text(rt, "t", prompt)
            assert end.state == "completed", end
            assert text.endswith("Hello from mock")
    tripwire.close()
    calls = [c for c in model_server.model_calls() if c.kind == "turn"]
    assert len(calls) == 2 and "Hello from mock" in str(calls[-1].body)
    # Known: the Claude Code bundled with this older registry version asks api.anthropic.com
    # whether metrics are enabled whatever ANTHROPIC_BASE_URL says; the tripwire refuses it and
    # the turns go on. Nothing else may leave 127.0.0.1.
    assert set(tripwire.hits) <= {"CONNECT api.anthropic.com:443 HTTP/1.1"}, tripwire.hits
