"""The agent side of an instance: one agent process per incarnation (:class:`AgentLink`) and the
reader-thread router that hands each session its share of every read batch.

Threads: :meth:`Router.on_batch` and the prompt done-callbacks run on the connection's stdout
reader thread and only decode and ``tell``; :meth:`AgentLink.call` blocks its caller (a session
actor, inside ``paddock.actors.blocking()`` so its dispatcher runs the other sessions meanwhile,
or the supervisor starting the agent) on the agent's answer, with a timeout;
:meth:`AgentLink.request_async` never blocks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from paddock.actors import ExitInfo, JsonRpcConnection, JsonRpcRequest, blocking
from paddock.contract import OperationTimeout, PaddockError, ProcessError, RequestError

from . import _wire as w
from ._messages import Incoming, Req

__all__ = ["AgentLink", "Router"]

log = logging.getLogger(__name__)

_SESSION_REQUESTS = frozenset({
    "session/request_permission",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
})
_MAX_UNCLAIMED_SESSIONS = 64
_MAX_UNCLAIMED_ITEMS = 4096
_sid_decoder = msgspec.json.Decoder(w.SessionIdOnly)
_note_decoder = msgspec.json.Decoder(w.SessionNotification)


class Router:
    """Routes inbound traffic of one agent process to session actors by ``sessionId``.

    Updates for a session id nobody registered yet (``session/new`` answers, then the agent
    speaks before the session actor has stored the id) are held, bounded, and handed over at
    :meth:`register`. Thread-safe; :meth:`on_batch` runs on the reader thread.
    """

    def __init__(self, reject: Callable[[JsonRpcRequest], None]) -> None:
        self._reject = reject
        self._lock = threading.Lock()
        self._sessions: dict[str, Any] = {}
        self._unclaimed: dict[str, list[Any]] = {}

    def register(self, session_id: str, ref: pykka.ActorRef[Any]) -> None:
        with self._lock:
            self._sessions[session_id] = ref
            held = self._unclaimed.pop(session_id, None)
            if held:
                try:
                    ref.tell(Incoming(held))
                except pykka.ActorDeadError:
                    pass

    def unregister(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def refs(self) -> list[Any]:
        with self._lock:
            return list(self._sessions.values())

    def on_batch(self, batch: list[Any]) -> None:
        groups: dict[str, list[Any]] = {}
        decode_note = _note_decoder.decode
        last_sid: str | None = None
        last_group: list[Any] = []
        update: w.SessionUpdate | str | Req
        for msg in batch:
            if msg.method == "session/update" and type(msg) is not JsonRpcRequest:
                try:
                    note = decode_note(msg.params)
                    sid, update = note.sessionId, note.update
                except msgspec.DecodeError:
                    try:
                        sid, update = w.decode_update_params(msg.params)
                    except msgspec.DecodeError as exc:
                        log.debug("malformed session/update skipped: %s", exc)
                        continue
            elif type(msg) is JsonRpcRequest:
                if msg.method not in _SESSION_REQUESTS:
                    log.debug("agent request %r answered -32601", msg.method)
                    self._reject(msg)
                    continue
                try:
                    sid = _sid_decoder.decode(msg.params).sessionId
                except msgspec.DecodeError:
                    sid = ""
                update = Req(msg.id, msg.method, msg.params)
            else:
                log.debug("agent notification %r ignored", msg.method)
                continue
            if sid != last_sid:
                group = groups.get(sid)
                if group is None:
                    group = groups[sid] = []
                last_sid, last_group = sid, group
            last_group.append(update)
        if not groups:
            return
        with self._lock:
            for sid, items in groups.items():
                ref = self._sessions.get(sid)
                if ref is not None:
                    try:
                        ref.tell(Incoming(items))
                        continue
                    except pykka.ActorDeadError:
                        # The session actor is being restarted; its successor re-registers.
                        del self._sessions[sid]
                held = self._unclaimed.get(sid)
                if held is None:
                    if len(self._unclaimed) >= _MAX_UNCLAIMED_SESSIONS:
                        oldest = next(iter(self._unclaimed))
                        self._drop(self._unclaimed.pop(oldest))
                    held = self._unclaimed[sid] = []
                held.extend(items)
                if len(held) > _MAX_UNCLAIMED_ITEMS:
                    self._drop(held[:-_MAX_UNCLAIMED_ITEMS])
                    del held[:-_MAX_UNCLAIMED_ITEMS]

    def _drop(self, items: list[Any]) -> None:
        for item in items:
            if type(item) is Req:
                self._reject(JsonRpcRequest(item.id, item.method, item.params))


class AgentLink:
    """One running incarnation of the agent process: its connection, its ``initialize`` answer
    and its generation number (a restarted agent gets a new link). Thread-safe."""

    def __init__(
        self,
        conn: JsonRpcConnection,
        router: Router,
        init: w.InitializeResult,
        generation: int,
        where: dict[str, str],
    ) -> None:
        self.conn = conn
        self.router = router
        self.init = init
        self.generation = generation
        self._where = where

    @property
    def exit_info(self) -> ExitInfo | None:
        """The agent's ExitInfo once it exited (set before its pending requests fail)."""
        return self.conn.process.exit_info

    def exit_detail(self) -> str:
        info = self.exit_info
        if info is None:
            return "the agent process is running"
        how = f"killed by signal {info.signal}" if info.signal else f"exit code {info.returncode}"
        return f"the agent process {info.name!r} exited ({how})"

    def register(self, session_id: str, ref: Any) -> None:
        self.router.register(session_id, ref)

    def unregister(self, session_id: str) -> None:
        self.router.unregister(session_id)

    def call(self, method: str, params: Any, *, timeout: float, thread_id: str | None = None) -> Any:
        """Send a request and wait for its raw result; errors are mapped to the PaddockError
        family naming this instance (and ``thread_id``)."""
        future = self.conn.request(method, params, timeout=timeout)
        try:
            with blocking():  # on a dispatcher worker: the pool runs other actors meanwhile
                return future.result(timeout + 1.0)
        except (PaddockError, TimeoutError) as exc:
            raise self.error_of(method, exc, timeout, thread_id) from None

    def error_of(self, method: str, exc: BaseException, timeout: float | None, thread_id: str | None) -> BaseException:
        """A request's failure as the PaddockError naming this instance (and ``thread_id``)."""
        where = {**self._where, "thread_id": thread_id}
        if isinstance(exc, RequestError):
            return RequestError(method, exc.code, exc.detail, data=exc.data, **where)
        if isinstance(exc, (OperationTimeout, TimeoutError)):
            return OperationTimeout(f"ACP {method!r}", timeout or 0.0, **where)
        if isinstance(exc, ProcessError):
            return ProcessError(exc.detail, exc.exit_code, stderr_tail=exc.stderr_tail, **where)
        return exc

    def request_async(self, method: str, params: Any, done: Callable[[Any, BaseException | None], None], *,
                      timeout: float | None = None) -> None:
        """Send a request; ``done(result, error)`` runs once on the reader thread (or at once
        if the connection is closed; on the timer thread when ``timeout`` expires first)."""
        future = self.conn.request(method, params, timeout=timeout)

        def finished(f: Any) -> None:
            error = f.exception()
            done(None if error is not None else f.result(), error)

        future.add_done_callback(finished)

    def notify(self, method: str, params: Any) -> None:
        self.conn.notify(method, params)

    def respond(self, request_id: Any, result: Any) -> None:
        self.conn.respond(request_id, result)

    def respond_error(self, request_id: Any, code: int, message: str) -> None:
        self.conn.respond_error(request_id, code, message)
