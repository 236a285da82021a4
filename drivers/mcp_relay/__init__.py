"""Paddock's MCP relay: how a session verifies, on any agent, which MCP servers really connected.

The agent is handed ``python -m paddock.drivers.mcp_relay SPEC`` (a stdio server) in place of
each server; the relay starts or reaches the real server, passes JSON-RPC through unchanged and
reports the handshake, the tool list and every tool call to the session over a private socket
(docs/architecture.md, "MCP relay"). :class:`McpRelays` is the session's side: spec files, the
commands to hand the agent, the listener, and the canonical events the reports become.

The host side is loaded on first use, so that the relay program starts without importing the
runtime's actors, pykka or psutil. A package of its own (not a driver): every driver that hands
servers to an agent may use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["McpReports", "McpRelays", "relay_command"]

if TYPE_CHECKING:
    from ._host import McpRelays as McpRelays
    from ._host import McpReports as McpReports
    from ._host import relay_command as relay_command


def __getattr__(name: str) -> object:
    if name in __all__:
        from . import _host

        return getattr(_host, name)
    raise AttributeError(f"module 'paddock.drivers.mcp_relay' has no attribute {name!r}")
