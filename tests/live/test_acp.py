"""Live: each pinned ACP agent (gemini, qwen, claude-agent-acp, copilot) completes one prompt offline
over raw JSON-RPC 2.0 on stdio."""

from __future__ import annotations

import time

import pytest

from paddock.testing import build_offline_env

from ._stdio import StdioPeer
from .conftest import require_peer

pytestmark = pytest.mark.live

AGENTS = {
    # name: (extra args, authenticate methodId or None, model dialect)
    "gemini": (["--acp"], "gemini-api-key", "gemini"),
    "qwen": (["--acp"], "openai", "chat"),
    "claude-acp": ([], None, "anthropic"),
    "copilot": (["--acp"], None, "chat"),
}


def _refuse(msg: dict) -> dict:
    return {"error": {"code": -32601, "message": f"Method not found: {msg['method']}"}}


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_acp_agent_completes_one_prompt(name, tmp_path, workspace, model_server, tripwire):
    args, auth, dialect = AGENTS[name]
    peer, argv = require_peer(name)
    offline = build_offline_env(name, tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    agent = StdioPeer([*argv, *args], env=offline.env, cwd=str(workspace), on_request=_refuse)
    try:
        init = agent.request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
            "clientInfo": {"name": "paddock-live", "version": "0"}}, timeout=40)
        assert init["protocolVersion"] == 1
        if auth:
            agent.request("authenticate", {"methodId": auth})
        session = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []}, timeout=40)
        sid = session["sessionId"]
        t0 = time.monotonic()
        result = agent.request("session/prompt", {"sessionId": sid, "prompt": [
            {"type": "text", "text": "say hi SCENARIO:text"}]}, timeout=40)
        turn_seconds = time.monotonic() - t0
        assert result["stopReason"] == "end_turn", result
        chunks = [m["params"]["update"]["content"].get("text", "") for m in agent.messages
                  if m.get("method") == "session/update" and m["params"].get("sessionId") == sid
                  and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"]
        assert "".join(chunks) == "Hello from mock"
    finally:
        agent.close()
    turns = model_server.wait_for(timeout=5)
    assert [(c.dialect, c.scenario, c.status) for c in turns] == [(dialect, "text", 200)]
    assert not agent.guard.foreign, agent.guard.foreign
    print(f"{name} {peer.version}: turn {turn_seconds:.2f} s")
