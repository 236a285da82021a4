"""A session's MCP servers on an OpenCode server: ``POST /mcp {name, config}`` (``directory`` =
the session's cwd) adds one, ``GET /mcp`` reads back each server's status, and tool parts named
``<server>_<tool>`` are its calls.

Scope (OpenCode 1.18.33): MCP servers belong to the server process and the directory, not to a
session. Every session of the instance in that directory sees them, a later entry of the same
name replaces the earlier one, and they live until the server exits (a restart loses them: the
sessions add theirs again). Capabilities say ``mcp_scope="instance"``. The entries travel in
HTTP bodies to the loopback server (password-protected), never in a file or a command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from paddock.contract import EventBase, JsonObject, JsonValue, McpServer, McpStdioServer
from paddock.drivers._mcp_native import McpReadback

__all__ = ["mcp_entry", "mcp_tool_of", "report_status", "tool_counts"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def mcp_entry(server: McpServer) -> JsonObject:
    """The ``config`` of ``POST /mcp``: ``{type: "local", command: [command, *args],
    environment, cwd}`` or ``{type: "remote", url, headers, oauth: false}`` (OpenCode's remote
    client speaks streamable HTTP and falls back to SSE; no OAuth discovery: the host's headers
    are the credentials)."""
    if isinstance(server, McpStdioServer):
        entry: JsonObject = {"type": "local", "command": [server.command, *server.args],
                             "environment": dict[str, JsonValue](server.env)}
        if server.cwd is not None:
            entry["cwd"] = server.cwd
        return entry
    return {"type": "remote", "url": server.url, "headers": dict[str, JsonValue](server.headers), "oauth": False}


def mcp_tool_of(tool: str, servers: Iterable[str]) -> tuple[str, str] | None:
    """``(server, tool)`` of an OpenCode tool name ``<server>_<tool>`` (both with every character
    outside letters, digits, ``_`` and ``-`` made ``_``), for the session's servers (longest
    first); ``None`` for any other tool."""
    for name in sorted(servers, key=len, reverse=True):
        prefix = _UNSAFE.sub("_", name) + "_"
        if tool.startswith(prefix) and len(tool) > len(prefix):
            return name, tool[len(prefix):]
    return None


def tool_counts(tool_ids: JsonValue, servers: Iterable[str]) -> dict[str, int]:
    """Tools per server in ``GET /experimental/tool/ids`` (a list of tool names)."""
    counts: dict[str, int] = {}
    for tool in tool_ids if isinstance(tool_ids, list) else ():
        found = mcp_tool_of(tool, servers) if isinstance(tool, str) else None
        if found is not None:
            counts[found[0]] = counts.get(found[0], 0) + 1
    return counts


def report_status(readback: McpReadback, answer: JsonValue, tools: dict[str, int],
                  turn_id: str | None) -> list[EventBase]:
    """``GET /mcp`` ``{name: {status, error?}}``: connected (``tools``: counts per server, where
    known), failed (its error), or not_connected for needs_auth, needs_client_registration and
    disabled; a server missing from the map was not loaded."""
    events: list[EventBase] = []
    listed = answer if isinstance(answer, dict) else {}
    for name, status in listed.items():
        state = status.get("status") if isinstance(status, dict) else None
        error = status.get("error") if isinstance(status, dict) else None
        if state == "connected":
            events += readback.report(name, "connected", tools=tools.get(name), turn_id=turn_id)
        elif state == "failed":
            events += readback.report(name, "failed", detail=str(error or "OpenCode could not start it"),
                                      turn_id=turn_id)
        elif state is not None:
            events += readback.report(name, "not_connected", detail=f"OpenCode reports {state}"
                                      + (f": {error}" if error else ""), turn_id=turn_id)
    events += readback.absent(listed, turn_id=turn_id, detail="OpenCode did not load this server")
    return events
