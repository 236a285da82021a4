"""The local agent's own MCP client, driven over raw ACP pipes with the test MCP server given
directly in ``mcpServers`` (no relay): ``@mcp`` calls the tool, announces it as a ``tool_call``,
asks first, and reports the result; bad input fails cleanly."""

from __future__ import annotations

import sys

import pytest

from paddock.testing.mcp_server import read_record

pytest.importorskip("mcp", reason="the test MCP server needs the mcp SDK: pip install -e '.[test]'")

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def _session(agent, workspace, record, *extra):
    server = {"name": "tools", "command": sys.executable,
              "args": ["-m", "paddock.testing.mcp_server", "--record", str(record)],
              "env": [{"name": "PADDOCK_TEST_SECRET", "value": "x"}]}
    resp = agent.response(agent.request("session/new", {"cwd": str(workspace), "mcpServers": [server, *extra]}),
                          timeout=30)
    return resp["result"]["sessionId"]


def _allow(agent, count: int) -> None:
    """Answer the next ``count`` permission requests ``allow_once``, each once."""
    answered: set = set()
    for _ in range(count):
        _, req = agent.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "session/request_permission"
                                and m["id"] not in answered)
        assert req["params"]["toolCall"]["kind"] == "other"
        answered.add(req["id"])
        agent.answer(req["id"], ALLOW)


def test_initialize_says_stdio_only(agent):
    [init] = [m for m in agent.messages if isinstance(m, dict) and "agentCapabilities" in m.get("result", {})]
    assert init["result"]["agentCapabilities"]["mcpCapabilities"] == {"http": False, "sse": False}


def test_mcp_directive_calls_the_tool_after_asking(agent, workspace, tmp_path):
    record = tmp_path / "calls.jsonl"
    sid = _session(agent, workspace, record)
    rid = agent.prompt(sid, '@mcp tools echo {"text": "hi"}\n@mcp tools env_has {"name": "PADDOCK_TEST_SECRET"}')
    _allow(agent, 2)
    resp = agent.response(rid, timeout=30)
    assert resp["result"]["stopReason"] == "end_turn"
    ups = [u for u in agent.updates(sid) if u.get("toolCallId", "").startswith("mcp-")]
    started = [u for u in ups if u["sessionUpdate"] == "tool_call"]
    assert [(u["title"], u["rawInput"]) for u in started] == [
        ("tools: echo", {"text": "hi"}), ("tools: env_has", {"name": "PADDOCK_TEST_SECRET"})]
    done = [u for u in ups if u.get("status") == "completed"]
    assert [u["content"][0]["content"]["text"] for u in done] == ["echo: hi", "set"]
    assert done[0]["rawOutput"]["content"][0]["text"] == "echo: hi"
    assert [c["tool"] for c in read_record(record)] == ["echo", "env_has"]


def test_unknown_server_and_tool_fail_the_call_not_the_turn(agent, workspace, tmp_path):
    ghost = {"name": "ghost", "command": "/nonexistent/mcp-xyz", "args": [], "env": []}
    sid = _session(agent, workspace, tmp_path / "calls.jsonl", ghost)
    rid = agent.prompt(sid, "@mcp ghost echo {}\n@mcp tools nope {}\n@reply done")
    _allow(agent, 2)
    assert agent.response(rid, timeout=30)["result"]["stopReason"] == "end_turn"
    failed = [u for u in agent.updates(sid) if u.get("status") == "failed"]
    assert "no connected MCP server 'ghost'" in failed[0]["content"][0]["content"]["text"]
    assert failed[1]["toolCallId"].startswith("mcp-") and len(failed) == 2
    assert any(b"'ghost' not connected" in line for line in agent.stderr)


@pytest.mark.parametrize("line", ["@mcp tools", "@mcp tools echo {not json", "@mcp tools echo [1]"])
def test_a_malformed_mcp_directive_fails_the_prompt_with_invalid_params(agent, workspace, line):
    sid = agent.new_session(workspace)
    resp = agent.response(agent.prompt(sid, line))
    assert resp["error"]["code"] == -32602 and "@mcp" in resp["error"]["message"]
