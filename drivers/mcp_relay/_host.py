"""The session's side of the MCP relay: spec files, the relay commands handed to the agent, the
report listener, and the canonical events the reports become.

Threads: :class:`McpRelays` is built and used on the session actor's thread; its listener
(:class:`paddock.actors.UnixLineListener`) decodes reports on its own thread and only calls
``deliver`` (the actor's ``tell``) with :class:`McpReports`.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import msgspec

from paddock.actors import Terminal, UnixLineListener
from paddock.contract import (
    EventBase,
    EventIdentity,
    ItemCompleted,
    ItemStarted,
    McpHttpServer,
    McpServer,
    McpStatusUpdated,
    McpStdioServer,
    RuntimeWarningEvent,
)

from ._protocol import (
    CallEnded,
    CallStarted,
    Exited,
    Failed,
    Hello,
    Initialized,
    Listening,
    RelaySpec,
    Report,
    ToolsListed,
    decode_report,
)

__all__ = ["McpRelays", "McpReports", "relay_command"]

log = logging.getLogger(__name__)

# A unix socket path holds at most 107 bytes (sun_path); a deep instance home falls back to a
# private folder under the temporary directory.
_SUN_PATH_MAX = 100


def relay_command(spec_path: str) -> tuple[str, tuple[str, ...]]:
    """The command an agent runs in place of a server: this interpreter and the relay module."""
    return sys.executable, ("-m", "paddock.drivers.mcp_relay", spec_path)


@dataclass(frozen=True, slots=True)
class McpReports:
    """Reports of one relay, told to the session actor (``server``: the server's name)."""

    server: str
    reports: tuple[Report, ...]


@dataclass(slots=True)
class _Server:
    server: McpServer
    token: str
    spec: str = ""
    started: bool = False  # a relay said hello
    generation: int = 0  # relays started so far (an agent may restart one): part of item ids
    initialized: bool = False
    status: str | None = None  # the last status published
    tools: int | None = None
    reason: str | None = None
    # an HTTP-serving relay (the session's child): its process, bearer token and URL once listening
    terminal: Terminal | None = None
    serve: str = ""
    url: str | None = None
    dead: bool = False  # it reported failed before listening


@dataclass(slots=True)
class _Call:
    item_id: str
    turn_id: str | None
    data: dict[str, object] = field(default_factory=dict)


def _private_folder(home: str) -> str:
    if not home:
        return tempfile.mkdtemp(prefix="paddock-mcp-")
    parent = os.path.join(home, "mcp-relay")
    os.makedirs(parent, mode=0o700, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="s-", dir=parent)
    if len(os.path.join(folder, "r.sock")) > _SUN_PATH_MAX:
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="paddock-mcp-")
    os.chmod(folder, 0o700)
    return folder


