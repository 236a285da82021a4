"""MCP servers a host hands to a session: the two shapes, merging, and the Claude-style JSON form.

Every ``env`` and ``headers`` value is a secret: it is written only to 0600 files in the
instance home, the hub masks it, and ``repr`` never shows it (these structs end up in
tracebacks and log lines). See docs/architecture.md, "MCP servers".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, Union

import msgspec
import msgspec.structs

from ._errors import ValidationError

__all__ = [
    "MCP_SERVER_NAME",
    "McpHttpServer",
    "McpServer",
    "McpStatus",
    "McpStdioServer",
    "McpTransport",
    "mcp_secrets",
    "mcp_servers_from_json",
    "merge_mcp_servers",
]

McpTransport = Literal["stdio", "http", "sse"]
McpStatus = Literal["connected", "failed", "not_connected"]
"""What ``mcp.status.updated`` reports for one server after a session started."""

MCP_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
"""A server name: agents build tool names from it (Claude: ``mcp__<server>__<tool>``), so it
keeps to letters, digits, ``-`` and ``_``."""


def _masked(values: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k!r}: '***'" for k in values) + "}"


class McpStdioServer(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="kind", tag="stdio"
):
    """A local MCP server the agent starts as a child and speaks to over stdio. ``args`` takes
    any sequence of strings (a list too) and is kept as a tuple."""

    name: str
    command: str
    args: Sequence[str] = ()
    env: dict[str, str] = {}
    cwd: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.args, str):
            raise ValidationError("McpStdioServer", f"args must be a sequence of strings, not the string {self.args!r}")
        if not isinstance(self.args, tuple):
            msgspec.structs.force_setattr(self, "args", tuple(self.args))

    def __repr__(self) -> str:
        return (
            f"McpStdioServer(name={self.name!r}, command={self.command!r}, args={self.args!r}, "
            f"env={_masked(self.env)}, cwd={self.cwd!r})"
        )


class McpHttpServer(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="kind", tag="http"
):
    """A remote MCP server reached over streamable HTTP (``transport="http"``) or SSE."""

    name: str
    url: str
    headers: dict[str, str] = {}
    transport: Literal["http", "sse"] = "http"

    def __repr__(self) -> str:
        return (
            f"McpHttpServer(name={self.name!r}, url={self.url!r}, headers={_masked(self.headers)}, "
            f"transport={self.transport!r})"
        )


McpServer = Union[McpStdioServer, McpHttpServer]
"""One MCP server; JSON carries ``"kind": "stdio" | "http"``."""


def _check(servers: Iterable[McpServer], operation: str) -> tuple[McpServer, ...]:
    out: list[McpServer] = []
    seen: set[str] = set()
    for server in servers:
        if not MCP_SERVER_NAME.match(server.name):
            raise ValidationError(
                operation, f"MCP server name {server.name!r} must be 1-64 letters, digits, '-' or '_'"
            )
        if server.name in seen:
            raise ValidationError(operation, f"MCP server name {server.name!r} is given twice")
        if isinstance(server, McpStdioServer) and not server.command:
            raise ValidationError(operation, f"MCP server {server.name!r} has an empty command")
        if isinstance(server, McpHttpServer) and not server.url.startswith(("http://", "https://")):
            raise ValidationError(operation, f"MCP server {server.name!r} needs an http(s) url")
        seen.add(server.name)
        out.append(server)
    return tuple(out)


def merge_mcp_servers(
    instance: Iterable[McpServer], session: Iterable[McpServer], *, operation: str = "start_session"
) -> tuple[McpServer, ...]:
    """The servers a session gets: the instance's, then the session's; a session entry wins by
    name (and takes the instance entry's place). Raises :class:`ValidationError` for a bad name, a
    name given twice within one list, an empty command or a non-HTTP url."""
    merged = {s.name: s for s in _check(instance, operation)}
    for server in _check(session, operation):
        merged[server.name] = server
    return tuple(merged.values())


def mcp_servers_from_json(
    data: Mapping[str, object], *, operation: str = "mcp_config"
) -> tuple[McpServer, ...]:
    """Read the common ``{"mcpServers": {name: {...}}}`` file shape (Claude Code, Cursor, Gemini
    all write it) or a bare ``{name: {...}}`` mapping. An entry with ``command`` is stdio; one with
    ``url`` is HTTP (``"type": "sse"`` selects SSE). Raises :class:`ValidationError`."""
    entries = data.get("mcpServers", data)
    if not isinstance(entries, Mapping):
        raise ValidationError(operation, "mcpServers must be an object of name -> server")
    servers: list[McpServer] = []
    for name, raw in entries.items():
        if not isinstance(raw, Mapping):
            raise ValidationError(operation, f"MCP server {name!r} must be an object")
        fields = {k: v for k, v in raw.items() if k not in ("type", "kind", "transport")}
        kind = raw.get("type") or raw.get("transport") or raw.get("kind")
        try:
            if "command" in raw:
                servers.append(msgspec.convert({**fields, "name": name, "kind": "stdio"}, McpServer))
            elif "url" in raw:
                transport = "sse" if kind == "sse" else "http"
                servers.append(
                    msgspec.convert(
                        {**fields, "name": name, "kind": "http", "transport": transport}, McpServer
                    )
                )
            else:
                raise ValidationError(operation, f"MCP server {name!r} needs a command or a url")
        except msgspec.ValidationError as exc:
            # msgspec's message names the field, never its value
            raise ValidationError(operation, f"MCP server {name!r}: {exc}") from None
    return _check(servers, operation)


def mcp_secrets(servers: Iterable[McpServer]) -> tuple[str, ...]:
    """Every secret value the servers carry (``env`` and ``headers`` values), for the hub's mask."""
    out: list[str] = []
    for server in servers:
        values = server.env if isinstance(server, McpStdioServer) else server.headers
        out.extend(v for v in values.values() if v)
    return tuple(out)
