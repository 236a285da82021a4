"""The local agent's MCP client: stdio servers named in ``mcpServers``, spoken to in JSON-RPC
lines (MCP's stdio transport), written by hand (the agent imports nothing of the runtime).

A session connects its servers when it is created or loaded: start the command, ``initialize``,
``notifications/initialized``, ``tools/list``. A server that cannot be started or does not
answer within :data:`CONNECT_TIMEOUT` is left out (and said so on stderr), as real agents do.

Threads: one reader thread per server routes its answers to the waiting caller; any thread may
:meth:`McpClient.call`; :meth:`McpClient.close` closes its stdin and reaps it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import msgspec

from ._wire import Pending

if TYPE_CHECKING:  # the agent imports nothing of the runtime at run time
    from paddock.contract import JsonObject, JsonValue

__all__ = ["CONNECT_TIMEOUT", "McpClient", "McpError", "StdioEntry", "connect_all", "stdio_entries"]

CONNECT_TIMEOUT = 20.0
PROTOCOL_VERSION = "2025-06-18"


class McpError(Exception):
    """A server could not be started, answered an error, or went away."""


class StdioEntry(msgspec.Struct, frozen=True):
    """One ``mcpServers`` entry of the stdio shape (``env`` as ``[{name, value}]``)."""

    name: str
    command: str
    args: list[str] = []
    env: list[dict[str, str]] = []


def stdio_entries(raw: JsonValue) -> list[StdioEntry]:
    """The stdio entries of ``mcpServers``; others (HTTP, SSE: not in our ``mcpCapabilities``)
    and malformed ones are skipped with a note on stderr."""
    out: list[StdioEntry] = []
    for item in raw if isinstance(raw, list) else []:
        try:
            out.append(msgspec.convert(item, StdioEntry))
        except msgspec.ValidationError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            print(f"paddock-local: skipping MCP server {name!r}: {exc}", file=sys.stderr, flush=True)
    return out


class McpClient:
    """One connected stdio MCP server. Construct with :meth:`start`."""

    def __init__(self, entry: StdioEntry, cwd: str) -> None:
        import os

        env = dict(os.environ)
        env.update({e.get("name", ""): e.get("value", "") for e in entry.env if e.get("name")})
        self.name = entry.name
        self.tools: list[str] = []
        try:
            self._proc = subprocess.Popen([entry.command, *entry.args], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, cwd=cwd, env=env, close_fds=True)
        except OSError as exc:
            raise McpError(f"cannot start {entry.command!r}: {exc.strerror or exc}") from None
        self._lock = threading.Lock()
        self._next = 0
        self._waiting: dict[int, Pending] = {}
        self._gone = False
        self._encoder = msgspec.json.Encoder()
        threading.Thread(target=self._read, name=f"mcp-{entry.name}", daemon=True).start()

    @classmethod
    def start(cls, entry: StdioEntry, cwd: str, timeout: float = CONNECT_TIMEOUT) -> McpClient:
        """Start and initialize the server and list its tools; raises :class:`McpError`."""
        client = cls(entry, cwd)
        try:
            client.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                          "clientInfo": {"name": "paddock-local", "version": "0.1.0"}}, timeout)
            client._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            listed = client.request("tools/list", {}, timeout)
            tools = listed.get("tools") if isinstance(listed, dict) else None
            for tool in tools if isinstance(tools, list) else []:
                name = tool.get("name") if isinstance(tool, dict) else None
                if isinstance(name, str):
                    client.tools.append(name)
        except McpError:
            client.close()
            raise
        return client

    def _send(self, message: JsonObject) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        with self._lock:
            try:
                stdin.write(self._encoder.encode(message) + b"\n")
                stdin.flush()
            except (OSError, ValueError):
                raise McpError(f"MCP server {self.name!r} went away") from None

    def begin(self, method: str, params: JsonObject) -> Pending:
        """Send a request; its answer completes the returned :class:`Pending`."""
        call = Pending()
        with self._lock:
            if self._gone:
                raise McpError(f"MCP server {self.name!r} went away")
            self._next += 1
            req_id = self._next
            self._waiting[req_id] = call
        self._send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
        return call

    def request(self, method: str, params: JsonObject, timeout: float) -> JsonValue:
        """Send a request and wait for its result; raises :class:`McpError`."""
        call = self.begin(method, params)
        if not call.event.wait(timeout):
            raise McpError(f"MCP server {self.name!r} did not answer {method} within {timeout:g} s")
        if call.error is not None:
            message = call.error.get("message") if isinstance(call.error, dict) else call.error
            raise McpError(f"{method} failed: {message}")
        return call.result

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        decode = msgspec.json.Decoder().decode
        for line in stdout:
            try:
                msg = decode(line)
            except msgspec.DecodeError:
                continue
            if not isinstance(msg, dict):
                continue
            if "method" in msg:
                if "id" in msg:  # a request of the server's own (sampling, roots): not offered
                    self._send({"jsonrpc": "2.0", "id": msg["id"],
                                "error": {"code": -32601, "message": "Method not found"}})
                continue
            req_id = msg.get("id")
            with self._lock:
                call = self._waiting.pop(req_id, None) if isinstance(req_id, int) else None
            if call is not None:
                call.result, call.error = msg.get("result"), msg.get("error")
                call.event.set()
        with self._lock:
            self._gone = True
            waiting, self._waiting = self._waiting, {}
        for call in waiting.values():
            call.error = {"message": f"MCP server {self.name!r} went away"}
            call.event.set()

    def close(self) -> None:
        """Close the server's stdin (the MCP way to end a stdio server), then SIGTERM, SIGKILL."""
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        except OSError:
            pass
        for stop in (None, self._proc.terminate, self._proc.kill):
            if stop is not None:
                try:
                    stop()
                except ProcessLookupError:
                    return
            try:
                self._proc.wait(1.0)
                return
            except subprocess.TimeoutExpired:
                continue


def connect_all(entries: list[StdioEntry], cwd: str) -> dict[str, McpClient]:
    """Connect every server in parallel; the ones that fail are left out (noted on stderr)."""
    clients: dict[str, McpClient] = {}
    lock = threading.Lock()

    def one(entry: StdioEntry) -> None:
        try:
            client = McpClient.start(entry, cwd)
        except McpError as exc:
            print(f"paddock-local: MCP server {entry.name!r} not connected: {exc}", file=sys.stderr, flush=True)
            return
        with lock:
            clients[entry.name] = client

    threads = [threading.Thread(target=one, args=(e,), name=f"mcp-connect-{e.name}", daemon=True) for e in entries]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {e.name: clients[e.name] for e in entries if e.name in clients}
