"""What the drivers that pass MCP servers natively (claude, codex, opencode) share: the 0600 file
a server list is written to, the stdio command of a server whose agent has no ``cwd`` field, and
:class:`McpReadback`, which turns what an agent reports it loaded into ``mcp.status.updated`` and
the ``mcp.not_connected`` warning. See docs/architecture.md, "MCP per driver".

Secrets: ``env`` and ``headers`` values go only into the file (0600, in a 0700 folder) or over the
agent's stdin; nothing here puts them in an event, an error or a command line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from paddock.contract import EventBase, EventIdentity, McpServer, McpStatus, McpStatusUpdated, McpStdioServer
from paddock.contract import RuntimeWarningEvent

__all__ = ["MCP_NOT_CONNECTED", "McpReadback", "stdio_command", "write_private_json"]

MCP_NOT_CONNECTED = "mcp.not_connected"
"""The ``runtime.warning`` code of a server the agent dropped or had not connected by the end of
the session's first turn (the MCP relay uses the same code)."""

_CD_EXEC = 'cd -- "$1" && shift && exec "$@"'


def write_private_json(path: Path, data: object) -> Path:
    """Write ``data`` as JSON to ``path`` (0600; its folder made 0700), atomically; returns
    ``path``. Thread: the caller's."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)  # also when it existed (mkdir leaves an existing folder as it is)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)
    return path


def stdio_command(server: McpStdioServer) -> tuple[str, list[str]]:
    """``(command, args)`` that run the server in its ``cwd`` for an agent whose server entry has
    no working-directory field: ``/bin/sh -c 'cd -- "$1" && shift && exec "$@"' sh <cwd>
    <command> <args...>`` (``exec``: the server replaces the shell, so the agent's signals reach
    it). Without ``cwd``: the server's own command and args."""
    if server.cwd is None:
        return server.command, list(server.args)
    return "/bin/sh", ["-c", _CD_EXEC, "sh", server.cwd, server.command, *server.args]


class McpReadback:
    """What one session's agent reported about each of its MCP servers.

    Built from the session's servers; the driver feeds it every report it reads back
    (:meth:`report`, :meth:`absent`) and gets the ``mcp.status.updated`` events to emit (one per
    change, never a repeat). At the end of the first turn :meth:`first_turn_ended` names every
    server that is not connected (``runtime.warning`` :data:`MCP_NOT_CONNECTED`), once.
    Thread: the owning session actor's (not thread-safe).
    """

    def __init__(self, identity: EventIdentity, servers: Iterable[McpServer]) -> None:
        self.identity = identity
        self.names: tuple[str, ...] = tuple(s.name for s in servers)
        self.status: dict[str, McpStatus] = {}
        self.detail: dict[str, str | None] = {}
        self.tools: dict[str, int | None] = {}
        self.warned = False

    def __bool__(self) -> bool:
        return bool(self.names)

    def restarted(self) -> None:
        """The agent process was replaced: forget what the old one reported, so the new one's
        reports are published again (the first-turn warning stays given)."""
        self.status.clear()
        self.detail.clear()
        self.tools.clear()

    def report(self, name: str, status: McpStatus, *, detail: str | None = None, tools: int | None = None,
               turn_id: str | None = None) -> list[EventBase]:
        """The agent reported ``status`` for ``name``: the event to emit, or none when nothing
        changed (a known tool count is kept when a later report has none). A name the session
        did not hand over is ignored (the agent's own servers are not ours to report)."""
        if name not in self.names:
            return []
        if tools is None and status == "connected" and self.status.get(name) == "connected":
            tools = self.tools.get(name)
        if (self.status.get(name), self.detail.get(name), self.tools.get(name)) == (status, detail, tools):
            return []
        self.status[name], self.detail[name], self.tools[name] = status, detail, tools
        return [McpStatusUpdated(**self.identity, turn_id=turn_id, server=name, status=status, detail=detail,
                                 tools=tools)]

    def absent(self, present: Iterable[str], *, turn_id: str | None = None,
               detail: str = "the agent did not load this server") -> list[EventBase]:
        """The agent listed its servers and these (``present``) are all it has: every other
        server of the session is ``not_connected`` (one already ``failed`` keeps its reason)."""
        have = set(present)
        events: list[EventBase] = []
        for name in self.names:
            if name not in have and self.status.get(name) != "failed":
                events += self.report(name, "not_connected", detail=detail, turn_id=turn_id)
        return events

    def first_turn_ended(self, turn_id: str | None) -> list[EventBase]:
        """Once per session: a warning for each server not ``connected`` (never reported, failed,
        dropped), naming it; the turn's events go before its ``turn.completed``."""
        if self.warned:
            return []
        self.warned = True
        events: list[EventBase] = []
        for name in self.names:
            status = self.status.get(name)
            if status == "connected":
                continue
            why = self.detail.get(name) if status is not None else "the agent never reported it"
            events.append(RuntimeWarningEvent(
                **self.identity, turn_id=turn_id, code=MCP_NOT_CONNECTED,
                message=f"MCP server {name!r} is not connected after the first turn ({status or 'no report'}"
                        f"{': ' + why if why else ''})",
                detail={"server": name, "status": status or "not_connected"},
            ))
        return events
