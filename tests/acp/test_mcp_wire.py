"""ACP's side of MCP: the wire shape of ``mcpServers`` entries and the capability flags the
``initialize`` answer turns on (decoded from the agents' real answers' shape)."""

from __future__ import annotations

import msgspec

from paddock.contract import McpHttpServer, McpStdioServer
from paddock.drivers.acp import _wire as w
from paddock.drivers.acp._capabilities import base_capabilities, negotiate
from paddock.drivers.acp._mcp import wire_mcp_server
from paddock.drivers.acp.flavors import FLAVORS, OTHER_FLAVORS


def test_stdio_and_http_entries_have_acps_wire_shape():
    stdio = McpStdioServer(name="tools", command="/usr/bin/srv", args=("-x",), env={"K": "v"})
    http = McpHttpServer(name="remote", url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer t"},
                         transport="sse")
    assert wire_mcp_server(stdio) == {"name": "tools", "command": "/usr/bin/srv", "args": ["-x"],
                                      "env": [{"name": "K", "value": "v"}]}
    assert wire_mcp_server(http) == {"type": "sse", "name": "remote", "url": "http://127.0.0.1:9/mcp",
                                     "headers": [{"name": "Authorization", "value": "Bearer t"}]}


def _init(mcp: dict | None) -> w.InitializeResult:
    caps: dict = {"loadSession": True}
    if mcp is not None:
        caps["mcpCapabilities"] = mcp
    return msgspec.json.decode(msgspec.json.encode({"protocolVersion": 1, "agentCapabilities": caps}),
                               type=w.InitializeResult)


def test_mcp_is_off_until_the_agent_answered_and_then_lists_what_it_takes():
    base = base_capabilities(client_fs=False, client_terminal=False)
    assert base.tools.mcp is False and base.tools.mcp_transports == ()
    assert negotiate(base, _init({"http": True, "sse": True})).tools.mcp_transports == ("stdio", "http", "sse")
    plain = negotiate(base, _init(None)).tools
    assert plain.mcp is True and plain.mcp_transports == ("stdio",)


def test_flavor_facts_copilot_takes_no_stdio_and_kiro_ignores_mcp_servers():
    base = base_capabilities(client_fs=False, client_terminal=False)
    answered = negotiate(base, _init({"http": True, "sse": True}))
    copilot = FLAVORS["copilot"]
    assert copilot.mcp_stdio is False
    assert copilot.capability_overrides(answered).tools.mcp_transports == ("http", "sse")
    kiro = OTHER_FLAVORS["kiro"].capability_overrides(answered).tools
    assert kiro.mcp is False and kiro.mcp_transports == ()
