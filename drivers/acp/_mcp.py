"""MCP servers in ACP's wire shape (``mcpServers`` of ``session/new``, ``session/load`` and
``session/resume``).

ACP facts: a stdio server is ``{name, command, args, env}`` with ``env`` a list of
``{name, value}``; an HTTP or SSE server is ``{type: "http" | "sse", name, url, headers}`` with
``headers`` a list of ``{name, value}``, sent only to an agent whose ``mcpCapabilities`` say it
takes that transport. The session hands every server through the MCP relay, so what goes on the
wire is a stdio relay entry whose ``env`` is empty (secrets are in the relay's 0600 spec file).
"""

from __future__ import annotations

from typing import Any

from paddock.contract import McpServer, McpStdioServer

__all__ = ["wire_mcp_server"]


def wire_mcp_server(server: McpServer) -> dict[str, Any]:
    """``server`` as one entry of ACP's ``mcpServers``."""
    if isinstance(server, McpStdioServer):
        return {"name": server.name, "command": server.command, "args": list(server.args),
                "env": [{"name": k, "value": v} for k, v in server.env.items()]}
    return {"type": server.transport, "name": server.name, "url": server.url,
            "headers": [{"name": k, "value": v} for k, v in server.headers.items()]}
