"""HTTP + Server-Sent Events to one local or remote origin (OpenCode's server).

:class:`HttpTransport` makes JSON calls with httpx; :class:`SseStream` holds one ``GET`` event
stream with its own reader thread, which reconnects with backoff, decodes each ``data:`` payload
once (msgspec) and hands every read chunk's events to ``on_events`` as one batch (the owner
``tell``\\ s them on). httpx is the optional extra ``agent-paddock[opencode]``: importing this
module works without it; building a transport raises :class:`DriverError` saying what to
install.

What the transport guarantees (and why):

- redirects are never followed and a 3xx answer is an error: a bare origin that redirects is
  not the server the host configured;
- ``trust_env=False``: the ambient ``HTTP(S)_PROXY``/``NETRC`` never route or authenticate our
  calls (a proxy would see the server password);
- the password is sent as HTTP Basic auth and appears in no error, log line or transcript: the
  tap sees method, path and body, never headers.

Warning codes given to ``on_warning``: ``sse.malformed_event`` (a ``data:`` payload that is not
JSON), ``sse.event_too_long`` (an event over ``max_event_bytes``, skipped without being held).
"""

from __future__ import annotations

import itertools
import logging
import random
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import msgspec

from paddock.contract import DriverError, OperationTimeout, RequestError

from ..execution import blocking
from ._jsonrpc import LineTap
from ._process import WarningSink, warn

try:  # the optional extra `agent-paddock[opencode]`
    import httpx
except ImportError:  # pragma: no cover - the probe says what to install
    httpx = None  # type: ignore[assignment]

__all__ = ["HTTP_EXTRA_HINT", "HttpTransport", "SseStatus", "SseStream", "http_available"]

log = logging.getLogger("paddock.actors")

HTTP_EXTRA_HINT = "install agent-paddock[opencode]"

_decode_json = msgspec.json.Decoder().decode
_encode_json = msgspec.json.Encoder().encode


def http_available() -> str | None:
    """``None`` when httpx is importable, else a sentence saying what to install."""
    if httpx is None:
        return f"the HTTP transport needs httpx: {HTTP_EXTRA_HINT}"
    return None


class SseStatus(msgspec.Struct, frozen=True, kw_only=True):
    """A change of an :class:`SseStream`'s connection: ``connected`` (the 200 headers arrived),
    ``disconnected`` (the stream ended or failed; a reconnect follows after ``retry_in``
    seconds) or ``closed`` (the owner closed it; the reader thread has ended)."""

    state: Literal["connected", "disconnected", "closed"]
    attempt: int = 0
    detail: str | None = None
    retry_in: float | None = None


