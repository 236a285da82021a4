"""A Codex thread's MCP servers: the per-thread ``config.mcp_servers`` of ``thread/start`` and
``thread/resume`` (verified with the pinned app-server 0.171.0: the servers start for that thread
only, report ``mcpServer/startupStatus/updated`` with its ``threadId`` and are listed by
``mcpServerStatus/list {threadId}``; the app-server stops them when it exits), and the mapping of
what it reports onto :class:`~paddock.drivers._mcp_native.McpReadback`.

The config travels over the app-server's stdin (JSON-RPC), so ``env`` and ``http_headers``
values are in no file and no command line. Codex takes stdio and streamable HTTP servers; its
MCP client has no legacy SSE transport, so an SSE server is refused (reported ``failed``).
"""

from __future__ import annotations

from collections.abc import Iterable

from paddock.contract import EventBase, JsonObject, JsonValue, McpServer, McpStdioServer
from paddock.drivers._mcp_native import McpReadback

from . import _wire as w

__all__ = ["SSE_REFUSED", "mcp_config", "report_list", "report_startup"]

SSE_REFUSED = "Codex takes stdio and streamable HTTP MCP servers, not SSE"


def mcp_config(servers: Iterable[McpServer]) -> tuple[JsonObject, list[str]]:
    """``({name: entry}, refused names)``: stdio ``{command, args, env, cwd}``, HTTP ``{url,
    http_headers}``; an SSE server is left out and named in the second list."""
    entries: JsonObject = {}
    refused: list[str] = []
    for server in servers:
        if isinstance(server, McpStdioServer):
            entry: JsonObject = {"command": server.command, "args": list[JsonValue](server.args),
                                 "env": dict[str, JsonValue](server.env)}
            if server.cwd is not None:
                entry["cwd"] = server.cwd
        elif server.transport == "http":
            entry = {"url": server.url, "http_headers": dict[str, JsonValue](server.headers)}
        else:
            refused.append(server.name)
            continue
        entries[server.name] = entry
    return entries, refused


def report_startup(readback: McpReadback, name: str, status: str, error: str | None,
                   turn_id: str | None) -> list[EventBase]:
    """``mcpServer/startupStatus/updated``: ``ready`` -> connected, ``failed`` -> failed (its
    error), ``cancelled`` -> not_connected; ``starting`` says nothing yet."""
    if status == "ready":
        return readback.report(name, "connected", turn_id=turn_id)
    if status == "failed":
        return readback.report(name, "failed", detail=error or "Codex could not start it", turn_id=turn_id)
    if status == "cancelled":
        return readback.report(name, "not_connected", detail="Codex cancelled its start", turn_id=turn_id)
    return []


def report_list(readback: McpReadback, data: Iterable[w.McpServerStatus],
                turn_id: str | None) -> tuple[list[EventBase], bool]:
    """``mcpServerStatus/list`` entries -> events, and whether a server of the session is still
    starting. ``runtimeStatus`` connected (tools counted) / failed (``toolsError``) / starting;
    any other state (notStarted, authenticationRequired, cancelled, disabled) is not_connected;
    a server missing from the list was not loaded."""
    events: list[EventBase] = []
    starting = False
    names: list[str] = []
    for entry in data:
        name, status = entry.name, entry.runtimeStatus
        names.append(name)
        if status == "connected":
            events += readback.report(name, "connected", tools=len(entry.tools), turn_id=turn_id)
        elif status == "failed":
            events += readback.report(name, "failed", detail=entry.toolsError or "Codex could not start it",
                                      turn_id=turn_id)
        elif status in ("starting", None):
            starting = starting or name in readback.names
        else:
            events += readback.report(name, "not_connected", detail=f"Codex reports {status}", turn_id=turn_id)
    events += readback.absent(names, turn_id=turn_id, detail="Codex did not load this server")
    return events, starting
