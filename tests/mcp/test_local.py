"""MCP end to end on the local agent (offline): the ACP driver hands each server as an MCP relay,
the agent's ``@mcp`` directive calls a tool, and the session publishes what really happened."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import msgspec
import psutil
import pytest

from paddock.contract import McpHttpServer, McpStdioServer
from paddock.testing.mcp_server import read_record

from ..acp.conftest import etype
from ..acp.test_generic_sdk import echo_agent  # noqa: F401  (a fixture)
from .conftest import SECRET

pytest.importorskip("mcp", reason="the test MCP server needs the mcp SDK: pip install -e '.[test]'")


def _server(tmp_path: Path, name: str = "tools") -> McpStdioServer:
    return McpStdioServer(name=name, command=sys.executable,
                          args=("-m", "paddock.testing.mcp_server", "--record", str(tmp_path / "calls.jsonl")),
                          env={"PADDOCK_TEST_SECRET": SECRET})


def _cmdlines(*skip: int) -> str:
    """Every process's command line (the machine's, not only ours), but ``skip``."""
    out = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if proc.info["pid"] not in skip:
            out.append(" ".join(proc.info["cmdline"] or ()))
    return "\n".join(out)


def test_local_agent_calls_an_mcp_tool_through_the_relay(make, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    h = make()
    h.start(mcp_servers=(_server(tmp_path),), runtime_mode="full-access")
    caps = h.adapter.capabilities().tools
    assert caps.mcp is True and caps.mcp_transports == ("stdio",)
    res, events = h.turn('@mcp tools echo {"text": "hello relay"}\n@mcp tools env_has {"name": "PADDOCK_TEST_SECRET"}')
    assert SECRET not in _cmdlines()  # the relay and the server are alive: the session is
    types = [etype(e) for e in events]
    [status] = [e for e in events if etype(e) == "mcp.status.updated"]
    assert (status.server, status.status, status.tools) == ("tools", "connected", 3)
    relay_items = [e for e in events if etype(e) == "item.completed" and e.kind == "mcp_tool_call"]
    assert [(i.data["tool"], i.data["arguments"], i.text, i.status) for i in relay_items] == [
        ("echo", {"text": "hello relay"}, "echo: hello relay", "completed"),
        ("env_has", {"name": "PADDOCK_TEST_SECRET"}, "set", "completed"),
    ]
    assert all(i.turn_id == res.turn_id for i in relay_items)
    agent_items = [e for e in events if etype(e) == "item.completed" and e.kind == "tool_call"]
    assert [i.title for i in agent_items] == ["tools: echo", "tools: env_has"]
    assert types.index("mcp.status.updated") < types.index("turn.completed") and events[-1].state == "completed"
    assert [(c["tool"], c["arguments"]) for c in read_record(tmp_path / "calls.jsonl")] == [
        ("echo", {"text": "hello relay"}), ("env_has", {"name": "PADDOCK_TEST_SECRET"})]
    assert not [e for e in events if etype(e) == "runtime.warning"]
    assert SECRET not in msgspec.json.encode(events).decode()
    assert SECRET not in caplog.text
    assert types.index("session.started") < types.index("mcp.status.updated")  # reports wait for the open


def test_a_server_whose_command_does_not_exist_fails_with_the_reason(make, tmp_path):
    h = make()
    h.start(mcp_servers=(McpStdioServer(name="ghost", command="/nonexistent/mcp-xyz"), _server(tmp_path)),
            runtime_mode="full-access")
    res, events = h.turn("@mcp ghost echo {}\n@reply done")
    statuses = {e.server: e for e in events if etype(e) == "mcp.status.updated"}
    assert statuses["ghost"].status == "failed" and "cannot start '/nonexistent/mcp-xyz'" in statuses["ghost"].detail
    assert statuses["tools"].status == "connected"
    [warning] = [e for e in events if etype(e) == "runtime.warning"]
    assert warning.code == "mcp.not_connected" and "'ghost'" in warning.message and warning.turn_id == res.turn_id
    [failed] = [e for e in events if etype(e) == "item.completed" and e.kind == "tool_call"]
    assert failed.status == "failed"
    assert events[-1].state == "completed"
    # later turns do not warn again
    _, again = h.turn("@reply again")
    assert not [e for e in again if etype(e) == "runtime.warning"]


def test_an_http_server_reaches_an_agent_without_http_mcp_through_the_relay(make, tmp_path, http_server, caplog):
    caplog.set_level(logging.DEBUG)
    url, _, server_pid = http_server
    h = make()
    h.start(mcp_servers=(McpHttpServer(name="remote", url=url, headers={"X-Api-Key": SECRET}),),
            runtime_mode="full-access")
    assert "http" not in h.adapter.capabilities().tools.mcp_transports
    _, events = h.turn('@mcp remote echo {"text": "over http"}')
    assert SECRET not in _cmdlines(server_pid)
    [item] = [e for e in events if etype(e) == "item.completed" and e.kind == "mcp_tool_call"]
    assert item.text == "echo: over http" and item.status == "completed"
    assert [e.status for e in events if etype(e) == "mcp.status.updated"] == ["connected"]
    assert read_record(tmp_path / "calls.jsonl")[0]["arguments"] == {"text": "over http"}
    assert SECRET not in msgspec.json.encode(events).decode() and SECRET not in caplog.text


def test_servers_come_back_after_the_agent_is_killed_and_the_session_reloads(make, tmp_path):
    h = make()
    h.start(mcp_servers=(_server(tmp_path),), runtime_mode="full-access")
    h.turn('@mcp tools echo {"text": "one"}')
    agent = next(p for p in psutil.Process().children(recursive=True)
                 if "paddock.drivers.local" in " ".join(p.cmdline()))
    relays = [p for p in agent.children(recursive=True) if "paddock.drivers.mcp_relay" in " ".join(p.cmdline())]
    assert len(relays) == 1
    agent.kill()
    h.events_until(lambda e: etype(e) == "session.exited")
    res, events = h.turn('@mcp tools echo {"text": "two"}')
    assert [e.status for e in events if etype(e) == "mcp.status.updated"] == ["connected"]
    [item] = [e for e in events if etype(e) == "item.completed" and e.kind == "mcp_tool_call"]
    assert item.text == "echo: two" and item.turn_id == res.turn_id
    assert [c["arguments"]["text"] for c in read_record(tmp_path / "calls.jsonl")] == ["one", "two"]
    psutil.wait_procs(relays, timeout=10)
    assert not any(p.is_running() for p in relays)


def test_an_agent_that_drops_the_servers_gets_a_warning_naming_them(make, tmp_path, echo_agent):
    """The ACP SDK's example echo agent takes ``mcpServers`` and starts none of them (the failure
    Kiro shows): nothing is assumed, the first turn ends with ``not_connected`` and a warning."""
    h = make(driver="acp", binary=sys.executable, args=[str(echo_agent)])
    h.start(mcp_servers=(_server(tmp_path),))
    res, events = h.turn("Say hello.")
    assert events[-1].state == "completed"
    [status] = [e for e in events if etype(e) == "mcp.status.updated"]
    assert (status.server, status.status) == ("tools", "not_connected") and "never started" in status.detail
    [warning] = [e for e in events if etype(e) == "runtime.warning"]
    assert warning.code == "mcp.not_connected" and "'tools'" in warning.message and warning.turn_id == res.turn_id
    assert read_record(tmp_path / "calls.jsonl") == []
