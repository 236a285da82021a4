"""A minimal HTTP + SSE client with a transcript tap, for OpenCode's server.

This is where an HTTP transport calls a :class:`LineTap`: ``on_outbound`` with
``{"http":"request","req":n,"method","path","body"}`` before sending, ``on_inbound`` with
``{"http":"response","req":n,"status","body"}`` once the answer is read, and with
``{"http":"event","req":n,"data":{...}}`` for each SSE event (on the stream's reader thread).
"""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

from paddock.actors import LineTap

from ._transcript import dumps_line

__all__ = ["EventStream", "TappedHttp"]


class EventStream:
    """An open SSE response; ``on_event(data)`` runs on its reader thread."""

    def __init__(self, conn: http.client.HTTPConnection, sock: socket.socket, resp: http.client.HTTPResponse,
                 req: int, tap: LineTap | None, on_event: Callable[[dict], None]) -> None:
        self._conn, self._sock, self._resp, self._req = conn, sock, resp, req
        self._tap, self._on_event = tap, on_event
        self._thread = threading.Thread(target=self._read, name=f"sse-{req}", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for raw in self._resp:
                if not raw.startswith(b"data:"):
                    continue
                try:
                    data = json.loads(raw[5:])
                except ValueError:
                    continue
                if self._tap is not None:
                    self._tap.on_inbound(dumps_line({"http": "event", "req": self._req, "data": data}).encode())
                self._on_event(data)
        except Exception:  # noqa: BLE001 - the stream ends by close(); http.client fails variously then
            pass

    def close(self) -> None:
        # Shut the socket down first: the reader thread holds the response's buffer lock while it
        # blocks in read, so closing the response from here would wait for the read timeout.
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._thread.join(5)
        self._resp.close()
        self._conn.close()


class TappedHttp:
    """JSON over HTTP to ``127.0.0.1:port``; thread-safe; every exchange goes through ``tap``."""

    def __init__(self, port: int, *, tap: LineTap | None = None, timeout: float = 30.0) -> None:
        self.port = port
        self._tap = tap
        self._timeout = timeout
        self._ids = itertools.count(1)

    def _send(self, method: str, path: str, body: Any, headers: dict[str, str]
              ) -> tuple[http.client.HTTPConnection, socket.socket, http.client.HTTPResponse, int]:
        req = next(self._ids)
        if self._tap is not None:
            self._tap.on_outbound(dumps_line({"http": "request", "req": req, "method": method, "path": path,
                                              "body": body}).encode())
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self._timeout)
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Content-Type": "application/json", **headers})
        sock = conn.sock  # getresponse() forgets it for Connection: close answers
        return conn, sock, conn.getresponse(), req

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One request; returns (status, decoded JSON body or None)."""
        conn, _, resp, req = self._send(method, path, body, {})
        try:
            raw = resp.read()
        finally:
            conn.close()
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        if self._tap is not None:
            self._tap.on_inbound(dumps_line({"http": "response", "req": req, "status": resp.status,
                                             "body": decoded}).encode())
        return resp.status, decoded

    def stream(self, path: str, on_event: Callable[[dict], None]) -> EventStream:
        """Open an SSE stream (``GET``); raises ``ConnectionError`` on a non-200 answer."""
        conn, sock, resp, req = self._send("GET", path, None, {"Accept": "text/event-stream"})
        if self._tap is not None:
            self._tap.on_inbound(dumps_line({"http": "response", "req": req, "status": resp.status,
                                             "stream": True}).encode())
        if resp.status != 200:
            conn.close()
            raise ConnectionError(f"GET {path} answered {resp.status}")
        return EventStream(conn, sock, resp, req, self._tap, on_event)
