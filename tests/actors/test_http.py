"""The HTTP + SSE transport against a real HTTP server on 127.0.0.1 (a thread in this process)."""

from __future__ import annotations

import base64
import json
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("httpx", reason="the HTTP transport needs agent-paddock[opencode]")

from paddock.actors import HttpTransport, SseStatus
from paddock.contract import OperationTimeout, RequestError


class Server:
    """Answers JSON calls from ``routes`` and serves ``/event`` from scripted connections: each
    GET /event takes the next list of raw chunks from ``streams`` (a ``None`` chunk ends the
    response; the handler then closes the connection)."""

    def __init__(self, password: str | None = None) -> None:
        self.password = password
        self.routes: dict[tuple[str, str], tuple[int, object, dict[str, str]]] = {}
        self.streams: queue.Queue[list[bytes | None]] = queue.Queue()
        self.requests: list[tuple[str, str, object, str | None]] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _auth_ok(self) -> bool:
                if server.password is None:
                    return True
                want = "Basic " + base64.b64encode(f"opencode:{server.password}".encode()).decode()
                return self.headers.get("Authorization") == want

            def do_GET(self) -> None:  # noqa: N802
                server.requests.append(("GET", self.path, None, self.headers.get("Authorization")))
                if not self._auth_ok():
                    self._send(401, None)
                    return
                if self.path == "/event":
                    chunks = server.streams.get(timeout=10)
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for chunk in chunks:
                        if chunk is None:
                            break
                        if chunk == b"<wait>":
                            server.release.wait(10)
                            continue
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    else:
                        server.release.wait(10)
                    try:
                        self.wfile.write(b"0\r\n\r\n")
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                self._route("GET")

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests.append(("POST", self.path, json.loads(raw) if raw else None,
                                        self.headers.get("Authorization")))
                if not self._auth_ok():
                    self._send(401, None)
                    return
                self._route("POST")

            def _route(self, method: str) -> None:
                status, body, headers = server.routes.get((method, self.path.split("?")[0]), (404, {"message": "no"}, {}))
                self._send(status, body, headers)

            def _send(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


class Collector:
    def __init__(self) -> None:
        self.batches: list[list] = []
        self.statuses: list[SseStatus] = []
        self.warnings: list[tuple[str, str]] = []
        self._cond = threading.Condition()

    def on_events(self, batch: list) -> None:
        with self._cond:
            self.batches.append(batch)
            self._cond.notify_all()

    def on_status(self, status: SseStatus) -> None:
        with self._cond:
            self.statuses.append(status)
            self._cond.notify_all()

    def on_warning(self, code: str, message: str, detail: dict) -> None:
        with self._cond:
            self.warnings.append((code, message))
            self._cond.notify_all()

    @property
    def events(self) -> list:
        return [e for b in self.batches for e in b]

    def wait(self, predicate, timeout: float = 10.0) -> None:
        with self._cond:
            assert self._cond.wait_for(predicate, timeout), (self.batches, self.statuses, self.warnings)


def _data(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def test_json_calls_statuses_and_error_bodies(server):
    server.routes[("POST", "/session")] = (200, {"id": "ses_1"}, {})
    server.routes[("POST", "/session/ses_1/prompt_async")] = (204, None, {})
    server.routes[("GET", "/busy")] = (409, {"_tag": "SessionBusyError", "message": "busy"}, {})
    http = HttpTransport(server.url, timeout=5)
    try:
        assert http.json("POST", "/session", {"title": "t"}) == {"id": "ses_1"}
        assert http.call("POST", "/session/ses_1/prompt_async", {"parts": []}) == (204, None)
        with pytest.raises(RequestError) as err:
            http.json("GET", "/busy")
        assert err.value.code == 409 and "SessionBusyError: busy" in str(err.value)
        assert server.requests[0][:3] == ("POST", "/session", {"title": "t"})
    finally:
        http.close()


def test_redirects_are_not_followed(server):
    server.routes[("GET", "/global/health")] = (307, None, {"Location": "http://127.0.0.1:9/elsewhere"})
    http = HttpTransport(server.url, timeout=5)
    try:
        with pytest.raises(RequestError) as err:
            http.json("GET", "/global/health")
        assert err.value.code == 307 and "redirect" in str(err.value)
        assert [r[1] for r in server.requests] == ["/global/health"]
    finally:
        http.close()


def test_password_is_sent_as_basic_auth_and_never_shown():
    s = Server(password="s3cret-pw")
    s.routes[("GET", "/global/health")] = (200, {"healthy": True}, {})
    try:
        bad = HttpTransport(s.url, password="wrong", timeout=5)
        with pytest.raises(RequestError) as err:
            bad.json("GET", "/global/health")
        assert err.value.code == 401 and "wrong" not in str(err.value)
        bad.close()
        good = HttpTransport(s.url, password="s3cret-pw", timeout=5)
        assert good.json("GET", "/global/health") == {"healthy": True}
        assert "s3cret-pw" not in repr(good.__dict__.get("_where"))
        good.close()
    finally:
        s.close()


def test_unreachable_server_and_timeouts_are_typed():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    http = HttpTransport(f"http://127.0.0.1:{port}", timeout=2, where={"driver": "opencode", "instance_id": "i"})
    with pytest.raises(RequestError) as err:
        http.json("GET", "/global/health")
    assert err.value.driver == "opencode"
    http.close()
    # A server that accepts and never answers.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        slow = HttpTransport(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.5)
        with pytest.raises(OperationTimeout):
            slow.json("GET", "/global/health")
        slow.close()
    finally:
        listener.close()


def test_stream_batches_per_chunk_skips_heartbeats_and_bad_events(server):
    big = {"type": "big", "text": "x" * 5000}
    server.streams.put([
        _data({"type": "server.connected"}),
        b": heartbeat\n\n" + _data({"type": "a", "n": 1}) + _data({"type": "a", "n": 2}),
        b"data: {not json\n\n",
        # one event split across chunks, CRLF line ends, and an event spread over two data lines
        _data(big)[:100], _data(big)[100:],
        b'data: {"type": "multi",\r\ndata: "n": 3}\r\n\r\n',
    ])
    got = Collector()
    http = HttpTransport(server.url, timeout=5)
    stream = http.stream("/event", on_events=got.on_events, on_status=got.on_status, on_warning=got.on_warning)
    try:
        got.wait(lambda: len(got.events) >= 5)
        assert [e["type"] for e in got.events] == ["server.connected", "a", "a", "big", "multi"]
        assert got.events[3] == big and got.events[4]["n"] == 3
        # the two events of one chunk came as one batch
        assert [len(b) for b in got.batches][:2] == [1, 2]
        assert [w[0] for w in got.warnings] == ["sse.malformed_event"]
        assert got.statuses[0].state == "connected"
    finally:
        stream.close()
        http.close()
    assert got.statuses[-1].state == "closed"
    assert not stream._thread.is_alive()


def test_oversized_event_is_skipped_and_the_stream_goes_on(server):
    server.streams.put([_data({"type": "huge", "text": "y" * 3000}), _data({"type": "after"})])
    got = Collector()
    http = HttpTransport(server.url, timeout=5)
    stream = http.stream("/event", on_events=got.on_events, on_warning=got.on_warning, max_event_bytes=1000)
    try:
        got.wait(lambda: got.events)
        assert [e["type"] for e in got.events] == ["after"]
        assert [w[0] for w in got.warnings] == ["sse.event_too_long"]
    finally:
        stream.close()
        http.close()


def test_stream_reconnects_with_backoff_after_the_server_ends_it(server):
    server.streams.put([_data({"type": "first"}), None])
    server.streams.put([_data({"type": "second"})])
    got = Collector()
    http = HttpTransport(server.url, timeout=5)
    stream = http.stream("/event", on_events=got.on_events, on_status=got.on_status, backoff_base=0.05)
    try:
        got.wait(lambda: len(got.events) == 2)
        assert [e["type"] for e in got.events] == ["first", "second"]
        states = [s.state for s in got.statuses]
        assert states[:3] == ["connected", "disconnected", "connected"]
        assert got.statuses[1].retry_in is not None and got.statuses[1].retry_in < 0.5
    finally:
        stream.close()
        http.close()


def test_close_wakes_a_reader_blocked_on_a_silent_stream(server):
    server.streams.put([_data({"type": "only"}), b"<wait>"])
    got = Collector()
    http = HttpTransport(server.url, timeout=30)
    stream = http.stream("/event", on_events=got.on_events, on_status=got.on_status)
    got.wait(lambda: got.events)
    import time

    t0 = time.monotonic()
    stream.close(timeout=5)
    assert not stream._thread.is_alive()
    assert time.monotonic() - t0 < 2.0
    http.close()


def test_stream_retries_on_an_error_status_then_connects():
    s = Server(password="pw")
    s.streams.put([_data({"type": "ok"})])
    got = Collector()
    http = HttpTransport(s.url, password="nope", timeout=5)
    stream = http.stream("/event", on_events=got.on_events, on_status=got.on_status, backoff_base=0.05)
    try:
        got.wait(lambda: len(got.statuses) >= 2)
        assert got.statuses[0].state == "disconnected" and "401" in (got.statuses[0].detail or "")
        s.password = None
        got.wait(lambda: got.events)
        assert got.events == [{"type": "ok"}]
    finally:
        stream.close()
        http.close()
        s.close()


def test_reconnect_cuts_a_backoff_wait_short(server):
    import time

    server.streams.put([_data({"type": "first"}), None])
    server.streams.put([_data({"type": "second"})])
    got = Collector()
    http = HttpTransport(server.url, timeout=5)
    stream = http.stream("/event", on_events=got.on_events, on_status=got.on_status, backoff_base=30.0,
                         backoff_cap=30.0)
    try:
        got.wait(lambda: any(s.state == "disconnected" for s in got.statuses))
        t0 = time.monotonic()
        stream.reconnect()
        got.wait(lambda: len(got.events) == 2)
        assert time.monotonic() - t0 < 5.0  # not the 30 s backoff
    finally:
        stream.close()
        http.close()
