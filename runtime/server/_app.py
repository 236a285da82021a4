"""The Starlette application of ``paddock serve``: the Runtime API as HTTP, events as SSE.

Routes:

- one per operation of the table (:data:`paddock._operations._table.OPERATIONS`): a read is
  ``GET /v1/<route>`` with its arguments as query parameters, a write ``POST /v1/<route>`` with a
  JSON body; ``GET /health``;
- ``GET /v1/events``: Server-Sent Events, ``id:`` = ``seq``; ``Last-Event-ID`` (or ``from_seq``)
  replays from the durable log first, with no gap and no duplicate;
- ``GET /openapi.json``; ``GET /`` the dashboard (static, holds no data; it asks for the token);
- ``GET /metrics``: Prometheus text (:mod:`paddock.server._metrics`), behind the same token.

Handlers run on the server's event loop; every Runtime call runs in the AsyncRuntime's executor.
Errors are the PaddockError family as JSON (:func:`paddock._operations._wire.error_document`).
"""

from __future__ import annotations

import hmac
import os
import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from paddock import __version__
from paddock._aio_runtime import AsyncRuntime
from paddock._aio_subscription import AsyncSubscription
from paddock._operations._table import OPERATIONS, Operation, body_error
from paddock._operations._wire import API_PREFIX, ErrorBody, ErrorDocument, error_document
from paddock.actors import Subscription
from paddock.actors.events import END, NEEDS_IO
from paddock.server._openapi import openapi_document
from paddock.contract import MAX_PROMPT_CHARS, PaddockError, ValidationError

if TYPE_CHECKING:
    from paddock.server._metrics import MetricsCollector

__all__ = ["build_app"]

MAX_BODY = 4 * MAX_PROMPT_CHARS + 65536
"""A body larger than this is refused before it is read to the end (JSON escapes may quadruple
a prompt of MAX_PROMPT_CHARS)."""
KEEPALIVE = 15.0
"""Seconds between SSE comment lines on an idle stream (proxies and clients see it alive)."""
SSE_BATCH = 512
"""Events already in memory written as one chunk: one socket write per batch, not per event."""

_json = msgspec.json.Encoder()


def _response(value: Any, status: int = 200) -> Response:
    return Response(_json.encode(value), status_code=status, media_type="application/json")


def _error(exc: PaddockError) -> Response:
    status, doc = error_document(exc)
    return _response(doc, status)


def _plain_error(status: int, code: str, message: str) -> Response:
    return _response(ErrorDocument(error=ErrorBody(code=code, type="HTTPError", message=message)), status)


