"""Live: Codex app-server (JSON lines, no "jsonrpc" field) completes one turn offline."""

from __future__ import annotations

import time

import pytest

from paddock.testing import build_offline_env

from ._stdio import StdioPeer
from .conftest import require_peer

pytestmark = pytest.mark.live


def test_codex_app_server_completes_one_turn(tmp_path, workspace, model_server, tripwire):
    peer, argv = require_peer("codex")
    offline = build_offline_env("codex", tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    codex = StdioPeer([*argv, "app-server"], env=offline.env, cwd=str(workspace))
    try:
        init = codex.request("initialize", {"clientInfo": {"name": "paddock_live", "title": "live test", "version": "0"},
                                            "capabilities": {"experimentalApi": True}}, jsonrpc=False)
        assert f"/{peer.version} " in init["userAgent"]
        codex.send({"method": "initialized"})
        started = codex.request("thread/start", {"cwd": str(workspace), "approvalPolicy": "never",
                                                 "sandbox": "workspace-write"}, jsonrpc=False)
        thread_id = started["thread"]["id"]
        t0 = time.monotonic()
        turn = codex.request("turn/start", {"threadId": thread_id, "input": [
            {"type": "text", "text": "say hi SCENARIO:text", "text_elements": []}]}, jsonrpc=False)
        done = codex.wait_for(lambda m: m.get("method") == "turn/completed", timeout=30, what="turn/completed")
        turn_seconds = time.monotonic() - t0
        assert done["params"]["turn"]["id"] == turn["turn"]["id"]
        assert done["params"]["turn"]["status"] == "completed", done
        deltas = [m["params"]["delta"] for m in codex.messages if m.get("method") == "item/agentMessage/delta"]
        assert "".join(deltas) == "Hello from mock"
        warnings = [m for m in codex.messages if m.get("method") == "warning"]
        assert not warnings, warnings  # e.g. "Model metadata not found" means the catalog was ignored
    finally:
        codex.close()
    [call] = model_server.wait_for(timeout=5)
    assert call.dialect == "responses" and call.scenario == "text" and call.status == 200
    assert {"exec_command", "apply_patch"} <= set(call.tools_offered)
    assert call.headers["authorization"] == "Bearer paddock-mock-key"
    assert not codex.guard.foreign, codex.guard.foreign
    print(f"codex {peer.version}: turn {turn_seconds:.2f} s")
