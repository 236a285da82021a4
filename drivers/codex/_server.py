"""The app-server side of an instance: one ``codex app-server`` process per incarnation
(:class:`ServerLink`) and the reader-thread router that hands each session its share of every
read batch, already decoded.

Threads: :meth:`Router.on_batch` runs on the connection's stdout reader thread; it decodes each
message once (typed msgspec decoders per method) and ``tell``\\ s one :class:`Incoming` per
thread and batch. :meth:`ServerLink.call` blocks its caller (a session actor, or the supervisor
starting the server) on the answer, with a timeout.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import pykka

from paddock.actors import JsonRpcConnection, JsonRpcRequest, blocking
from paddock.contract import OperationTimeout, PaddockError, ProcessError, RequestError

from . import _wire as w
from ._translate import DELTA_STREAMS

__all__ = ["Incoming", "Note", "Req", "Router", "ServerLink"]

log = logging.getLogger(__name__)

Note = tuple[str, Any]
"""A decoded notification: ``(method, typed params)`` (a plain tuple: one per delta on the hot
path, where a dataclass's ``__init__`` costs more than the decode)."""


@dataclass(frozen=True, slots=True)
class Req:
    """A server request for one thread: its JSON-RPC id, method and raw params."""

    id: int | str
    method: str
    params: msgspec.Raw


@dataclass(frozen=True, slots=True)
class Incoming:
    """One read batch's share of one thread, in the order the server wrote it."""

    items: list[Note | Req]


_delta = msgspec.json.Decoder(w.Delta)
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {m: _delta for m in DELTA_STREAMS}
_DECODERS.update({
    "item/started": msgspec.json.Decoder(w.ItemNotification),
    "item/completed": msgspec.json.Decoder(w.ItemNotification),
    "turn/started": msgspec.json.Decoder(w.TurnNotification),
    "turn/completed": msgspec.json.Decoder(w.TurnNotification),
    "turn/diff/updated": msgspec.json.Decoder(w.TurnDiffUpdated),
    "turn/plan/updated": msgspec.json.Decoder(w.PlanUpdated),
    "thread/tokenUsage/updated": msgspec.json.Decoder(w.TokenUsageNotification),
    "error": msgspec.json.Decoder(w.ErrorNotification),
    "warning": msgspec.json.Decoder(w.WarningNotification),
    "thread/status/changed": msgspec.json.Decoder(w.ThreadStatusChanged),
    "serverRequest/resolved": msgspec.json.Decoder(w.ResolvedNotification),
})
_thread_of = msgspec.json.Decoder(w.ThreadIdOnly)
_MAX_UNCLAIMED = 1024


class Router:
    """Routes one app-server's inbound traffic to session actors by native thread id.

    Traffic for a thread nobody registered yet (``thread/started`` can come before the
    ``thread/start`` answer reaches the session) is held, bounded, and handed over at
    :meth:`register`. Notifications without a thread (``configWarning``,
    ``deprecationNotice``) are kept for the sessions to report. Thread-safe.
    """

    def __init__(self, reject: Callable[[JsonRpcRequest], None]) -> None:
        self._reject = reject
        self._lock = threading.Lock()
        self._sessions: dict[str, Any] = {}
        self._unclaimed: dict[str, list[Note | Req]] = {}
        self.instance_notes: list[tuple[str, str]] = []

    def register(self, thread_id: str, ref: Any) -> None:
        with self._lock:
            self._sessions[thread_id] = ref
            held = self._unclaimed.pop(thread_id, None)
            if held:
                try:
                    ref.tell(Incoming(held))
                except pykka.ActorDeadError:
                    pass

    def unregister(self, thread_id: str, ref: Any = None) -> None:
        with self._lock:
            if ref is None or self._sessions.get(thread_id) is ref:
                self._sessions.pop(thread_id, None)
            self._unclaimed.pop(thread_id, None)

    def refs(self) -> list[Any]:
        with self._lock:
            return list(self._sessions.values())

    def on_batch(self, batch: list[Any]) -> None:
        groups: dict[str, list[Note | Req]] = {}
        decoders = _DECODERS
        last_tid: str | None = None
        last: list[Note | Req] = []
        for msg in batch:
            method = msg.method
            if type(msg) is JsonRpcRequest:
                try:
                    ids = _thread_of.decode(msg.params)
                except msgspec.DecodeError:
                    ids = w.ThreadIdOnly()
                tid = ids.threadId or ids.conversationId
                if tid is None:
                    log.debug("app-server request %r without a thread answered -32601", method)
                    self._reject(msg)
                    continue
                item: Note | Req = Req(msg.id, method, msg.params)
            else:
                decoder = decoders.get(method)
                if decoder is None:
                    self._instance_note(method, msg.params)
                    continue
                try:
                    params = decoder.decode(msg.params)
                except msgspec.DecodeError as exc:
                    log.debug("app-server notification %r not understood: %s", method, exc)
                    continue
                tid = params.threadId
                item = (method, params)
            if tid != last_tid:
                last_tid = tid
                last = groups.setdefault(tid, [])
            last.append(item)
        if not groups:
            return
        with self._lock:
            for tid, items in groups.items():
                ref = self._sessions.get(tid)
                if ref is not None:
                    try:
                        ref.tell(Incoming(items))
                        continue
                    except pykka.ActorDeadError:
                        del self._sessions[tid]  # being restarted; its successor registers again
                held = self._unclaimed.setdefault(tid, [])
                held.extend(items)
                if len(self._unclaimed) > 64:
                    oldest = next(iter(self._unclaimed))
                    self._drop(self._unclaimed.pop(oldest))
                if len(held) > _MAX_UNCLAIMED:
                    self._drop(held[:-_MAX_UNCLAIMED])
                    del held[:-_MAX_UNCLAIMED]

    def _instance_note(self, method: str, raw: msgspec.Raw) -> None:
        if method not in ("configWarning", "deprecationNotice"):
            log.debug("app-server notification %r ignored", method)
            return
        try:
            note = msgspec.json.decode(raw)
            text = (note.get("summary") or "") if isinstance(note, dict) else ""
        except msgspec.DecodeError:
            text = ""
        with self._lock:
            if len(self.instance_notes) < 32:
                self.instance_notes.append((method, text))

    def _drop(self, items: list[Note | Req]) -> None:
        for item in items:
            if type(item) is Req:
                self._reject(JsonRpcRequest(item.id, item.method, item.params))


class ServerLink:
    """One running incarnation of the app-server: its connection, router, ``initialize`` answer,
    model catalog and generation number (a restarted server gets a new link). Thread-safe."""

    def __init__(self, conn: JsonRpcConnection, router: Router, init: w.InitializeResult, generation: int,
                 where: dict[str, str]) -> None:
        self.conn = conn
        self.router = router
        self.init = init
        self.generation = generation
        self.models: tuple[w.ModelEntry, ...] = ()
        self._where = where

    @property
    def exit_info(self) -> Any:
        """The server's ExitInfo once it exited (set before its pending requests fail)."""
        return self.conn.process.exit_info

    def exit_detail(self) -> str:
        info = self.exit_info
        if info is None:
            return "the app-server is running"
        how = f"killed by signal {info.signal}" if info.signal else f"exit code {info.returncode}"
        return f"the app-server {info.name!r} exited ({how})"

    def call(self, method: str, params: Any, *, timeout: float, thread_id: str | None = None) -> msgspec.Raw:
        """Send a request and wait for its raw result; errors become the PaddockError family
        naming this instance (and ``thread_id``)."""
        future = self.conn.request(method, params, timeout=timeout)
        try:
            with blocking():  # on a dispatcher worker: the pool runs other sessions meanwhile
                return future.result(timeout + 1.0)
        except RequestError as exc:
            raise RequestError(method, exc.code, exc.detail, **self._where, thread_id=thread_id) from None
        except ProcessError as exc:
            raise ProcessError(exc.detail, exc.exit_code, stderr_tail=exc.stderr_tail, **self._where,
                               thread_id=thread_id) from None
        except (OperationTimeout, TimeoutError):
            raise OperationTimeout(f"Codex {method!r}", timeout, **self._where, thread_id=thread_id) from None
        except PaddockError:
            raise

    def respond(self, request_id: int | str, result: Any) -> None:
        self.conn.respond(request_id, result)

    def respond_error(self, request_id: int | str, code: int, message: str) -> None:
        self.conn.respond_error(request_id, code, message)