class _BearerAuth:
    """Refuses every request but the dashboard page without ``Authorization: Bearer <token>``
    (compared in constant time). The 401 says only that a token is needed."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] != "http" or (scope["path"] == "/" and scope["method"] == "GET"):
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                given = value
                break
        scheme, _, secret = given.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(secret.strip(), self.token):
            await self.app(scope, receive, send)
            return
        response = _plain_error(401, "unauthorized", "a valid bearer token is required")
        response.headers["WWW-Authenticate"] = 'Bearer realm="paddock"'
        await response(scope, receive, send)


def _call(fn: Callable[[Request], Awaitable[Any]]) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            value = await fn(request)
            return value if isinstance(value, Response) else _response(value)
        except PaddockError as exc:
            return _error(exc)
        except Exception:  # a bug of ours: say so without details to the client, log them here
            traceback.print_exc(file=sys.stderr)
            return _plain_error(500, "internal", "internal server error; see the server's log")

    return endpoint


def _int_query(request: Request, operation: str, name: str) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise body_error(operation, f"Expected `int`, got `str` - at `$.{name}`") from None


async def _read_body(request: Request, operation: str) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise ValidationError(operation, f"the body has {declared} bytes; the limit is {MAX_BODY}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise ValidationError(operation, f"the body is over {MAX_BODY} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _operation_route(rt: AsyncRuntime, op: Operation[Any]) -> Route:
    """The route of one operation: decode its body (or query), run it, answer its result."""

    async def run(request: Request) -> Any:
        if op.reads:
            body = op.from_query(request.query_params)
        else:
            body = op.decode(await _read_body(request, op.name))
        return await rt._call(op, msgspec.structs.asdict(body))

    return Route(f"{API_PREFIX}/{op.route}", _call(run), methods=[op.method])


async def _sse(sub: Subscription, streams: list[int]) -> AsyncIterator[bytes]:
    """The subscription as SSE frames. Runs on the event loop; reading the log (a replay or a
    slow client's catch-up) runs in the default executor. Ends (and closes the subscription)
    when the client goes away or the runtime closes."""
    asub = AsyncSubscription(sub)
    streams[0] += 1
    try:
        yield b": paddock events\n\n"  # the subscription exists: a client may now send its turn
        while True:
            event = await asub.get(timeout=KEEPALIVE)
            if event is None:
                if sub.ended:
                    return
                yield b": keep-alive\n\n"
                continue
            out = [_frame(event)]
            for _ in range(SSE_BATCH):
                more = sub._poll()
                if more is None or more is NEEDS_IO or more is END:
                    break
                out.append(_frame(more))
            yield b"".join(out)
    finally:
        streams[0] -= 1
        sub.close()


_encode = msgspec.json.Encoder().encode


def _frame(event: Any) -> bytes:
    # A gap warning carries seq 0: it has no id, so the client's Last-Event-ID stays where it was.
    if event.seq:
        return b"id: %d\ndata: %b\n\n" % (event.seq, _encode(event))
    return b"data: " + _encode(event) + b"\n\n"


def build_app(rt: AsyncRuntime, *, token: str | None, transport: str, metrics: MetricsCollector | None = None) -> ASGIApp:
    """The ASGI app serving ``rt``. ``token`` (TCP) makes every route but ``GET /`` need it;
    ``transport`` (``unix`` or ``tcp``) is reported by ``/health``; ``metrics`` is served at
    ``GET /metrics`` (Prometheus text)."""
    started = time.time()
    streams = [0]  # open event streams (the loop's thread only)

    async def health(request: Request) -> Any:
        return {
            "status": "ok", "version": __version__, "pid": os.getpid(), "transport": transport,
            "state_dir": str(rt.runtime.state_dir), "started_at": started, "event_streams": streams[0],
        }

    async def events(request: Request) -> Response:
        try:
            q = request.query_params
            delivery = q.get("assistant_delivery", "streaming")
            from_seq = _int_query(request, "subscribe", "from_seq")
            last = request.headers.get("last-event-id")
            if last:
                try:
                    from_seq = int(last) + 1  # resume right after the last event the client has
                except ValueError:
                    raise body_error("subscribe", "Expected `int`, got `str` - at `$.Last-Event-ID` (header)") from None
            max_buffered = _int_query(request, "subscribe", "max_buffered")
            sub = rt.runtime.subscribe(
                q.get("thread_id"), q.get("instance_id"), q.getlist("type") or None, from_seq,
                delivery,  # type: ignore[arg-type]
                max_buffered=max_buffered,
            )
        except PaddockError as exc:
            return _error(exc)
        return StreamingResponse(
            _sse(sub, streams), media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def openapi(request: Request) -> Response:
        return _response(openapi_document())

    async def dashboard(request: Request) -> Response:
        page = resources.files("paddock.server").joinpath("dashboard.html").read_bytes()
        return Response(page, media_type="text/html; charset=utf-8", headers={
            "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        })

    async def scrape(request: Request) -> Response:
        assert metrics is not None
        from paddock.server._metrics import CONTENT_TYPE

        return Response(metrics.render(), media_type=CONTENT_TYPE, headers={"Cache-Control": "no-store"})

    async def not_found(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException) and exc.status_code == 405:
            return _plain_error(405, "method_not_allowed", f"{request.method} is not allowed on {request.url.path}")
        return _plain_error(404, "not_found", f"no route {request.url.path}")

    routes = [
        Route("/", dashboard, methods=["GET"]),
        Route("/health", _call(health), methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        *(_operation_route(rt, op) for op in OPERATIONS),
        Route(f"{API_PREFIX}/events", events, methods=["GET"]),
        *([Route("/metrics", scrape, methods=["GET"])] if metrics is not None else []),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    return _BearerAuth(app, token)
