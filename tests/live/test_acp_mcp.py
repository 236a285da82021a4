"""Live: MCP through every pinned ACP flavor (gemini, qwen, claude-acp, copilot, codex-acp)
against the scripted model server. The session is given the test MCP server (stdio, with a
secret in its env), the test server over streamable HTTP (answering 401 without a secret
header: bridged by the relay whatever the agent takes) and a server whose command does not
exist; each is handed to the agent as an MCP relay. The model asks for the ``echo`` tool in the agent's own naming (``SCENARIO:mcp_echo``).

Until ``start_session(mcp_servers=...)`` reaches the facade, the adapter is built here the way
the instance table builds it (its home, environment and model keys) and driven directly.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import msgspec
import psutil
import pytest

from paddock._instances._isolation import build_env, instance_home
from paddock.contract import McpHttpServer, McpStdioServer, SendTurnInput, StartSessionInput
from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext, model_access
from paddock.testing import McpCall, ModelServer
from paddock.testing.mcp_server import read_record
from tests.adapter_harness import hub  # noqa: F401  (a fixture)

from .conftest import require_peer
from .test_acp_flavors import KEY, MODELS

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]
pytest.importorskip("mcp", reason="the test MCP server needs the mcp SDK: pip install -e '.[test]'")

SECRET = "s3cr3t-live-mcp-4711"
EXPECTED = "echo: ping from the model"
ECHO = McpCall(tool="echo", server="tools", arguments={"text": "ping from the model"})
# Qwen Code defers MCP tools: the system prompt lists them by name ("Deferred Tools") and the
# model first fetches one with tool_search ("select:<name>"), then calls it.
SCRIPTS = {
    "qwen": {"scenarios": {"mcp_echo": [McpCall(tool="tool_search", arguments={"query": "select:mcp__tools__echo"}),
                                        ECHO]}},
}


def _script(flavor: str) -> dict:
    return SCRIPTS.get(flavor, {"scenarios": {"mcp_echo": [ECHO]}})


def _cmdlines(*skip: int) -> str:
    """Every process's command line on the machine, but ``skip`` (the test server's own argv
    carries the header it requires)."""
    return "\n".join(" ".join(p.info["cmdline"] or ()) for p in psutil.process_iter(["pid", "cmdline"])
                     if p.info["pid"] not in skip)


@pytest.fixture
def remote(tmp_path):
    """The test MCP server over streamable HTTP, answering 401 without ``X-Api-Key: SECRET``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "paddock.testing.mcp_server", "--record", str(tmp_path / "remote.jsonl"), "--http",
         "--require-header", f"X-Api-Key={SECRET}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        yield McpHttpServer(name="remote", url=proc.stdout.readline().strip(), headers={"X-Api-Key": SECRET}), proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


@pytest.mark.parametrize("flavor", sorted(MODELS))
def test_the_model_calls_an_mcp_tool_through_the_relay(flavor, tmp_path, hub, remote):  # noqa: F811
    require_peer(flavor)
    http_server, http_pid = remote
    spec = BUILT_IN_DRIVERS[flavor]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    record = tmp_path / "calls.jsonl"
    tools = McpStdioServer(name="tools", command=sys.executable,
                           args=("-m", "paddock.testing.mcp_server", "--record", str(record)),
                           env={"PADDOCK_TEST_SECRET": SECRET})
    ghost = McpStdioServer(name="ghost", command=str(tmp_path / "no-such-mcp-server"))
    with ModelServer(_script(flavor), workspace=workspace, log_path=tmp_path / "model-requests.jsonl") as server:
        config = msgspec.convert({"driver": flavor, "endpoint": server.url, "api_key": KEY, "model": MODELS[flavor]},
                                 spec.config_type)
        home = instance_home(tmp_path / "state", "agent", None)
        ctx = InstanceContext(instance_id="agent", driver=flavor, config=config, home=str(home),
                              env=build_env(home=home), state_dir=str(tmp_path / "state"), hub=hub,
                              access=model_access(config, os.environ))
        adapter = spec.create(ctx)
        try:
            with hub.subscribe(thread_id="m1") as sub:
                adapter.start_session(StartSessionInput(thread_id="m1", cwd=str(workspace), runtime_mode="full-access",
                                                        mcp_servers=(tools, http_server, ghost)), timeout=90)
                caps = adapter.capabilities().tools
                # copilot rejects stdio servers from the client: it gets HTTP-serving relays
                assert caps.mcp and ("stdio" in caps.mcp_transports) == (flavor != "copilot"), caps
                turn = adapter.send_turn(SendTurnInput(thread_id="m1", text="use the echo tool SCENARIO:mcp_echo"),
                                         timeout=60)
                events, leaked = [], False
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    event = sub.get(timeout=max(0.0, deadline - time.monotonic()))
                    assert event is not None, f"no turn.completed; saw {[e.type for e in events]}"
                    events.append(event)
                    if event.type == "item.started" and event.kind == "mcp_tool_call":
                        leaked = SECRET in _cmdlines(http_pid)  # mid-turn: agent, relays and servers alive
                    if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                        break
        finally:
            adapter.close(timeout=20)
    types = [e.type for e in events]
    assert events[-1].state == "completed", events[-1]
    statuses = {e.server: e for e in events if e.type == "mcp.status.updated"}
    assert statuses["tools"].status == "connected" and statuses["tools"].tools == 3, statuses
    assert types.index("mcp.status.updated") < types.index("turn.completed")
    assert statuses["remote"].status == "connected" and statuses["remote"].tools == 3, statuses  # its header got there
    assert statuses["ghost"].status in ("failed", "not_connected"), statuses
    assert any(e.type == "runtime.warning" and e.code == "mcp.not_connected" and "'ghost'" in e.message for e in events)
    items = [e for e in events if e.type == "item.completed" and e.kind == "mcp_tool_call"]
    assert [(i.data["tool"], i.data["arguments"], i.text) for i in items] == [
        ("echo", {"text": "ping from the model"}, EXPECTED)], items
    assert [(c["tool"], c["arguments"]) for c in read_record(record)] == [("echo", {"text": "ping from the model"})]
    follow = [c for c in server.model_calls() if EXPECTED in str(c.body)]
    assert follow, "the model's next request does not carry the tool's result"
    assert not leaked and SECRET not in msgspec.json.encode(events).decode()
