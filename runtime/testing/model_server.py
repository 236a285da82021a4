"""The scripted model server: one threaded HTTP server on 127.0.0.1 speaking four model dialects.

- OpenAI Responses: ``POST /v1/responses`` (SSE; Codex);
- OpenAI Chat Completions: ``POST /v1/chat/completions`` (SSE or JSON; OpenCode, Qwen, Copilot);
- Anthropic Messages: ``POST /v1/messages`` (SSE or JSON), ``/v1/messages/count_tokens``,
  ``HEAD /`` (Claude Code's preconnect);
- Gemini: ``POST /v1beta/models/<m>:streamGenerateContent?alt=sse``, ``:generateContent``,
  ``:countTokens``.

What each call answers comes from the scenario language in :mod:`paddock.testing._scenario`.
Side calls (Claude's ``set_model`` probe and title call, the Gemini router, OpenCode's title
generator) are answered without consulting the scenario and never fail. Every request is kept as
a :class:`RequestRecord` and, with ``log_path``, appended to a JSONL file.

Use in-process (``with ModelServer(script).start() as server: ... server.url``) or as the command
``paddock mock-model --port 0 --script FILE``.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import socket
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec

from paddock.contract import OperationTimeout

from ._anthropic import Anthropic
from ._chat import Chat
from ._gemini import Gemini
from ._reply import Ids, Reply, TextOut, ToolOut, plan_reply
from ._responses import Responses
from ._scenario import Script, load_script, parse_script
from ._wire import dumps, image_parts

__all__ = ["ModelServer", "RequestRecord"]

class RequestRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One request as the server saw and answered it. Built on the handler thread when the
    response is finished (or the client went away), then published to readers."""

    seq: int
    t: float
    """Seconds from server start to the request's arrival."""
    method: str
    path: str
    query: str = ""
    dialect: str | None = None
    kind: str
    """``turn``, ``follow_up`` (after a tool result), ``side_call``, ``preconnect``,
    ``count_tokens``, ``models``, ``info``, ``not_found`` or ``bad_request``."""
    side_call: str | None = None
    scenario: str | None = None
    segment: int | None = None
    status: int
    stream: bool = False
    model: str | None = None
    prompt_text: str | None = None
    tool_output: str | None = None
    tools_offered: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    """The MIME type of each image part the request carried (any message), in order."""
    tool_calls: tuple[str, ...] = ()
    """Names of the tools the reply called."""
    reply_text: str = ""
    headers: dict[str, str] = {}
    body: Any = None
    frames_sent: int = 0
    client_disconnected: bool = False
    duration: float = 0.0
    note: str | None = None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = False
    owner: ModelServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "PaddockMockModel/1"
    timeout = 60  # idle keep-alive connections end after this many seconds
    server: _HTTPServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def do_HEAD(self) -> None:
        self.server.owner._handle(self)

    def do_GET(self) -> None:
        self.server.owner._handle(self)

    def do_POST(self) -> None:
        self.server.owner._handle(self)


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        data = bytearray()
        while True:
            size = int(handler.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                break
            data += handler.rfile.read(size)
            handler.rfile.readline()
        raw = bytes(data)
    else:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    if handler.headers.get("Content-Encoding", "").lower() == "gzip":
        raw = gzip.decompress(raw)
    return raw


class ModelServer:
    """A scripted model server bound to 127.0.0.1.

    ``script`` is a :class:`Script`, a path to a JSON/TOML script file, decoded script data, or
    None (built-in scenarios only, default ``text``). ``workspace`` makes relative file paths in
    write steps absolute. ``port=0`` picks a free port (recommended: fixed ports received foreign
    traffic). ``answer_models`` (asked -> answered) makes a reply name another model than the
    request asked for, as a provider that reroutes does. Public methods are thread-safe; requests
    are served on one thread each.
    """

    def __init__(
        self,
        script: Script | str | Path | dict | list | None = None,
        *,
        workspace: str | Path | None = None,
        log_path: str | Path | None = None,
        port: int = 0,
        answer_models: Mapping[str, str] | None = None,
    ) -> None:
        self._answer_models = dict(answer_models or {})
        self._script = self._coerce(script)
        self._workspace = str(workspace) if workspace else None
        self._log_path = Path(log_path) if log_path else None
        self._port = port
        self._ids = Ids()
        self._cond = threading.Condition()
        self._records: list[RequestRecord] = []
        self._streams_started = 0
        self._seq = 0
        self._conns: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._log_lock = threading.Lock()
        self._started_at = time.monotonic()

    @staticmethod
    def _coerce(script: object) -> Script:
        if script is None:
            return Script()
        if isinstance(script, Script):
            return script
        if isinstance(script, (str, Path)):
            return load_script(script)
        return parse_script(script)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> ModelServer:
        """Bind and start serving on a background thread; returns ``self``."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._started_at = time.monotonic()
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"mock-model:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, timeout: float = 5.0) -> None:
        """Stop serving: open streams end at their next step, open connections are shut down, and
        every request already answered has its record logged before this returns (bounded by
        ``timeout``). Idempotent."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._cond:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        # Handler threads are daemons: wait (bounded) until each has published its record, so
        # a request answered just before stop() is in the log when stop() returns.
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._conns and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("ModelServer is not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash). OpenAI-style clients want ``url + "/v1"``."""
        return f"http://127.0.0.1:{self.port}"

    def set_script(self, script: Script | str | Path | dict | list | None) -> None:
        """Replace the script for later requests."""
        self._script = self._coerce(script)

    # -- observation -------------------------------------------------------------------------
    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of every finished request, in completion order."""
        with self._cond:
            return list(self._records)

    def model_calls(self) -> list[RequestRecord]:
        """Finished requests that went to a model endpoint (turns, follow-ups and side calls)."""
        return [r for r in self.requests if r.dialect is not None and r.kind in ("turn", "follow_up", "side_call")]

    def wait_for(self, predicate: Callable[[RequestRecord], bool] | None = None, *, count: int = 1,
                 timeout: float) -> list[RequestRecord]:
        """Block until ``count`` finished requests match ``predicate`` (default: model calls).
        Returns the matches; raises ``OperationTimeout``."""
        if predicate is None:
            def predicate(r: RequestRecord) -> bool:
                return r.kind in ("turn", "follow_up")
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [r for r in self._records if predicate(r)]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OperationTimeout(f"waiting for {count} matching model request(s)", timeout)
                self._cond.wait(left)

    def wait_stream_started(self, *, count: int = 1, timeout: float) -> None:
        """Block until ``count`` streamed responses have written their first event."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._streams_started < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OperationTimeout("waiting for a model stream to start", timeout)
                self._cond.wait(left)

    # -- handler-thread side -----------------------------------------------------------------
    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._cond:
            (self._conns.add if add else self._conns.discard)(conn)
            self._cond.notify_all()

    def _publish(self, record: RequestRecord) -> None:
        # File first: a reader woken by wait_for() may look at the log at once.
        if self._log_path is not None:
            line = msgspec.json.encode(record) + b"\n"
            with self._log_lock, open(self._log_path, "ab") as fh:
                fh.write(line)
        with self._cond:
            self._records.append(record)
            self._cond.notify_all()

    def _handle(self, h: _Handler) -> None:
        arrived = time.monotonic()
        with self._cond:
            self._seq += 1
            seq = self._seq
        path, _, query = h.path.partition("?")
        base: dict[str, Any] = {"seq": seq, "t": round(arrived - self._started_at, 4), "method": h.command, "path": path,
                "query": query, "headers": {k.lower(): v for k, v in h.headers.items()}}
        result: dict[str, Any] = {}
        try:
            result = self._respond(h, h.command, path, query)
        except OSError:  # the client went away (BrokenPipe, ConnectionReset, timeout)
            result.setdefault("kind", "turn")
            result["client_disconnected"] = True
            result.setdefault("status", 0)
            h.close_connection = True
        result.setdefault("status", 0)
        result.setdefault("kind", "not_found")
        self._publish(RequestRecord(**base, **result, duration=round(time.monotonic() - arrived, 4)))

    def _send(self, h: _Handler, status: int, payload: object | None, *, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        data = b"" if payload is None else (payload if isinstance(payload, bytes) else dumps(payload).encode())
        h.send_response(status)
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _respond(self, h: _Handler, method: str, path: str, query: str) -> dict[str, Any]:
        if method == "HEAD":
            self._send(h, 200, None)
            return {"kind": "preconnect", "status": 200}
        if method == "GET":
            if path in ("/v1/models", "/models"):
                self._send(h, 200, {"object": "list", "data": [{"id": "mock-model", "object": "model",
                                                                "type": "model", "display_name": "Mock"}]})
                return {"kind": "models", "status": 200}
            if path == "/":
                self._send(h, 200, b"paddock mock model server\n", content_type="text/plain")
                return {"kind": "info", "status": 200}
            self._send(h, 404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return {"kind": "not_found", "status": 404}
        raw = _read_body(h)
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            self._send(h, 400, {"error": {"message": f"mock: bad JSON body: {exc}", "type": "invalid_request_error"}})
            return {"kind": "bad_request", "status": 400}
        tokens = max(1, len(raw) // 4)
        if path.endswith("/messages/count_tokens"):
            self._send(h, 200, {"input_tokens": tokens})
            return {"kind": "count_tokens", "dialect": "anthropic", "status": 200, "body": body}
        if path.endswith(":countTokens"):
            self._send(h, 200, {"totalTokens": tokens})
            return {"kind": "count_tokens", "dialect": "gemini", "status": 200, "body": body}
        if path.endswith("/responses"):
            dialect: Any = Responses
        elif path.endswith("/chat/completions"):
            dialect = Chat
        elif path.endswith("/messages"):
            dialect = Anthropic
        elif "/models/" in path and (path.endswith(":generateContent") or path.endswith(":streamGenerateContent")):
            dialect = Gemini
        else:
            self._send(h, 404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return {"kind": "not_found", "status": 404, "body": body}
        return self._model_call(h, dialect, path, query, body, tokens)

    def _model_call(self, h: _Handler, dialect: Any, path: str, query: str, body: dict, tokens: int) -> dict[str, Any]:
        call = dialect.parse(body, path)
        asked = call.model
        if call.model in self._answer_models:  # the reply names the rerouted model
            call = dataclasses.replace(call, model=self._answer_models[call.model])
        side = dialect.side_call(body, path)
        if side is not None:
            reply = Reply(scenario=None, segment=0, parts=(TextOut(chunks=(side[1],)),))
        else:
            reply = plan_reply(call, self._script, self._ids, workspace=self._workspace)
        info: dict[str, Any] = {
            "dialect": dialect.name,
            "kind": "side_call" if side else ("follow_up" if call.tool_rounds else "turn"),
            "side_call": side[0] if side else None,
            "scenario": reply.scenario,
            "segment": None if side else reply.segment,
            "stream": call.stream,
            "model": asked,
            "prompt_text": call.prompt_text,
            "tool_output": call.tool_output,
            "tools_offered": tuple(t.qualified for t in call.tools),
            "images": image_parts(body),
            "tool_calls": tuple(p.name for p in reply.parts if isinstance(p, ToolOut)),
            "reply_text": "".join(p.text for p in reply.parts if isinstance(p, TextOut)),
            "body": body,
            "note": reply.note,
        }
        if reply.error is not None:
            self._send(h, reply.error.status, dialect.error_body(reply.error), headers=dialect.error_headers(reply.error))
            return {**info, "status": reply.error.status}
        sse = call.stream and (dialect is not Gemini or "alt=sse" in query)
        # A RateLimits step: the account's window in the headers the dialect's CLI reads.
        window = getattr(dialect, "rate_limit_headers", None)
        extra = window(reply.rate_limits) if reply.rate_limits is not None and window is not None else {}
        if not sse:
            payload = (Gemini.json_stream(reply, call, self._ids, tokens) if call.stream
                       else dialect.json_reply(reply, call, self._ids, tokens))
            self._send(h, 200, payload, headers=extra)
            return {**info, "status": 200}
        frames = dialect.stream(reply, call, self._ids, tokens, body)
        h.send_response(200)
        for name, value in extra.items():
            h.send_header(name, value)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        sent = 0
        info["status"] = 200
        for delay, data in frames:
            if delay > 0 and self._stopping.wait(delay):
                info["note"] = "server stopped mid-stream"
                break
            try:
                h.wfile.write(data)
            except OSError:
                # The CLI dropped the stream (interrupt/cancel): stop writing and log it.
                info["client_disconnected"] = True
                break
            sent += 1
            if sent == 1:
                with self._cond:
                    self._streams_started += 1
                    self._cond.notify_all()
        info["frames_sent"] = sent
        return info

