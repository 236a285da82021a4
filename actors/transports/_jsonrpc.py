"""JSON-RPC 2.0 over newline-delimited JSON on a child's stdio.

The envelope of every inbound line is decoded once, with one reused msgspec Decoder; ``params``
and ``result`` stay ``msgspec.Raw`` so the owner decodes them with its own typed decoder. A missing
``"jsonrpc"`` member is accepted (the Codex app-server leaves it out).

Warning codes passed to ``on_warning``: ``line_too_long`` (from the ProcessActor),
``jsonrpc.malformed_line`` and ``jsonrpc.unknown_response``.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import msgspec
import pykka

from paddock.contract import OperationTimeout, PaddockError, ProcessError, RequestError
from paddock.supervisors import ChildContext, request_shutdown

from ..execution import timers
from ._process import ExitInfo, ProcessActor, ProcessHandle, ProcessSpec, WarningSink, warn

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "METHOD_NOT_FOUND",
    "JsonRpcConnection",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "LineTap",
]

log = logging.getLogger("paddock.actors")

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_NULL = msgspec.Raw(b"null")

EXIT_GRACE = 2.0
"""Seconds a child whose stdin pipe broke has to report its exit before a request that could
not be written fails with the pipe's error instead of the exit's."""


class JsonRpcRequest(msgspec.Struct, frozen=True, gc=False):
    """A request from the child; answer it with ``respond``/``respond_error``/``reject``.
    ``params`` is the raw JSON (``null`` when absent)."""

    id: int | str
    method: str
    params: msgspec.Raw


class JsonRpcNotification(msgspec.Struct, frozen=True, gc=False):
    """A notification from the child. ``params`` is the raw JSON (``null`` when absent)."""

    method: str
    params: msgspec.Raw


class LineTap(Protocol):
    """Sees every line of the connection (e.g. a transcript recorder). ``on_outbound`` runs on
    the thread that writes the line (the sender's, or the stdin writer thread when the pipe was
    busy; see :class:`paddock.actors.transports._lines.StdinWriter`), in write order; ``on_inbound`` on the
    stdout reader thread; lines have no ``\\n``."""

    def on_outbound(self, line: bytes) -> None: ...

    def on_inbound(self, line: bytes) -> None: ...


class _ErrorObject(msgspec.Struct, gc=False):
    code: int = 0
    message: str = ""
    data: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


def _error_text(error: _ErrorObject) -> str:
    """The error's message plus its ``data`` detail when that is a short text: agents put the
    real cause there (qwen and codex-acp: ``message:"Internal error", data:{details:"400 …"}``)."""
    message = error.message or "no message"
    if error.data is msgspec.UNSET:
        return message
    try:
        data = msgspec.json.decode(error.data)
    except msgspec.DecodeError:
        return message
    if isinstance(data, dict):
        data = next((data[k] for k in ("details", "detail", "message", "error") if isinstance(data.get(k), str)), None)
    if isinstance(data, str) and data.strip() and data not in message:
        return f"{message}: {data.strip()[:500]}"
    return message


class _Envelope(msgspec.Struct, gc=False):
    id: int | str | None = None
    method: str | None = None
    params: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: _ErrorObject | None = None


class _OutRequest(msgspec.Struct, omit_defaults=True):
    jsonrpc: str | msgspec.UnsetType
    id: int
    method: str
    params: Any = msgspec.UNSET


class _OutNotification(msgspec.Struct, omit_defaults=True):
    jsonrpc: str | msgspec.UnsetType
    method: str
    params: Any = msgspec.UNSET


class _OutResult(msgspec.Struct):
    jsonrpc: str | msgspec.UnsetType
    id: int | str
    result: Any


def _error_data(raw: msgspec.Raw | msgspec.UnsetType) -> Any:
    """The error's ``data``, decoded (``None`` when absent or not JSON)."""
    if raw is msgspec.UNSET:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None


