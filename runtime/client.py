"""``RemoteRuntime`` and ``AsyncRemoteRuntime``: the :class:`paddock.Runtime` API over the HTTP API
of ``paddock serve``, with the same methods, arguments, result types and errors.

Needs ``httpx`` (the ``server`` or ``client`` extra). Build one with :meth:`RemoteRuntime.connect`
(finds the server that owns a state directory through ``state_dir/server.json``) or directly with
a unix ``socket`` path, or a loopback ``url`` and ``token``.

Errors: every error the server raised comes back as the same PaddockError class with the same
``str()``; a server that cannot be reached raises :class:`SessionClosedError` (``thread_id``
``None``), as a closed Runtime does, and a call that outlives its timeout
:class:`OperationTimeout`.

Events: :meth:`RemoteRuntime.subscribe` returns a :class:`RemoteSubscription`, which behaves as
:class:`paddock.Subscription` (iterator, ``get(timeout)``, ``close``, ``ended``, context manager).
Its reader thread decodes events with the contract's decoder and, when the connection drops,
reconnects with ``Last-Event-ID`` so the stream goes on with no gap and no duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket as _socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx
import msgspec

from paddock._aio_runtime import AsyncRuntimeAPI
from paddock._operations._table import Operation, SubscribeBody, plain_arguments, subscribe_arguments
from paddock._api import RuntimeAPI
from paddock._operations._wire import (
    API_PREFIX,
    Endpoint,
    ErrorDocument,
    error_from_document,
    read_endpoint,
    read_token,
)
from paddock.contract import (
    Event,
    OperationTimeout,
    PaddockError,
    SessionClosedError,
    ValidationError,
    decode_events,
)

__all__ = ["AsyncRemoteRuntime", "AsyncRemoteSubscription", "RemoteRuntime", "RemoteSubscription", "find_server"]

T = TypeVar("T")
DEFAULT_TIMEOUT = 30.0
_SLACK = 15.0  # the server enforces the operation's timeout; the HTTP read waits this much longer
RECONNECT_FOR = 10.0
"""Seconds a subscription keeps trying to reconnect after its connection dropped."""

_json = msgspec.json.Encoder()
_error_decoder = msgspec.json.Decoder(ErrorDocument)


def find_server(state_dir: str | os.PathLike[str] | None = None, *, timeout: float = 2.0) -> Endpoint | None:
    """The endpoint of the live server that owns ``state_dir`` (default ``$PADDOCK_STATE_DIR`` or
    ``./.paddock``), or ``None`` when none answers its ``/health``."""
    folder = _folder(state_dir)
    endpoint = read_endpoint(folder)
    if endpoint is None:
        return None
    try:
        with _client(endpoint, read_token(folder), timeout) as client:
            response = client.get("/health")
    except httpx.HTTPError:
        return None
    return endpoint if response.status_code == 200 else None


def _folder(state_dir: str | os.PathLike[str] | None) -> Path:
    return Path(state_dir or os.environ.get("PADDOCK_STATE_DIR") or ".paddock").expanduser().resolve()


def _client(endpoint: Endpoint, token: str | None, timeout: float | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=20)
    if endpoint.socket:
        transport = httpx.HTTPTransport(uds=endpoint.socket, limits=limits)
        return httpx.Client(transport=transport, base_url="http://paddock", headers=headers, timeout=timeout)
    return httpx.Client(base_url=endpoint.url or "", headers=headers, timeout=timeout, limits=limits,
                        transport=httpx.HTTPTransport(limits=limits))


def _resolve(state_dir: str | os.PathLike[str] | None, socket: str | None, url: str | None,
             token: str | None) -> tuple[Endpoint, str | None, Path | None]:
    if socket or url:
        return Endpoint(pid=0, socket=socket, url=url), token, None
    folder = _folder(state_dir)
    endpoint = read_endpoint(folder)
    if endpoint is None:
        raise SessionClosedError(None, f"no paddock server owns {folder} (start one with `paddock serve --state-dir {folder}`)")
    return endpoint, token or (read_token(folder) if endpoint.url else None), folder


def _where(endpoint: Endpoint) -> str:
    return f"unix:{endpoint.socket}" if endpoint.socket else str(endpoint.url)


_JSON = {"Content-Type": "application/json"}


@contextlib.contextmanager
def _transport_errors(method: str, path: str, timeout: float, endpoint: Endpoint) -> Iterator[None]:
    """Turn httpx's transport errors into the runtime's (for the sync and the async client)."""
    try:
        yield
    except httpx.TimeoutException:
        raise OperationTimeout(f"{method} {path}", timeout) from None
    except httpx.HTTPError as exc:
        raise SessionClosedError(None, f"the paddock server at {_where(endpoint)} is unreachable ({exc})") from None


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        doc = _error_decoder.decode(response.content)
    except msgspec.MsgspecError:
        raise PaddockError(f"the paddock server answered HTTP {response.status_code}") from None
    raise error_from_document(doc.error)


def _params(a: SubscribeBody) -> list[tuple[str, str | int | float | bool | None]]:
    params: list[tuple[str, str | int | float | bool | None]] = []
    if a.thread_id is not None:
        params.append(("thread_id", a.thread_id))
    if a.instance_id is not None:
        params.append(("instance_id", a.instance_id))
    if a.types is not None:
        params.extend(("type", t) for t in a.types)
    if a.from_seq is not None:
        params.append(("from_seq", str(a.from_seq)))
    if a.assistant_delivery != "streaming":
        params.append(("assistant_delivery", a.assistant_delivery))
    if a.max_buffered is not None:
        params.append(("max_buffered", str(a.max_buffered)))
    return params


class _Frames:
    """Splits the server's SSE byte stream into events; remembers the last ``id:`` seen.

    The server writes one ``data:`` line per frame (an event's JSON has no raw newline), so the
    bodies are every ``data:`` line, found in one pass per chunk; comment lines (``:``) and
    unknown fields are skipped. The bodies of a chunk are decoded as one JSON array."""

    _DATA = re.compile(rb"^data: ?(.*)$", re.M)
    _ID = re.compile(rb"^id: ?(\d+)$", re.M)

    def __init__(self) -> None:
        self._tail = b""
        self.last_id: int | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        data = self._tail + chunk if self._tail else chunk
        end = data.rfind(b"\n\n")
        if end < 0:
            self._tail = data
            return []
        self._tail = data[end + 2:]
        block = data[:end + 1]
        bodies = self._DATA.findall(block)
        last = block.rfind(b"\nid: ")
        if last >= 0 or block.startswith(b"id: "):
            found = self._ID.search(block, last + 1 if last >= 0 else 0)
            if found:
                self.last_id = int(found.group(1))
        if not bodies:
            return []
        return decode_events(b"[" + b",".join(bodies) + b"]")


class _Request(msgspec.Struct, frozen=True):
    """One operation as HTTP: its method, path, query or JSON body, and how long to wait."""

    method: str
    path: str
    params: dict[str, str] | None
    body: bytes | None
    wait: float


def _request_of(op: Operation[Any], args: Mapping[str, object]) -> _Request:
    """``op`` with a method's ``locals()`` as HTTP. Arguments left at ``None`` are not sent (the
    server's defaults are the same); a caller's folder is sent absolute."""
    fields = {k: v for k, v in plain_arguments(args).items() if v is not None}
    for name in op.local_paths:
        if name in fields:
            fields[name] = os.path.abspath(os.path.expanduser(str(fields[name])))
    timeout = fields.get("timeout")
    if isinstance(timeout, (int, float)):
        wait = timeout * op.wait_factor + _SLACK
    else:
        wait = op.wait or DEFAULT_TIMEOUT + _SLACK
    path = f"{API_PREFIX}/{op.route}"
    try:
        if op.reads:
            params = {k: v if isinstance(v, str) else _json.encode(v).decode() for k, v in fields.items()}
            return _Request(op.method, path, params, None, wait)
        return _Request(op.method, path, None, _json.encode(fields), wait)
    except TypeError as exc:
        raise ValidationError(op.name, f"cannot send as JSON: {exc}") from None


# sync ---------------------------------------------------------------------------------------------


class RemoteRuntime(RuntimeAPI):
    """The Runtime API of a ``paddock serve`` process. Thread-safe; every method blocks like the
    Runtime's and raises only PaddockErrors. Closing it closes the connections, not the server."""

    def __init__(self, *, socket: str | None = None, url: str | None = None, token: str | None = None,
                 state_dir: str | os.PathLike[str] | None = None) -> None:
        self.endpoint, self._token, folder = _resolve(state_dir, socket, url, token)
        self._http = _client(self.endpoint, self._token, DEFAULT_TIMEOUT + _SLACK)
        self._subs: set[RemoteSubscription] = set()
        self._lock = threading.Lock()
        self._closed = False
        try:
            health = self.health()  # fail now, with the server's address, when nobody answers
        except BaseException:
            self._http.close()
            raise
        self.state_dir = folder or Path(health["state_dir"])

    @classmethod
    def connect(cls, state_dir: str | os.PathLike[str] | None = None, *, socket: str | None = None,
                url: str | None = None, token: str | None = None) -> RemoteRuntime:
        """Connect to the server that owns ``state_dir`` (or at ``socket`` / ``url``); raises
        :class:`SessionClosedError` when none answers."""
        return cls(socket=socket, url=url, token=token, state_dir=state_dir)

    def _request(self, method: str, path: str, *, body: bytes | None = None, params: Any = None,
                 timeout: float | None = None) -> bytes:
        if self._closed:
            raise SessionClosedError(None, "this RemoteRuntime is closed")
        wait = timeout or DEFAULT_TIMEOUT + _SLACK
        with _transport_errors(method, path, wait, self.endpoint):
            response = self._http.request(method, path, content=body, params=params, timeout=wait,
                                          headers=_JSON if body is not None else None)
        _raise_for(response)
        return response.content

    def _call(self, op: Operation[T], args: Mapping[str, object]) -> T:
        """Run ``op`` on the server with ``args`` (a method's ``locals()``)."""
        r = _request_of(op, args)
        return msgspec.json.decode(self._request(r.method, r.path, body=r.body, params=r.params, timeout=r.wait),
                                   type=op.result)

    # the Runtime API --------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """The server's ``/health``: status, version, pid, transport, state_dir."""
        return msgspec.json.decode(self._request("GET", "/health"))

    def subscribe(
        self, thread_id: str | None = None, instance_id: str | None = None, types: Iterable[str] | None = None,
        from_seq: int | None = None, assistant_delivery: Literal["streaming", "buffered"] = "streaming", *,
        max_buffered: int | None = None,
    ) -> RemoteSubscription:
        """As :meth:`paddock.Runtime.subscribe`; returns once the server has subscribed, so every
        event published after the call is delivered."""
        a = subscribe_arguments(locals())
        if self._closed:
            raise SessionClosedError(None, "this RemoteRuntime is closed")
        sub = RemoteSubscription(self, _params(a))
        with self._lock:
            self._subs.add(sub)
        try:
            sub._open()
        except BaseException:
            sub.close()
            raise
        return sub

    def close(self, *, timeout: float = 10.0) -> None:
        """Close every subscription and connection of this client (the server keeps running)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            subs = list(self._subs)
        for sub in subs:
            sub.close()
        self._http.close()

    def _forget(self, sub: RemoteSubscription) -> None:
        with self._lock:
            self._subs.discard(sub)

    def __enter__(self) -> RemoteRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RemoteSubscription:
    """Events of ``GET /v1/events``, as :class:`paddock.Subscription` delivers them: in ``seq``
    order, each once. A reader thread (``paddock-sse``) reads the stream; :meth:`get` and
    iteration run in the caller's thread; :meth:`close` may be called from any thread."""

    def __init__(self, owner: RemoteRuntime, params: list[tuple[str, str | int | float | bool | None]]) -> None:
        self._owner = owner
        self._params = params
        self._cond = threading.Condition()
        self._batches: deque[list[Event]] = deque()  # filled by the reader thread, under _cond
        self._cur: list[Event] = []  # consumer side: the batch in hand
        self._pos = 0
        self._closed = False
        self._done = False
        self._error: PaddockError | None = None
        self._response: httpx.Response | None = None
        self._frames = _Frames()
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._read, name="paddock-sse", daemon=True)

    @property
    def ended(self) -> bool:
        """Closed, or the stream ended for good and every event it brought was taken."""
        with self._cond:
            return self._closed or (self._done and not self._batches and self._pos >= len(self._cur))

    def _open(self) -> None:
        self._thread.start()
        self._opened.wait(DEFAULT_TIMEOUT + _SLACK)
        if self._error is not None:
            raise self._error
        if not self._opened.is_set():
            raise OperationTimeout("subscribe", DEFAULT_TIMEOUT + _SLACK)

    def _connect(self) -> httpx.Response:
        params = list(self._params)
        headers = {"Accept": "text/event-stream"}
        if self._frames.last_id is not None:
            headers["Last-Event-ID"] = str(self._frames.last_id)
        request = self._owner._http.build_request("GET", f"{API_PREFIX}/events", params=params, headers=headers,
                                                  timeout=httpx.Timeout(10.0, read=None))
        response = self._owner._http.send(request, stream=True)
        if response.status_code >= 400:
            response.read()
            response.close()
            _raise_for(response)
        return response

    def _read(self) -> None:
        """Reader thread: connect, read, reconnect with Last-Event-ID until closed or gone."""
        give_up: float | None = None
        while True:
            with self._cond:
                if self._closed:
                    break
            try:
                response = self._connect()
            except PaddockError as exc:
                self._finish(exc if not self._opened.is_set() else None)
                return
            except httpx.HTTPError as exc:
                now = time.monotonic()
                if not self._opened.is_set():
                    self._finish(SessionClosedError(None, f"the paddock server at {_where(self._owner.endpoint)} is unreachable ({exc})"))
                    return
                give_up = give_up or now + RECONNECT_FOR
                if now > give_up:
                    break
                time.sleep(0.2)
                continue
            give_up = None
            with self._cond:
                self._response = response
                closed = self._closed
            if closed:
                response.close()
                break
            try:
                for chunk in response.iter_raw():
                    if not self._opened.is_set():
                        self._opened.set()
                    events = self._frames.feed(chunk)
                    if events:
                        with self._cond:
                            self._batches.append(events)
                            self._cond.notify_all()
                # the server ended the stream: the runtime closed
                response.close()
                break
            except (httpx.HTTPError, OSError, ValueError):
                # the connection dropped (or was shut by close()): reconnect from the last id
                with contextlib.suppress(Exception):
                    response.close()
                continue
            except PaddockError as exc:  # an undecodable event: end with the error
                self._finish(exc)
                return
        self._finish(None)

    def _finish(self, error: PaddockError | None) -> None:
        with self._cond:
            self._done = True
            self._error = error
            self._cond.notify_all()
        self._opened.set()
        self._owner._forget(self)

    def get(self, timeout: float | None = None) -> Event | None:
        """The next event; ``None`` when ``timeout`` passed or the subscription ended."""
        pos = self._pos
        if pos < len(self._cur) and not self._closed:  # fast path: the batch in hand, no lock
            self._pos = pos + 1
            return self._cur[pos]
        with self._cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._batches:
                if self._closed or self._done:
                    return None
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left)
            if self._closed:
                return None
            self._cur = self._batches.popleft()
        self._pos = 1
        return self._cur[0]

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        event = self.get()
        if event is None:
            raise StopIteration
        return event

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            response = self._response
            self._cond.notify_all()
        if response is not None:
            _shutdown(response)
        self._owner._forget(self)

    def __enter__(self) -> RemoteSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _shutdown(response: httpx.Response) -> None:
    # Closing a socket does not wake a thread blocked reading it; shutting it down does.
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(_socket.SHUT_RDWR)