class HttpTransport:
    """JSON over HTTP to ``base_url`` (a bare origin such as ``http://127.0.0.1:4096``).

    Thread-safe: any thread may call :meth:`call` (each call blocks its caller at most
    ``timeout`` seconds). :meth:`retarget` points later calls (and streams on their next
    reconnect) at a new origin, e.g. after the server restarted on another port.
    """

    def __init__(self, base_url: str, *, username: str = "opencode", password: str | None = None,
                 timeout: float = 30.0, tap: LineTap | None = None, connect_timeout: float = 5.0,
                 where: dict[str, Any] | None = None) -> None:
        missing = http_available()
        if missing is not None:
            raise DriverError((where or {}).get("driver") or "http", (where or {}).get("instance_id"), missing)
        self._base = base_url.rstrip("/")
        self._auth = httpx.BasicAuth(username, password) if password else None
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._tap = tap
        self._where = {k: v for k, v in (where or {}).items() if k in ("driver", "instance_id", "thread_id")}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._client = self._new_client()
        self._closed = False

    def _new_client(self) -> Any:
        return httpx.Client(base_url=self._base, auth=self._auth, follow_redirects=False, trust_env=False,
                            timeout=httpx.Timeout(self._timeout, connect=self._connect_timeout))

    @property
    def base_url(self) -> str:
        return self._base

    def retarget(self, base_url: str) -> None:
        """Send later calls to ``base_url`` (thread-safe)."""
        with self._lock:
            old, self._base = self._client, base_url.rstrip("/")
            self._client = self._new_client()
        old.close()

    def next_req(self) -> int:
        return next(self._ids)

    def _tap_out(self, req: int, method: str, path: str, body: Any) -> None:
        if self._tap is not None:
            self._tap.on_outbound(_encode_json({"http": "request", "req": req, "method": method, "path": path,
                                                "body": body}))

    def _tap_in(self, message: dict[str, Any]) -> None:
        if self._tap is not None:
            self._tap.on_inbound(_encode_json(message))

    @contextmanager
    def map_errors(self, operation: str, timeout: float) -> Iterator[None]:
        """httpx's failures -> the PaddockError family: a timeout is :class:`OperationTimeout`,
        anything else on the wire a :class:`RequestError` naming the operation (never the URL's
        credentials: our URLs carry none)."""
        try:
            yield
        except httpx.TimeoutException:
            raise OperationTimeout(operation, timeout, **self._where) from None
        except httpx.HTTPError as exc:
            raise RequestError(operation, None, f"{type(exc).__name__}: {exc}", **self._where) from None

    def call(self, method: str, path: str, body: Any = None, *, params: dict[str, str] | None = None,
             timeout: float | None = None) -> tuple[int, Any]:
        """One request; returns ``(status, decoded JSON body or None)``. A body that is not JSON
        comes back as text. Raises :class:`OperationTimeout` or :class:`RequestError` when the
        exchange itself fails (not for an HTTP error status)."""
        if self._closed:
            raise RequestError(f"{method} {path}", None, "the HTTP transport is closed", **self._where)
        limit = self._timeout if timeout is None else timeout
        if params:
            # Encoded here, not by httpx, so the tap records exactly the target sent (`/` kept).
            path = f"{path}?{urllib.parse.urlencode(params, safe='/:')}"
        req = self.next_req()
        self._tap_out(req, method, path, body)
        content = None if body is None else _encode_json(body)
        headers = {"Content-Type": "application/json"} if content is not None else None
        with self._lock:
            client = self._client
        # blocking(): on a dispatcher worker (a session actor), the pool runs other actors meanwhile.
        with self.map_errors(f"{method} {path}", limit), blocking():
            response = client.request(method, path, content=content, headers=headers,
                                      timeout=httpx.Timeout(limit, connect=min(limit, self._connect_timeout)))
        raw = response.content
        decoded: Any
        try:
            decoded = _decode_json(raw) if raw else None
        except msgspec.DecodeError:
            decoded = raw.decode("utf-8", "replace")
        self._tap_in({"http": "response", "req": req, "status": response.status_code, "body": decoded})
        return response.status_code, decoded

    def json(self, method: str, path: str, body: Any = None, *, params: dict[str, str] | None = None,
             timeout: float | None = None) -> Any:
        """:meth:`call`, then any status outside 2xx is a :class:`RequestError` (``code`` = the
        status, detail = the server's message; a redirect says it was not followed)."""
        status, decoded = self.call(method, path, body, params=params, timeout=timeout)
        if 200 <= status < 300:
            return decoded
        if 300 <= status < 400:
            detail = "the server answered with a redirect, which is not followed (configure its own origin)"
        elif status == 401:
            detail = "unauthorized: the server wants a different password"
        else:
            detail = error_text(decoded) or f"HTTP {status}"
        raise RequestError(f"{method} {path}", status, detail, **self._where)

    def stream(self, path: str, *, on_events: Callable[[list[Any]], None],
               on_status: Callable[[SseStatus], None] | None = None, on_warning: WarningSink | None = None,
               name: str = "sse", **options: Any) -> SseStream:
        """Open (and keep open) the event stream at ``path``; see :class:`SseStream`."""
        stream = SseStream(self, path, on_events=on_events, on_status=on_status, on_warning=on_warning, name=name,
                           **options)
        stream.start()
        return stream

    def close(self) -> None:
        """Close the connection pool; later calls raise :class:`RequestError`. Idempotent."""
        self._closed = True
        with self._lock:
            client = self._client
        client.close()


