"""Live: Claude Code in stream-json mode completes one turn offline."""

from __future__ import annotations

import time

import pytest

from paddock.testing import build_offline_env

from ._stdio import StdioPeer
from .conftest import require_peer

pytestmark = pytest.mark.live


def test_claude_stream_json_completes_one_turn(tmp_path, workspace, model_server, tripwire):
    peer, argv = require_peer("claude")
    offline = build_offline_env("claude", tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    claude = StdioPeer([*argv, "--output-format", "stream-json", "--verbose", "--system-prompt", "",
                        "--input-format", "stream-json", f"--model={offline.model}"],
                       env=offline.env, cwd=str(workspace))
    try:
        claude.send({"type": "control_request", "request_id": "req_1",
                     "request": {"subtype": "initialize", "hooks": None}})
        ready = claude.wait_for(lambda m: m.get("type") == "control_response", timeout=30, what="initialize response")
        assert ready["response"]["subtype"] == "success" and ready["response"]["request_id"] == "req_1"
        t0 = time.monotonic()
        claude.send({"type": "user", "message": {"role": "user", "content": "say hi SCENARIO:text"},
                     "parent_tool_use_id": None, "session_id": ""})
        result = claude.wait_for(lambda m: m.get("type") == "result", timeout=30, what="result")
        turn_seconds = time.monotonic() - t0
        assert result["is_error"] is False and result["subtype"] == "success", result
        assert result["result"] == "Hello from mock"
        init = next(m for m in claude.messages if m.get("type") == "system" and m.get("subtype") == "init")
        assert init["claude_code_version"] == peer.version and init["session_id"] == result["session_id"]
    finally:
        claude.close()
    turns = model_server.wait_for(timeout=5)
    assert [(c.dialect, c.scenario, c.status) for c in turns] == [("anthropic", "text", 200)]
    assert "Bash" in turns[0].tools_offered and turns[0].headers["x-api-key"] == "paddock-mock-key"
    assert not claude.guard.foreign, claude.guard.foreign
    print(f"claude {peer.version}: turn {turn_seconds:.2f} s")
