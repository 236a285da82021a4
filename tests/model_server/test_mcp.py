"""The MCP pieces of paddock.testing: the ``mcp`` scenario step picks the offered MCP tool in the
agent's own naming, and the test MCP server (a real process on the official SDK) records calls."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ._client import post_sse
from .test_anthropic import blocks

mcp = pytest.importorskip("mcp", reason="the test MCP server needs the mcp SDK: pip install -e '.[test]'")


def _body(tool_names, text):
    tools = [{"name": n, "input_schema": {"type": "object", "properties": {"text": {}}}} for n in tool_names]
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": True, "tools": tools,
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}


@pytest.mark.parametrize("offered", ["mcp__paddock-test__echo", "paddock-test_echo", "paddock_test__echo", "echo"])
def test_mcp_step_calls_the_offered_tool_in_any_naming(server, offered):
    _, _, events = post_sse(server.url, "/v1/messages", _body(["Bash", "echoes", offered], "SCENARIO:mcp_echo"))
    [block] = blocks(events)
    assert block["type"] == "tool_use" and block["name"] == offered
    assert json.loads(block["_json"]) == {"text": "ping from the model"}


def test_mcp_step_without_the_tool_says_so_in_text(server):
    _, _, events = post_sse(server.url, "/v1/messages", _body(["Bash", "echoes"], "SCENARIO:mcp_echo"))
    [block] = blocks(events)
    assert block["type"] == "text" and "no MCP tool 'echo' offered" in block["text"] and "echoes" in block["text"]


def test_test_server_records_calls_over_stdio(tmp_path):
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from paddock.testing.mcp_server import TOOL_NAMES, read_record

    record = tmp_path / "calls.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "paddock.testing.mcp_server", "--record", str(record)],
        env={"PADDOCK_TEST_SECRET": "s3cr3t-value"},
    )

    async def session():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = [t.name for t in (await s.list_tools()).tools]
                echoed = await s.call_tool("echo", {"text": "hi"})
                seen = await s.call_tool("env_has", {"name": "PADDOCK_TEST_SECRET"})
                return names, echoed.content[0].text, seen.content[0].text

    names, echoed, seen = anyio.run(session)
    assert tuple(names) == TOOL_NAMES and echoed == "echo: hi" and seen == "set"
    calls = read_record(record)
    assert [(c["tool"], c["arguments"]) for c in calls] == [("echo", {"text": "hi"}), ("env_has", {"name": "PADDOCK_TEST_SECRET"})]
    assert "s3cr3t-value" not in record.read_text()
    assert oct(record.stat().st_mode & 0o777) == "0o600"


def test_test_server_over_http_requires_its_header(tmp_path):
    import httpx

    record = tmp_path / "calls.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "paddock.testing.mcp_server", "--record", str(record), "--http",
         "--require-header", "Authorization=Bearer tok"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "0"}}}
        headers = {"accept": "application/json, text/event-stream"}
        assert httpx.post(url, json=init, headers=headers, timeout=10).status_code == 401
        ok = httpx.post(url, json=init, headers={**headers, "Authorization": "Bearer tok"}, timeout=10)
        assert ok.status_code == 200 and "paddock-test" in ok.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