class McpRelays:
    """The relays of one session incarnation. ``home``: the instance home (a 0700 folder is made
    in it for the spec files and the socket; without one, or when the socket path would be too
    long, a private folder under the temporary directory); ``deliver``: called on the listener's thread with
    each batch of reports. :meth:`close` removes the folder (spec files hold secrets)."""

    def __init__(self, servers: tuple[McpServer, ...], home: str, identity: EventIdentity,
                 deliver: Callable[[McpReports], None]) -> None:
        self._identity = identity
        self._deliver = deliver
        self._servers = {s.name: _Server(s, secrets.token_hex(8)) for s in servers}
        self._by_token = {s.token: s for s in self._servers.values()}
        self._conns: dict[int, _Server] = {}
        self._calls: dict[tuple[str, int, int], _Call] = {}
        self._nonce = secrets.token_hex(3)
        self._checked = False
        self._listening = threading.Condition()
        self.folder = _private_folder(home)
        self._listener = UnixLineListener(os.path.join(self.folder, "r.sock"), self._lines, self._closed)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._servers)

    def handed(self) -> tuple[McpStdioServer, ...]:
        """Each server as the stdio relay command the agent starts (spec files written once,
        0600; they carry the secrets, argv carries only their path)."""
        out: list[McpStdioServer] = []
        for name, entry in self._servers.items():
            if not entry.spec:
                self._write_spec(entry)
            command, args = relay_command(entry.spec)
            out.append(McpStdioServer(name=name, command=command, args=args))
        return tuple(out)

    def served(self, env: Mapping[str, str], timeout: float) -> tuple[McpHttpServer, ...]:
        """For an agent that takes only HTTP MCP: each server as an HTTP-serving relay this
        session starts itself (once; under the orphan guard, in its own process group, killed by
        :meth:`close`) with ``env``. Waits up to ``timeout`` s for each to listen; a server whose
        relay could not start it is left out (its ``failed`` report says why). The bearer token
        each relay asks for travels to the agent in ``headers``, never on argv."""
        for entry in self._servers.values():
            if entry.terminal is None and not entry.dead:
                entry.serve = secrets.token_urlsafe(24)
                self._write_spec(entry)
                command, args = relay_command(entry.spec)
                entry.terminal = Terminal([command, *args], env=env, cwd=self.folder, output_limit=64 * 1024)
                entry.terminal.on_exit(self._wake)
        deadline = time.monotonic() + timeout
        with self._listening:
            self._listening.wait_for(
                lambda: all(e.url or e.dead or self._exited(e) for e in self._servers.values()),
                max(0.0, deadline - time.monotonic()))
        return tuple(McpHttpServer(name=e.server.name, url=e.url, headers={"Authorization": f"Bearer {e.serve}"})
                     for e in self._servers.values() if e.url)

    def _wake(self, _exit: object) -> None:
        # A relay's watcher thread: an exited relay will never listen.
        with self._listening:
            self._listening.notify_all()

    @staticmethod
    def _exited(entry: _Server) -> bool:
        return entry.terminal is not None and entry.terminal.output()[2] is not None

    def _write_spec(self, entry: _Server) -> None:
        entry.spec = os.path.join(self.folder, f"{entry.token}.json")
        spec = RelaySpec(server=entry.server, socket=self._listener.path, token=entry.token, serve=entry.serve or None)
        fd = os.open(entry.spec, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(msgspec.json.encode(spec))

    def close(self) -> None:
        for entry in self._servers.values():
            if entry.terminal is not None:
                entry.terminal.kill()
        self._listener.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # the listener's thread -------------------------------------------------------------------

    def _lines(self, conn: int, lines: list[bytes]) -> None:
        reports: list[Report] = []
        entry = self._conns.get(conn)
        for line in lines:
            try:
                report = decode_report(line)
            except msgspec.DecodeError:
                log.debug("ignoring a line that is not a relay report")
                continue
            if isinstance(report, Hello):
                entry = self._by_token.get(report.token)
                if entry is not None:
                    self._conns[conn] = entry
            elif entry is not None and isinstance(report, (Listening, Failed)) and entry.url is None:
                with self._listening:
                    if isinstance(report, Listening):
                        entry.url = report.url
                    else:
                        entry.dead = True
                    self._listening.notify_all()
            if entry is not None:
                reports.append(report)
        if entry is not None and reports:
            self._deliver(McpReports(entry.server.name, tuple(reports)))

    def _closed(self, conn: int) -> None:
        self._conns.pop(conn, None)

    # the session actor's thread ------------------------------------------------------------

    def handle(self, msg: McpReports, turn_id: str | None) -> list[EventBase]:
        """The events a batch of reports becomes: ``mcp.status.updated`` and ``mcp_tool_call``
        items (in the running turn ``turn_id``; calls outside a turn change no item)."""
        entry = self._servers.get(msg.server)
        if entry is None:
            return []
        events: list[EventBase] = []
        name = entry.server.name
        for report in msg.reports:
            if isinstance(report, Hello):
                entry.started = True
                entry.generation += 1
            elif isinstance(report, Initialized):
                entry.initialized = True
            elif isinstance(report, ToolsListed):
                if entry.status != "connected" or entry.tools != report.count:
                    entry.tools = report.count
                    events.append(self._status(entry, "connected"))
            elif isinstance(report, (Failed, Exited)) and entry.status != "failed":
                entry.reason = report.reason
                events.append(self._status(entry, "failed", report.reason))
            elif isinstance(report, CallStarted) and turn_id is not None:
                item_id = f"mcp:{self._nonce}:{name}:{entry.generation}:{report.call}"
                data: dict[str, object] = {"server": name, "tool": report.tool, "arguments": report.arguments}
                self._calls[(name, entry.generation, report.call)] = _Call(item_id, turn_id, data)
                events.append(ItemStarted(**self._identity, turn_id=turn_id, item_id=item_id, kind="mcp_tool_call",
                                          title=f"{name}: {report.tool}", data=dict(data)))
            elif isinstance(report, CallEnded):
                call = self._calls.pop((name, entry.generation, report.call), None)
                if call is None:
                    continue
                data = {**call.data, "duration_ms": round(report.seconds * 1000, 3)}
                if report.error is not None:
                    data["error"] = report.error
                events.append(ItemCompleted(
                    **self._identity, turn_id=call.turn_id, item_id=call.item_id, kind="mcp_tool_call",
                    status="failed" if report.error is not None else "completed", title=f"{name}: {report.tool}",
                    text=report.error if report.error is not None else report.result, data=data))
        return events

    def turn_ended(self, turn_id: str | None) -> list[EventBase]:
        """At the end of each turn: calls still open end ``failed``; after the first turn of the
        incarnation, a server that never connected is ``not_connected`` (or stays ``failed``)
        with a ``runtime.warning`` naming it."""
        events: list[EventBase] = []
        for key, call in list(self._calls.items()):
            if call.turn_id == turn_id:
                del self._calls[key]
                events.append(ItemCompleted(**self._identity, turn_id=turn_id, item_id=call.item_id,
                                            kind="mcp_tool_call", status="failed",
                                            text="the turn ended before the tool answered", data=call.data))
        if self._checked:
            return events
        self._checked = True
        for entry in self._servers.values():
            if entry.status == "connected":
                continue
            name = entry.server.name
            if entry.initialized and entry.status is None:
                events.append(self._status(entry, "connected"))  # it never listed its tools
                continue
            if entry.status == "failed":
                why = f"failed: {entry.reason}"
            elif entry.started:
                why = "its relay started but the server never completed the MCP handshake"
                events.append(self._status(entry, "not_connected", why))
            else:
                why = "the agent never started it (it ignored or dropped the server)"
                events.append(self._status(entry, "not_connected", why))
            events.append(RuntimeWarningEvent(**self._identity, turn_id=turn_id, code="mcp.not_connected",
                                              message=f"MCP server {name!r} did not connect by the end of the "
                                                      f"first turn: {why}", detail={"server": name}))
        return events

    def _status(self, entry: _Server, status: str, detail: str | None = None) -> McpStatusUpdated:
        entry.status = status
        return McpStatusUpdated(**self._identity, server=entry.server.name, status=status, detail=detail,
                                tools=entry.tools if status == "connected" else None)
