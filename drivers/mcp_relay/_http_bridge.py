"""The relay's bridge from stdio JSON-RPC lines to a remote MCP server (streamable HTTP or SSE),
for agents that speak only stdio MCP. Built on httpx (the ``opencode``/``server`` extras).

Streamable HTTP (MCP 2025-03-26 and later): every message from the agent is POSTed to the URL
with ``Accept: application/json, text/event-stream``; the answer is one JSON body, an SSE
stream of messages, or 202 (notifications and responses). The ``Mcp-Session-Id`` the server
sets on the ``initialize`` answer and the negotiated ``MCP-Protocol-Version`` go on every later
request; closing sends ``DELETE``.

SSE (MCP 2024-11-05): a ``GET`` stream whose first event, ``endpoint``, names the URL messages
are POSTed to; the server's messages arrive on the stream as ``message`` events.

Threads: :meth:`HttpBridge.send` runs on the relay's main thread and only queues; one sender
thread POSTs in order (a streamed answer is read on a thread of its own, so a long tool call does
not hold later messages); the SSE transport has one stream reader thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from urllib.parse import urljoin

import httpx
import msgspec

from paddock.contract import McpHttpServer

__all__ = ["HttpBridge"]

_ACCEPT = "application/json, text/event-stream"


class _Head(msgspec.Struct, frozen=True):
    id: object = None
    method: str | None = None
    result: object = None


_head = msgspec.json.Decoder(_Head)


def _sse_events(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """``(event, data)`` for each event of an SSE stream (``event`` defaults to ``message``)."""
    event, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield event, "\n".join(data)


class HttpBridge:
    """Relays lines to ``server``; the server's messages go to ``to_agent(line)`` and a server
    that cannot be reached or refuses ``initialize`` to ``fail(reason)``. A request the server
    refuses is answered to the agent with a JSON-RPC error, so the agent never waits forever."""

    def __init__(self, server: McpHttpServer, to_agent: Callable[[bytes], None], fail: Callable[[str], None]) -> None:
        self._server = server
        self._to_agent = to_agent
        self._fail = fail
        self._client = httpx.Client(headers=dict(server.headers), timeout=httpx.Timeout(30.0, read=None))
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._session_id: str | None = None
        self._protocol: str | None = None
        self._endpoint: str | None = None
        self._endpoint_known = threading.Event()
        self._closed = False
        self._stream: httpx.Response | None = None
        if server.transport == "sse":
            threading.Thread(target=self._read_sse, name="sse-stream", daemon=True).start()
        self._sender = threading.Thread(target=self._send_loop, name="http-sender", daemon=True)
        self._sender.start()

    def send(self, line: bytes) -> None:
        self._queue.put(line)

    def close(self) -> None:
        self._closed = True
        self._queue.put(None)
        self._sender.join(5.0)
        if self._session_id is not None and self._server.transport == "http":
            try:
                self._client.delete(self._server.url, headers=self._headers(), timeout=2.0)
            except httpx.HTTPError:
                pass
        stream = self._stream
        if stream is not None:
            stream.close()
        self._client.close()

    # -- the sender thread ------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": _ACCEPT, "Content-Type": "application/json"}
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        if self._protocol is not None:
            headers["MCP-Protocol-Version"] = self._protocol
        return headers

    def _send_loop(self) -> None:
        while True:
            line = self._queue.get()
            if line is None:
                return
            try:
                head = _head.decode(line)
            except msgspec.DecodeError:
                continue
            try:
                if self._server.transport == "sse":
                    self._post_sse(line, head)
                else:
                    self._post_http(line, head)
            except httpx.HTTPError as exc:
                self._refused(head, f"cannot reach the MCP server: {exc}")

    def _refused(self, head: _Head, reason: str) -> None:
        # The tap sees this error answer go by: a refused initialize is reported failed there.
        if head.method is not None and head.id is not None:
            self._to_agent(msgspec.json.encode(
                {"jsonrpc": "2.0", "id": head.id, "error": {"code": -32000, "message": reason}}))

    def _post_http(self, line: bytes, head: _Head) -> None:
        request = self._client.build_request("POST", self._server.url, content=line, headers=self._headers())
        response = self._client.send(request, stream=True)
        if response.status_code >= 400:
            response.read()
            response.close()
            self._refused(head, f"the MCP server answered HTTP {response.status_code}")
            return
        if head.method == "initialize":
            self._session_id = response.headers.get("mcp-session-id") or self._session_id
        kind = response.headers.get("content-type", "")
        if response.status_code == 202 or head.method is None:
            response.read()
            response.close()
        elif kind.startswith("text/event-stream"):
            if head.method == "initialize":
                self._read_answer(response, head)  # later requests need its session id and version
            else:
                threading.Thread(target=self._read_answer, args=(response, head), name="http-answer",
                                 daemon=True).start()
        else:
            body = response.read()
            response.close()
            self._deliver(body.strip(), head)

    def _read_answer(self, response: httpx.Response, head: _Head) -> None:
        try:
            for event, data in _sse_events(response.iter_lines()):
                if event == "message" and data.strip():
                    self._deliver(data.encode(), head)
        except httpx.HTTPError as exc:
            self._refused(head, f"the MCP server's answer broke off: {exc}")
        finally:
            response.close()

    def _deliver(self, body: bytes, head: _Head) -> None:
        if not body:
            return
        if head.method == "initialize":
            try:
                answer = _head.decode(body)
                result = answer.result
                if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                    self._protocol = result["protocolVersion"]
            except msgspec.DecodeError:
                pass
        if body.startswith(b"["):  # a batch: one line per message
            for message in msgspec.json.decode(body):
                self._to_agent(msgspec.json.encode(message))
        else:
            self._to_agent(body)

    # -- SSE (2024-11-05) ---------------------------------------------------------------------

    def _read_sse(self) -> None:
        try:
            with self._client.stream("GET", self._server.url, headers={"Accept": "text/event-stream"}) as response:
                if response.status_code >= 400:
                    self._fail(f"the MCP server answered HTTP {response.status_code}")
                    return
                self._stream = response
                for event, data in _sse_events(response.iter_lines()):
                    if event == "endpoint":
                        self._endpoint = urljoin(self._server.url, data.strip())
                        self._endpoint_known.set()
                    elif event == "message" and data.strip():
                        self._to_agent(data.encode())
        except httpx.HTTPError as exc:
            if not self._closed:
                self._fail(f"cannot reach the MCP server: {exc}")
        finally:
            self._endpoint_known.set()

    def _post_sse(self, line: bytes, head: _Head) -> None:
        self._endpoint_known.wait(30.0)
        if self._endpoint is None:
            self._refused(head, "the MCP server's SSE stream named no endpoint")
            return
        response = self._client.post(self._endpoint, content=line, headers={"Content-Type": "application/json"})
        if response.status_code >= 400:
            self._refused(head, f"the MCP server answered HTTP {response.status_code}")