class _OutErrorObject(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = msgspec.UNSET


class _OutError(msgspec.Struct):
    jsonrpc: str | msgspec.UnsetType
    id: int | str | None
    error: _OutErrorObject


# The per-line Structs above hold only strings, numbers and msgspec.Raw (never a cycle), so the
# cyclic GC need not track them: one fewer tracked allocation per inbound line.
Inbound = JsonRpcRequest | JsonRpcNotification
Handler = Callable[[list[Inbound]], None]


class JsonRpcConnection:
    """A JSON-RPC 2.0 peer over one child process (a :class:`ProcessActor`). Thread-safe.

    - ``request(method, params, *, timeout=None)`` returns a ``concurrent.futures.Future`` whose
      result is the raw ``result`` (``msgspec.Raw``). It fails with :class:`RequestError` when
      the child answers with an error, :class:`OperationTimeout` after ``timeout`` seconds, and
      :class:`ProcessError` (exit code + stderr tail) when the child exits first. Futures are
      resolved on the stdout reader thread (so are their done-callbacks); a timeout fails them
      on the shared timer thread, the child's exit on its exit watcher thread.
    - ``handler(batch)`` receives the child's requests and notifications, in order, once per
      read batch (split where a response sits between them, so that a future never resolves
      before a notification the child sent earlier has been handed over), on the stdout
      reader thread. Requests it does not know must be answered with
      :meth:`reject` (-32601). Without a handler every request is rejected.
    - Malformed lines, responses to unknown ids and over-long lines are counted and reported
      through ``on_warning(code, message, detail)`` on the reader thread; never fatal.
    - ``on_exit(info)`` runs on the exit watcher thread after pending requests were failed.
    """

    _decoder = msgspec.json.Decoder(_Envelope)

    def __init__(
        self,
        *,
        name: str = "peer",
        handler: Handler | None = None,
        on_warning: WarningSink | None = None,
        on_exit: Callable[[ExitInfo], None] | None = None,
        tap: LineTap | None = None,
        jsonrpc_field: bool = True,
    ) -> None:
        self.name = name
        self.malformed_lines = 0
        self._handler = handler
        self._on_warning = on_warning
        self._on_exit = on_exit
        self._tap = tap
        self._version: str | msgspec.UnsetType = "2.0" if jsonrpc_field else msgspec.UNSET
        self._encoder = msgspec.json.Encoder()
        self._encode_lock = threading.Lock()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int | str, tuple[str, concurrent.futures.Future, Any]] = {}
        self._closed: PaddockError | None = None
        self._handle: ProcessHandle | None = None

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        spec: ProcessSpec,
        *,
        handler: Handler | None = None,
        on_warning: WarningSink | None = None,
        on_exit: Callable[[ExitInfo], None] | None = None,
        tap: LineTap | None = None,
        jsonrpc_field: bool = True,
        on_stderr: Callable[[bytes], None] | None = None,
        context: ChildContext | None = None,
        timeout: float = 30.0,
    ) -> JsonRpcConnection:
        """Start ``spec`` in a ProcessActor (supervised through ``context`` if given) and return
        the connection once the child runs (thread: caller). Raises ProcessError naming the
        command if it cannot start."""
        conn = cls(
            name=spec.label,
            handler=handler,
            on_warning=on_warning,
            on_exit=on_exit,
            tap=tap,
            jsonrpc_field=jsonrpc_field,
        )
        conn._handle = ProcessActor.open(
            spec,
            on_lines=conn._on_lines,
            on_exit=conn._on_process_exit,
            on_warning=conn._warn,
            on_outbound_line=tap.on_outbound if tap is not None else None,
            on_stderr=on_stderr,
            context=context,
            timeout=timeout,
        )
        return conn

    @property
    def process(self) -> ProcessHandle:
        assert self._handle is not None
        return self._handle

    @property
    def actor_ref(self) -> pykka.ActorRef[Any]:
        """The ProcessActor's ref (what a ``ChildSpec.start`` factory returns)."""
        return self.process.actor_ref

    # -- outbound (any thread) -----------------------------------------------------------------

    def _encode(self, message: msgspec.Struct) -> bytes:
        with self._encode_lock:
            return self._encoder.encode(message)

    def request(
        self, method: str, params: Any = None, *, timeout: float | None = None
    ) -> concurrent.futures.Future:
        """Send a request; see the class docstring for how the future resolves."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._closed is not None:
                _settle(future, error=self._closed)
                return future
            request_id = next(self._ids)
            entry = None
            if timeout is not None:
                entry = timers.schedule(
                    time.monotonic() + timeout, lambda: self._expire(request_id, timeout)
                )
            self._pending[request_id] = (method, future, entry)
        line = self._encode(
            _OutRequest(
                self._version,
                request_id,
                method,
                msgspec.UNSET if params is None else params,
            )
        )
        try:
            self.process.write_lines([line])
        except PaddockError as exc:
            self._unsent(request_id, method, exc)
        return future

    def _unsent(self, request_id: int, method: str, error: PaddockError) -> None:
        """The request could not be written. A child whose pipe broke is dead or dying (its
        exit not reported yet): the request stays pending until the exit fails it like every
        other (:meth:`_on_process_exit`: its exit code and stderr, not the pipe's errno),
        or fails with ``error`` after :data:`EXIT_GRACE` seconds when the child lives on with
        its stdin closed. Any other error (a full stdin buffer) fails it at once."""
        info = self.process.exit_info
        if info is not None:
            self._fail(request_id, info.error(f"{info.name!r} exited before {method!r}"))
        elif isinstance(error, ProcessError):
            timers.schedule(time.monotonic() + EXIT_GRACE, lambda: self._fail(request_id, error))
        else:
            self._fail(request_id, error)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (raises ProcessError if stdin is closed, OperationTimeout if the
        child stopped reading and the stdin buffer is full)."""
        self.process.write_lines(
            [
                self._encode(
                    _OutNotification(
                        self._version, method, msgspec.UNSET if params is None else params
                    )
                )
            ]
        )

    def respond(self, request_id: int | str, result: Any) -> None:
        """Answer the child's request ``request_id`` with ``result``."""
        self.process.write_lines([self._encode(_OutResult(self._version, request_id, result))])

    def respond_error(
        self, request_id: int | str | None, code: int, message: str, data: Any = None
    ) -> None:
        """Answer the child's request with an error object."""
        error = _OutErrorObject(code, message, msgspec.UNSET if data is None else data)
        self.process.write_lines([self._encode(_OutError(self._version, request_id, error))])

    def reject(self, request: JsonRpcRequest) -> None:
        """Answer an unknown request with -32601 (method not found)."""
        try:
            self.respond_error(request.id, METHOD_NOT_FOUND, f"Method not found: {request.method}")
        except PaddockError as exc:
            log.debug("could not reject %s: %s", request.method, exc)

    def close(self, deadline: float | None = None, *, timeout: float | None = None) -> None:
        """Stop the child (graceful step, SIGTERM, SIGKILL at the deadline) and fail every
        pending request. ``deadline``: a ``time.monotonic()`` value; or ``timeout`` seconds."""
        handle = self._handle
        if handle is None:
            return
        if deadline is None:
            deadline = time.monotonic() + (
                handle.spec.shutdown_timeout if timeout is None else timeout
            )
        remaining = max(0.0, deadline - time.monotonic())
        if request_shutdown(handle.actor_ref, deadline):
            if handle.wait(remaining + 2.0) is None:
                handle.terminate(0.0)
        else:
            handle.terminate(remaining)
        self._fail_all(ProcessError(f"The connection to {self.name!r} is closed"))

    # -- inbound (reader thread) ---------------------------------------------------------------

    def _on_lines(self, lines: list[bytes]) -> None:
        decode = self._decoder.decode
        tap = self._tap
        batch: list[Inbound] = []
        for line in lines:
            if tap is not None:
                try:
                    tap.on_inbound(line)
                except Exception:
                    log.exception("inbound tap failed")
            try:
                env = decode(line)
            except msgspec.DecodeError as exc:
                if not line.strip():
                    continue
                self._malformed(line, str(exc))
                continue
            if env.method is not None:
                params = _NULL if env.params is msgspec.UNSET else env.params
                if env.id is not None:
                    batch.append(JsonRpcRequest(env.id, env.method, params))
                else:
                    batch.append(JsonRpcNotification(env.method, params))
            elif env.id is not None:
                if batch:
                    self._deliver(batch)
                    batch = []
                self._resolve(env)
            else:
                self._malformed(line, "neither a request, a notification nor a response")
        if batch:
            self._deliver(batch)

    def _deliver(self, batch: list[Inbound]) -> None:
        if self._handler is not None:
            try:
                self._handler(batch)
            except Exception:
                log.exception("JSON-RPC handler of %s failed", self.name)
            return
        for message in batch:
            if isinstance(message, JsonRpcRequest):
                self.reject(message)

    def _resolve(self, env: _Envelope) -> None:
        with self._lock:
            entry = self._pending.pop(env.id, None)  # type: ignore[arg-type]
        if entry is None:
            self._warn(
                "jsonrpc.unknown_response",
                f"{self.name!r} answered an unknown request id {env.id!r}",
                {"id": env.id},
            )
            return
        method, future, timer = entry
        if timer is not None:
            timer.cancel()
        if env.error is not None:
            _settle(future, error=RequestError(method, env.error.code, _error_text(env.error),
                                               data=_error_data(env.error.data)))
        else:
            _settle(future, result=_NULL if env.result is msgspec.UNSET else env.result)

    def _malformed(self, line: bytes, why: str) -> None:
        self.malformed_lines += 1
        self._warn(
            "jsonrpc.malformed_line",
            f"{self.name!r} wrote a line that is not JSON-RPC ({why}); it was skipped",
            {"count": self.malformed_lines, "excerpt": line[:200].decode("utf-8", "replace")},
        )

    def _warn(self, code: str, message: str, detail: dict[str, Any]) -> None:
        warn(self._on_warning, code, message, detail)

    # -- failure paths -------------------------------------------------------------------------

    def _fail(self, request_id: int | str, error: BaseException) -> None:
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is not None:
            if entry[2] is not None:
                entry[2].cancel()
            if not entry[1].done():
                _settle(entry[1], error=error)

    def _expire(self, request_id: int, timeout: float) -> None:
        with self._lock:
            entry = self._pending.get(request_id)
        if entry is not None:
            self._fail(request_id, OperationTimeout(f"Request {entry[0]!r} to {self.name!r}", timeout))

    def _fail_all(self, error: PaddockError) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = error
            pending, self._pending = self._pending, {}
        for method, future, timer in pending.values():
            if timer is not None:
                timer.cancel()
            if not future.done():
                _settle(future, error=error)

    def _on_process_exit(self, info: ExitInfo) -> None:
        # Exit watcher thread; every stdout line was delivered before this runs.
        with self._lock:
            methods = sorted({m for m, _, _ in self._pending.values()})
        detail = f"{info.name!r} exited"
        if methods:
            detail += " before answering " + ", ".join(repr(m) for m in methods)
        self._fail_all(info.error(detail))
        if self._on_exit is not None:
            try:
                self._on_exit(info)
            except Exception:
                log.exception("on_exit callback failed")


def _settle(future: concurrent.futures.Future, *, result: Any = None, error: BaseException | None = None) -> None:
    """Resolve a request's future unless its caller cancelled it (then the answer is dropped:
    raising here would lose the rest of the reader's batch)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except concurrent.futures.InvalidStateError:
        pass