# asyncio ------------------------------------------------------------------------------------------


class AsyncRemoteRuntime(AsyncRuntimeAPI):
    """:class:`RemoteRuntime` for asyncio hosts, with :class:`paddock.aio.AsyncRuntime`'s
    methods as coroutines. Use it from one event loop."""

    def __init__(self, *, socket: str | None = None, url: str | None = None, token: str | None = None,
                 state_dir: str | os.PathLike[str] | None = None) -> None:
        self.endpoint, self._token, self.state_dir = _resolve(state_dir, socket, url, token)
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=20)
        if self.endpoint.socket:
            self._http = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=self.endpoint.socket, limits=limits),
                                           base_url="http://paddock", headers=headers)
        else:
            self._http = httpx.AsyncClient(base_url=self.endpoint.url or "", headers=headers,
                                           transport=httpx.AsyncHTTPTransport(limits=limits))

    @classmethod
    async def connect(cls, state_dir: str | os.PathLike[str] | None = None, *, socket: str | None = None,
                      url: str | None = None, token: str | None = None) -> AsyncRemoteRuntime:
        rt = cls(socket=socket, url=url, token=token, state_dir=state_dir)
        try:
            health = await rt.health()
        except BaseException:
            await rt.close()
            raise
        if rt.state_dir is None:
            rt.state_dir = Path(health["state_dir"])
        return rt

    async def _request(self, method: str, path: str, *, body: bytes | None = None, params: Any = None,
                       timeout: float | None = None) -> bytes:
        wait = timeout or DEFAULT_TIMEOUT + _SLACK
        with _transport_errors(method, path, wait, self.endpoint):
            response = await self._http.request(method, path, content=body, params=params, timeout=wait,
                                                headers=_JSON if body is not None else None)
        _raise_for(response)
        return response.content

    async def _call(self, op: Operation[T], args: Mapping[str, object]) -> T:
        """Run ``op`` on the server with ``args`` (a method's ``locals()``)."""
        r = _request_of(op, args)
        data = await self._request(r.method, r.path, body=r.body, params=r.params, timeout=r.wait)
        return msgspec.json.decode(data, type=op.result)

    async def health(self) -> dict[str, Any]:
        return msgspec.json.decode(await self._request("GET", "/health"))

    def subscribe(
        self, thread_id: str | None = None, instance_id: str | None = None, types: Iterable[str] | None = None,
        from_seq: int | None = None, assistant_delivery: Literal["streaming", "buffered"] = "streaming", *,
        max_buffered: int | None = None,
    ) -> AsyncRemoteSubscription:
        """An async iterator of events. ``async with rt.subscribe(...) as events:`` returns once
        the server has subscribed (so every event published after it is delivered); plain
        ``async for`` connects at the first iteration."""
        return AsyncRemoteSubscription(self, _params(subscribe_arguments(locals())))

    async def close(self, *, timeout: float = 10.0) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRemoteRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncRemoteSubscription:
    """``async for event in sub`` over ``GET /v1/events``; reconnects with ``Last-Event-ID``
    like :class:`RemoteSubscription`. Use it from one event loop."""

    def __init__(self, owner: AsyncRemoteRuntime, params: list[tuple[str, str | int | float | bool | None]]) -> None:
        self._owner = owner
        self._params = params
        self._frames = _Frames()
        self._ready: deque[Event] = deque()
        self._chunks: AsyncIterator[bytes] | None = None
        self._response: httpx.Response | None = None
        self._closed = False

    async def open(self) -> AsyncRemoteSubscription:
        """Connect and wait until the server has subscribed."""
        await self._connect()
        return self

    async def _connect(self) -> None:
        headers = {"Accept": "text/event-stream"}
        if self._frames.last_id is not None:
            headers["Last-Event-ID"] = str(self._frames.last_id)
        request = self._owner._http.build_request("GET", f"{API_PREFIX}/events", params=self._params, headers=headers,
                                                  timeout=httpx.Timeout(10.0, read=None))
        try:
            response = await self._owner._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise SessionClosedError(None, f"the paddock server at {_where(self._owner.endpoint)} is unreachable ({exc})") from None
        if response.status_code >= 400:
            await response.aread()
            await response.aclose()
            _raise_for(response)
        self._response = response
        self._chunks = response.aiter_raw()
        first = await self._chunks.__anext__()  # the server's opening comment: it has subscribed
        self._ready.extend(self._frames.feed(first))

    def __aiter__(self) -> AsyncRemoteSubscription:
        return self

    async def __anext__(self) -> Event:
        give_up: float | None = None
        while not self._ready:
            if self._closed:
                raise StopAsyncIteration
            if self._chunks is None:
                try:
                    await self._connect()
                    give_up = None
                except SessionClosedError:
                    if self._frames.last_id is None:
                        raise
                    give_up = give_up or time.monotonic() + RECONNECT_FOR
                    if time.monotonic() > give_up:
                        raise StopAsyncIteration from None
                    await asyncio.sleep(0.2)
                continue
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                await self.aclose()
                raise
            except (httpx.HTTPError, OSError):
                self._chunks = None
                continue
            self._ready.extend(self._frames.feed(chunk))
        return self._ready.popleft()

    async def aclose(self) -> None:
        self._closed = True
        if self._response is not None:
            await self._response.aclose()

    async def __aenter__(self) -> AsyncRemoteSubscription:
        if self._chunks is None:
            await self._connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
