"""The MCP relay as a real process between the official MCP SDK's client and the test MCP server:
JSON-RPC passes through unchanged, the session's listener gets the handshake, the tool list and
every call, HTTP and SSE servers are bridged to stdio, and secrets stay out of argv."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paddock.contract import ItemCompleted, ItemStarted, McpHttpServer, McpStatusUpdated, McpStdioServer, RuntimeWarningEvent
from paddock.drivers.mcp_relay import McpRelays, McpReports
from paddock.testing.mcp_server import read_record

from .conftest import SECRET

pytest.importorskip("mcp", reason="the test MCP server needs the mcp SDK: pip install -e '.[test]'")

IDENTITY = {"driver": "local", "instance_id": "i", "thread_id": "t"}


def _relays(tmp_path: Path, *servers) -> tuple[McpRelays, "queue.Queue[McpReports]"]:
    inbox: queue.Queue[McpReports] = queue.Queue()
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return McpRelays(tuple(servers), str(home), IDENTITY, inbox.put), inbox


def _drain(relays: McpRelays, inbox, until, *, turn_id="turn-1", timeout=20.0):
    """Fold delivered reports into events until ``until(events)`` holds."""
    events = []
    deadline = time.monotonic() + timeout
    while not until(events):
        left = deadline - time.monotonic()
        assert left > 0, f"timed out; events so far: {events}"
        try:
            events += relays.handle(inbox.get(timeout=left), turn_id)
        except queue.Empty:
            pass
    return events


def _stdio_server(tmp_path: Path, **kw) -> McpStdioServer:
    return McpStdioServer(name="tools", command=sys.executable,
                          args=("-m", "paddock.testing.mcp_server", "--record", str(tmp_path / "calls.jsonl")), **kw)


def _sdk_session(handed: McpStdioServer, calls):
    """Run the official SDK client against the relay command; returns (tool names, results)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=handed.command, args=list(handed.args), env=dict(os.environ))

    async def run():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = [t.name for t in (await s.list_tools()).tools]
                out = []
                for tool, args in calls:
                    result = await s.call_tool(tool, args)
                    out.append((result.is_error, result.content[0].text))
                return names, out

    return anyio.run(run)


def test_a_stdio_server_through_the_relay_reports_handshake_tools_and_calls(tmp_path):
    relays, inbox = _relays(tmp_path, _stdio_server(tmp_path, env={"PADDOCK_TEST_SECRET": SECRET}))
    try:
        [handed] = relays.handed()
        assert handed.name == "tools" and handed.command == sys.executable and not handed.env
        spec = Path(handed.args[-1])
        assert oct(spec.stat().st_mode & 0o777) == "0o600" and SECRET in spec.read_text()
        assert SECRET not in " ".join(handed.args)
        names, results = _sdk_session(handed, [("echo", {"text": "hi"}), ("env_has", {"name": "PADDOCK_TEST_SECRET"}),
                                              ("add", {"a": "x", "b": 2})])
        assert names == ["echo", "add", "env_has"]
        assert results[0] == (False, "echo: hi") and results[1] == (False, "set") and results[2][0] is True
        events = _drain(relays, inbox, lambda ev: sum(isinstance(e, ItemCompleted) for e in ev) == 3)
    finally:
        relays.close()
    [status] = [e for e in events if isinstance(e, McpStatusUpdated)]
    assert (status.server, status.status, status.tools) == ("tools", "connected", 3)
    started = [e for e in events if isinstance(e, ItemStarted)]
    done = [e for e in events if isinstance(e, ItemCompleted)]
    assert [e.kind for e in started + done] == ["mcp_tool_call"] * 6
    assert started[0].data == {"server": "tools", "tool": "echo", "arguments": {"text": "hi"}}
    assert done[0].status == "completed" and done[0].text == "echo: hi" and done[0].data["duration_ms"] > 0
    assert done[2].status == "failed" and done[2].data["error"]
    assert [c["tool"] for c in read_record(tmp_path / "calls.jsonl")] == ["echo", "env_has"]
    assert not os.path.exists(relays.folder)


