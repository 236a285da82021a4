"""The relay's HTTP face, for agents that take only HTTP MCP servers (copilot rejects stdio ones):
MCP streamable HTTP on 127.0.0.1, standard library only.

It speaks the session-based transport of MCP 2025-11-25 (``initialize`` first); the stateless
2026-07-28 opening, ``server/discover``, is answered -32601 so the client falls back to it.
Every ``POST`` carries one JSON-RPC message (or a batch). A request is passed to the server and
answered with its response as ``application/json`` (streamable HTTP lets a server answer with
JSON instead of a stream); a notification or response is passed on and answered 202. ``GET``
(the optional server-to-client stream) is 405, so a request the server sends the agent (sampling,
roots) is answered -32601 by the relay. Every request must carry ``Authorization: Bearer
<token>``, or it is answered 401: the port is reachable by every local user.

Threads: one thread per HTTP connection (``ThreadingHTTPServer``) waits for its answer; the
backend's reader thread calls :meth:`HttpFront.from_server`.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from ._tap import Backend, Tap

__all__ = ["HttpFront"]

_ANSWER_TIMEOUT = 600.0


class _Head(msgspec.Struct, frozen=True):
    id: object = None
    method: str | None = None


_head = msgspec.json.Decoder(_Head)


class HttpFront:
    """Serves until :meth:`close`; set :attr:`backend` before the first request arrives."""

    def __init__(self, token: str, tap: Tap) -> None:
        self.backend: Backend | None = None
        self._tap = tap
        self._token = f"Bearer {token}".encode()
        self._lock = threading.Lock()
        self._waiting: dict[bytes, tuple[threading.Event, list[bytes]]] = {}
        self._session = secrets.token_hex(8)
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body leave in two writes: with Nagle on, the client's delayed ACK
            # holds the body ~40 ms (measured: 48 ms a call before, see `paddock bench mcp`)
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the base's name)
                pass  # the request line is no one's business; errors surface as JSON-RPC errors

            def _reply(self, status: int, body: bytes = b"", kind: str = "application/json") -> None:
                self.send_response(status)
                if body:
                    self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Mcp-Session-Id", front._session)
                self.end_headers()
                if body:
                    self.wfile.write(body)

            def _authorized(self) -> bool:
                given = (self.headers.get("Authorization") or "").encode()
                if hmac.compare_digest(given, front._token):
                    return True
                self._reply(401, b"missing or wrong bearer token", "text/plain")
                return False

            def do_POST(self) -> None:  # noqa: N802  (http.server's name)
                if not self._authorized():
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    messages = msgspec.json.decode(body)
                except msgspec.DecodeError:
                    self._reply(400, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
                    return
                batch = isinstance(messages, list)
                answers = [a for m in (messages if batch else [messages]) if (a := front._pass(m)) is not None]
                if not answers:
                    self._reply(202)
                elif batch:
                    self._reply(200, b"[" + b",".join(answers) + b"]")
                else:
                    self._reply(200, answers[0])

            def do_GET(self) -> None:  # noqa: N802
                if self._authorized():
                    self._reply(405, b"no server-initiated stream", "text/plain")

            def do_DELETE(self) -> None:  # noqa: N802
                if self._authorized():
                    self._reply(200)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/mcp"
        threading.Thread(target=self._server.serve_forever, name="http-front", daemon=True).start()

    def _pass(self, message: object) -> bytes | None:
        """Pass one message to the server; for a request, wait for and return its answer."""
        line = msgspec.json.encode(message)
        head = _head.decode(line)
        if head.method == "server/discover" and head.id is not None:
            # MCP 2026-07-28 (stateless) starts with server/discover; a stdio server serves one
            # protocol per connection and then refuses the 2025 initialize a client falls back
            # to (copilot sends both). This face speaks the session-based 2025 transport: say so.
            return msgspec.json.encode({"jsonrpc": "2.0", "id": head.id,
                                        "error": {"code": -32601, "message": "Method not found"}})
        self._tap.from_agent(line)
        backend = self.backend
        assert backend is not None
        if head.method is None or head.id is None:
            backend.send(line)
            return None
        key = msgspec.json.encode(head.id)
        done: tuple[threading.Event, list[bytes]] = (threading.Event(), [])
        with self._lock:
            self._waiting[key] = done
        backend.send(line)
        if not done[0].wait(_ANSWER_TIMEOUT):
            with self._lock:
                self._waiting.pop(key, None)
            return msgspec.json.encode({"jsonrpc": "2.0", "id": head.id,
                                        "error": {"code": -32000, "message": "the MCP server did not answer"}})
        return done[1][0]

    def from_server(self, line: bytes) -> None:
        """A line from the server (its reader thread): an answer to a waiting request; a request
        of the server's own is refused (there is no stream to carry it); notifications drop."""
        line = line.strip()
        try:
            head = _head.decode(line)
        except msgspec.DecodeError:
            return
        self._tap.from_server(line)
        if head.method is not None:
            if head.id is not None and self.backend is not None:
                self.backend.send(msgspec.json.encode({"jsonrpc": "2.0", "id": head.id,
                                                       "error": {"code": -32601, "message": "Method not found"}}))
            return
        with self._lock:
            done = self._waiting.pop(msgspec.json.encode(head.id), None)
        if done is not None:
            done[1].append(line)
            done[0].set()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
