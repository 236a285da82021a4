"""The native-MCP pieces without a CLI: the shared readback (drivers/_mcp_native.py), each
driver's server entries and tool names, and the scripted model's view of Codex's namespaced MCP
tools."""

from __future__ import annotations

import json
import os
import stat
import subprocess

from paddock.contract import TO_BE_STAMPED, McpHttpServer, McpStdioServer
from paddock.drivers._mcp_native import MCP_NOT_CONNECTED, McpReadback, stdio_command
from paddock.drivers.claude._command import build_argv, write_mcp_config
from paddock.drivers.claude._config import ClaudeConfig
from paddock.drivers.claude._tools import mcp_call_data
from paddock.drivers.codex import _wire as w
from paddock.drivers.codex._mcp import SSE_REFUSED, mcp_config, report_list
from paddock.drivers.opencode._mcp import mcp_entry, mcp_tool_of, tool_counts
from paddock.testing._responses import Responses

STDIO = McpStdioServer(name="a", command="srv", args=("-x",), env={"K": "secret-v"}, cwd="/tmp")
HTTP = McpHttpServer(name="web", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer h"})
SSE = McpHttpServer(name="old", url="http://127.0.0.1:1/sse", transport="sse")


def _tags(events):
    return [(type(e).__struct_config__.tag, getattr(e, "server", None), getattr(e, "status", None)) for e in events]


def test_readback_reports_changes_once_and_warns_once_after_the_first_turn():
    r = McpReadback(TO_BE_STAMPED, (STDIO, HTTP))
    assert _tags(r.report("a", "connected", tools=3)) == [("mcp.status.updated", "a", "connected")]
    assert r.report("a", "connected") == []  # same status, the known count kept
    assert r.tools["a"] == 3
    assert r.report("not-ours", "failed") == []
    assert _tags(r.absent(["a"])) == [("mcp.status.updated", "web", "not_connected")]
    [warning] = r.first_turn_ended("turn-1")
    assert warning.code == MCP_NOT_CONNECTED and warning.detail == {"server": "web", "status": "not_connected"}
    assert r.first_turn_ended("turn-2") == []
    r.restarted()
    assert _tags(r.report("a", "connected", tools=3)) == [("mcp.status.updated", "a", "connected")]


def test_absent_keeps_a_failure_reason():
    r = McpReadback(TO_BE_STAMPED, (SSE,))
    r.report("old", "failed", detail=SSE_REFUSED)
    assert r.absent([]) == [] and r.detail["old"] == SSE_REFUSED


def test_stdio_command_runs_the_server_in_its_cwd(tmp_path):
    server = McpStdioServer(name="p", command="pwd", cwd=str(tmp_path))
    command, args = stdio_command(server)
    assert subprocess.run([command, *args], capture_output=True, text=True).stdout.strip() == str(tmp_path)
    assert stdio_command(McpStdioServer(name="p", command="srv", args=("1",))) == ("srv", ["1"])


def test_claude_config_file_is_private_and_argv_has_no_secret(tmp_path):
    path = write_mcp_config(tmp_path / "mcp" / "c.json", (STDIO, HTTP, SSE))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(tmp_path / "mcp").st_mode) == 0o700
    servers = json.loads(open(path).read())["mcpServers"]
    assert servers["a"]["env"] == {"K": "secret-v"} and servers["a"]["command"] == "/bin/sh"
    assert servers["web"] == {"type": "http", "url": HTTP.url, "headers": {"Authorization": "Bearer h"}}
    assert servers["old"]["type"] == "sse"
    argv = build_argv("claude", ClaudeConfig(driver="claude"), permission_mode="default", model=None, session_id="s", resume=False,
                      mcp_config=path)
    assert argv[-3:] == ["--mcp-config", path, "--strict-mcp-config"] and "secret-v" not in " ".join(argv)


def test_claude_mcp_call_data_uses_the_session_server_names():
    assert mcp_call_data("mcp__a__b__echo", {"t": 1}, ("a__b", "a")) == {
        "server": "a__b", "tool": "echo", "arguments": {"t": 1}, "input": {"t": 1}}


def test_codex_entries_and_status_list():
    entries, refused = mcp_config((STDIO, HTTP, SSE))
    assert entries["a"] == {"command": "srv", "args": ["-x"], "env": {"K": "secret-v"}, "cwd": "/tmp"}
    assert entries["web"] == {"url": HTTP.url, "http_headers": {"Authorization": "Bearer h"}}
    assert refused == ["old"]
    r = McpReadback(TO_BE_STAMPED, (STDIO, HTTP))
    events, starting = report_list(r, [w.McpServerStatus(name="a", runtimeStatus="starting"),
                                       w.McpServerStatus(name="web", runtimeStatus="failed", toolsError="refused")], None)
    assert starting and _tags(events) == [("mcp.status.updated", "web", "failed")]
    events, starting = report_list(r, [w.McpServerStatus(name="a", runtimeStatus="connected",
                                                         tools={"x": {}, "y": {}})], None)
    assert not starting and r.tools["a"] == 2


def test_opencode_entries_and_tool_names():
    assert mcp_entry(STDIO) == {"type": "local", "command": ["srv", "-x"], "environment": {"K": "secret-v"},
                                "cwd": "/tmp"}
    assert mcp_entry(HTTP) == {"type": "remote", "url": HTTP.url, "headers": {"Authorization": "Bearer h"},
                               "oauth": False}
    assert mcp_tool_of("paddock-test_echo", ("paddock-test",)) == ("paddock-test", "echo")
    assert mcp_tool_of("bash", ("paddock-test",)) is None
    assert tool_counts(["bash", "a_x", "a_y", "web_z"], ("a", "web")) == {"a": 2, "web": 1}


def test_the_scripted_model_sees_and_calls_codex_namespaced_tools():
    body = {"model": "m", "stream": True, "tools": [
        {"type": "function", "name": "exec_command", "parameters": {}},
        {"type": "namespace", "name": "mcp__paddock_test", "tools": [
            {"type": "function", "name": "echo", "parameters": {"properties": {"text": {}}}}]}],
        "input": [{"type": "message", "role": "user", "content": "SCENARIO:mcp_echo"}]}
    call = Responses.parse(body, "/v1/responses")
    assert [t.qualified for t in call.tools] == ["exec_command", "mcp__paddock_test__echo"]