def error_text(body: Any) -> str | None:
    """The message of an error body in any of OpenCode's shapes: ``{message}``,
    ``{_tag, message}``, ``{name, data: {message}}``, ``{error: ...}``."""
    if isinstance(body, str):
        return body[:500] or None
    if not isinstance(body, dict):
        return None
    for key in ("message", "error"):
        value = body.get(key)
        if isinstance(value, str) and value:
            tag = body.get("_tag") or body.get("name")
            return f"{tag}: {value}" if isinstance(tag, str) and tag else value
        if isinstance(value, dict):
            inner = error_text(value)
            if inner:
                return inner
    data = body.get("data")
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        name = body.get("name")
        return f"{name}: {data['message']}" if isinstance(name, str) else data["message"]
    name = body.get("_tag") or body.get("name")
    return name if isinstance(name, str) else None


class SseStream:
    """One Server-Sent Events stream (``GET path``) and its reader thread.

    Threads: the reader thread (named ``name``) connects, reads and calls ``on_events(batch)``
    once per chunk read from the socket (every complete event in it, in order, each ``data:``
    payload decoded with msgspec; ``decode`` replaces the decoder), ``on_status`` for each
    connection change and ``on_warning`` for a bad event. Keep the callbacks short (``tell``).
    After the stream ends or fails it reconnects, waiting ``backoff_base * 2**(n-1)`` seconds
    (jittered, at most ``backoff_cap``) before attempt ``n``; a connection that delivered
    events resets ``n``. SSE comments (``:`` lines, heartbeats) are ignored. :meth:`close`
    (any thread) shuts the socket down, so the reader wakes at once, and joins it.
    """

    def __init__(self, transport: HttpTransport, path: str, *, on_events: Callable[[list[Any]], None],
                 on_status: Callable[[SseStatus], None] | None = None, on_warning: WarningSink | None = None,
                 name: str = "sse", decode: Callable[[bytes], Any] | None = None, backoff_base: float = 0.2,
                 backoff_cap: float = 5.0, max_event_bytes: int = 16 * 1024 * 1024,
                 read_timeout: float | None = None) -> None:
        self._transport = transport
        self._path = path
        self._on_events = on_events
        self._on_status = on_status
        self._on_warning = on_warning
        self._decode = decode or _decode_json
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._max_event = max_event_bytes
        self._read_timeout = read_timeout
        self._stop = threading.Event()
        self._wake = threading.Event()  # cuts a backoff wait short (reconnect, close)
        self._sock_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._response: Any = None
        self.connected = threading.Event()
        """Set while a connection is open (the 200 headers arrived)."""
        self.req: int | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    @property
    def transport(self) -> HttpTransport:
        return self._transport

    def start(self) -> None:
        self._thread.start()

    def wait_connected(self, timeout: float) -> bool:
        return self.connected.wait(timeout)

    def reconnect(self) -> None:
        """Drop the current connection, or cut a backoff wait short: the reader reconnects at
        once, to the transport's current origin. Thread-safe."""
        self._wake.set()
        self._shutdown_socket()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the reader thread (idempotent; thread: any but the reader's)."""
        self._stop.set()
        self._wake.set()
        self._shutdown_socket()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _shutdown_socket(self) -> None:
        with self._sock_lock:
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # reader thread ---------------------------------------------------------------------------

    def _status(self, status: SseStatus) -> None:
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception:
                log.exception("on_status callback failed")

    def _warn(self, code: str, message: str, detail: dict[str, Any]) -> None:
        warn(self._on_warning, code, message, detail)

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            attempt += 1
            self._wake.clear()
            try:
                delivered = self._connect_once(attempt)
                detail = "the server ended the event stream"
            except Exception as exc:  # noqa: BLE001 - any failure of one connection means: reconnect
                delivered = False
                detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self.connected.clear()
            if self._stop.is_set():
                break
            if delivered:
                attempt = 1
            delay = min(self._backoff_cap, self._backoff_base * 2 ** (attempt - 1)) * random.uniform(0.8, 1.2)
            self._status(SseStatus(state="disconnected", attempt=attempt, detail=detail, retry_in=round(delay, 3)))
            if self._wake.wait(delay):
                self._wake.clear()
                attempt = 0
        self.connected.clear()
        self._status(SseStatus(state="closed"))

    def _connect_once(self, attempt: int) -> bool:
        transport = self._transport
        req = transport.next_req()
        self.req = req
        transport._tap_out(req, "GET", self._path, None)
        with transport._lock:
            client = transport._client
        timeout = httpx.Timeout(transport._timeout, connect=transport._connect_timeout, read=self._read_timeout)
        with client.stream("GET", self._path, headers={"Accept": "text/event-stream", "Cache-Control": "no-cache"},
                           timeout=timeout) as response:
            transport._tap_in({"http": "response", "req": req, "status": response.status_code, "stream": True})
            if response.status_code != 200:
                response.read()
                raise RequestError(f"GET {self._path}", response.status_code,
                                   error_text(_safe_json(response.content)) or f"HTTP {response.status_code}")
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            with self._sock_lock:
                self._sock = sock
            try:
                if self._stop.is_set():
                    return False
                self.connected.set()
                self._status(SseStatus(state="connected", attempt=attempt))
                return self._read(response, req)
            finally:
                with self._sock_lock:
                    self._sock = None

    def _read(self, response: Any, req: int) -> bool:
        # SSE framing (WHATWG "event stream interpretation"), on bytes: an event is its
        # `data:` lines joined by \n, dispatched at a blank line; `:` lines are comments
        # (heartbeats); `event:`, `id:` and `retry:` are not used by OpenCode (protocol notes
        # section 3: only `data: {json}` lines) and are ignored. httpx-sse's public iterator
        # yields one event at a time, which would cost one tell per event instead of per read.
        decode = self._decode
        tap = self._transport._tap
        limit = self._max_event
        pending = b""
        data: list[bytes] = []
        size = 0
        skipping = False
        delivered = False
        for chunk in response.iter_raw():
            if self._stop.is_set():
                break
            lines = (pending + chunk if pending else chunk).split(b"\n")
            pending = lines.pop()
            if len(pending) > limit:
                skipping, pending, data, size = True, b"", [], 0
            batch: list[Any] = []
            for line in lines:
                if line.endswith(b"\r"):
                    line = line[:-1]
                if not line:
                    if skipping:
                        skipping = False
                        self._warn("sse.event_too_long", f"an event of the stream {self._path} is longer than "
                                   f"{limit} bytes; it was skipped", {"limit": limit})
                    elif data:
                        payload = data[0] if len(data) == 1 else b"\n".join(data)
                        data, size = [], 0
                        try:
                            event = decode(payload)
                        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                            self._warn("sse.malformed_event", f"the stream {self._path} sent an event that is not "
                                       f"valid JSON ({exc}); it was skipped",
                                       {"data": payload[:200].decode("utf-8", "replace")})
                            continue
                        if tap is not None:
                            tap.on_inbound(b'{"http":"event","req":%d,"data":%s}' % (req, payload))
                        batch.append(event)
                    continue
                if skipping or line[:1] == b":":
                    continue
                field, _, value = line.partition(b":")
                if field == b"data":
                    value = value[1:] if value[:1] == b" " else value
                    size += len(value)
                    if size > limit:
                        skipping, data, size = True, [], 0
                    else:
                        data.append(value)
            if batch:
                delivered = True
                try:
                    self._on_events(batch)
                except Exception:
                    log.exception("on_events callback failed")
        return delivered


def _safe_json(raw: bytes) -> Any:
    try:
        return _decode_json(raw) if raw else None
    except msgspec.DecodeError:
        return raw.decode("utf-8", "replace")