def test_a_missing_command_is_reported_failed_and_the_relay_exits(tmp_path):
    relays, inbox = _relays(tmp_path, McpStdioServer(name="ghost", command="/nonexistent/mcp-server-xyz"))
    try:
        [handed] = relays.handed()
        proc = subprocess.Popen([handed.command, *handed.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        out, err = proc.communicate(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n', timeout=20)
        assert proc.returncode == 1 and out == b"" and b"cannot start" in err
        events = _drain(relays, inbox, lambda ev: any(isinstance(e, McpStatusUpdated) for e in ev))
        [status] = events
        assert status.status == "failed" and "cannot start '/nonexistent/mcp-server-xyz'" in status.detail
        assert "No such file" in status.detail
        end = relays.turn_ended("turn-1")
    finally:
        relays.close()
    [warning] = end
    assert isinstance(warning, RuntimeWarningEvent) and warning.code == "mcp.not_connected" and "'ghost'" in warning.message


def test_a_server_the_agent_never_started_is_not_connected_with_a_warning(tmp_path):
    relays, _ = _relays(tmp_path, _stdio_server(tmp_path))
    try:
        relays.handed()
        events = relays.turn_ended("turn-1")
        assert relays.turn_ended("turn-2") == []  # only after the first turn
    finally:
        relays.close()
    status, warning = events
    assert (status.server, status.status) == ("tools", "not_connected") and "never started" in status.detail
    assert warning.code == "mcp.not_connected" and "'tools'" in warning.message


@pytest.mark.parametrize("http_server", ["http", "sse"], indirect=True)
def test_an_http_server_is_bridged_to_stdio_with_its_headers(tmp_path, http_server):
    url, transport, _ = http_server
    server = McpHttpServer(name="remote", url=url, transport=transport, headers={"X-Api-Key": SECRET})
    relays, inbox = _relays(tmp_path, server)
    try:
        [handed] = relays.handed()
        assert SECRET not in " ".join(handed.args)
        names, results = _sdk_session(handed, [("echo", {"text": "over http"})])
        assert "echo" in names and results == [(False, "echo: over http")]
        events = _drain(relays, inbox, lambda ev: any(isinstance(e, ItemCompleted) for e in ev))
    finally:
        relays.close()
    assert [(e.status, e.tools) for e in events if isinstance(e, McpStatusUpdated)] == [("connected", 3)]
    assert [c["arguments"] for c in read_record(tmp_path / "calls.jsonl")] == [{"text": "over http"}]


def test_an_http_server_refusing_the_headers_is_failed_and_the_agent_gets_an_error(tmp_path, http_server):
    url, _, _ = http_server
    relays, inbox = _relays(tmp_path, McpHttpServer(name="remote", url=url, headers={"X-Api-Key": "wrong"}))
    try:
        [handed] = relays.handed()
        proc = subprocess.Popen([handed.command, *handed.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        proc.stdin.write(b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}\n')
        proc.stdin.flush()
        answer = proc.stdout.readline()
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
        proc.stdout.close()
        assert b'"id":7' in answer and b"HTTP 401" in answer
        [status] = _drain(relays, inbox, lambda ev: any(isinstance(e, McpStatusUpdated) for e in ev))
    finally:
        relays.close()
    assert status.status == "failed" and "HTTP 401" in status.detail


def test_an_http_serving_relay_fronts_a_stdio_server_for_http_only_agents(tmp_path):
    import anyio
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    relays, inbox = _relays(tmp_path, _stdio_server(tmp_path, env={"PADDOCK_TEST_SECRET": SECRET}),
                            McpStdioServer(name="ghost", command="/nonexistent/mcp-server-xyz"))
    try:
        served = relays.served(dict(os.environ), timeout=20)
        [front] = served  # the ghost's relay could not start its server: left out, reported failed
        assert front.name == "tools" and front.url.startswith("http://127.0.0.1:")
        token = front.headers["Authorization"]
        assert SECRET not in front.url and SECRET not in token
        assert httpx.post(front.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 401

        async def run():
            async with httpx.AsyncClient(headers=dict(front.headers)) as client:
                async with streamable_http_client(front.url, http_client=client) as (read, write, *_):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        names = [t.name for t in (await s.list_tools()).tools]
                        result = await s.call_tool("echo", {"text": "over the front"})
                        return names, result.content[0].text

        names, text = anyio.run(run)
        assert names == ["echo", "add", "env_has"] and text == "echo: over the front"
        events = _drain(relays, inbox, lambda ev: any(isinstance(e, ItemCompleted) for e in ev)
                        and sum(isinstance(e, McpStatusUpdated) for e in ev) == 2)
    finally:
        relays.close()
    statuses = {e.server: e for e in events if isinstance(e, McpStatusUpdated)}
    assert statuses["tools"].status == "connected" and statuses["ghost"].status == "failed"
    assert [c["arguments"] for c in read_record(tmp_path / "calls.jsonl")] == [{"text": "over the front"}]


def test_the_stdio_relay_needs_only_the_core_dependencies():
    code = ("import sys, paddock.drivers.mcp_relay._relay; "
            "print(sorted(m for m in ('pykka', 'psutil', 'httpx', 'mcp', 'paddock.actors') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.strip() == "[]"
