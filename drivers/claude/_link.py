"""The link between one CLI process and its session actor: the spawn and its ``initialize``
handshake (readiness), the wait for its MCP servers to settle, decoded stdout batches, the exit
notice."""

from __future__ import annotations

import threading
import time
from typing import Any

import msgspec
import pykka

from paddock.actors import ExitInfo, Mailbox, ProcessActor, ProcessHandle, ProcessSpec, TransportWarning
from paddock.contract import JsonObject, ProcessError
from paddock.supervisors import ChildContext

from ._wire import ControlResponse, McpStatusAnswer, Message, Response, decode_line, decode_mcp_answer

__all__ = ["Exited", "Lines", "ProcessLink"]

_encode = msgspec.json.Encoder().encode
_MCP_POLL = 0.1  # seconds between mcp_status requests while a server is still pending


class Lines:
    """A batch of decoded stdout messages, in order, and the skipped (non-JSON) lines."""

    __slots__ = ("messages", "skipped")

    def __init__(self, messages: list[Message], skipped: list[bytes]) -> None:
        self.messages = messages
        self.skipped = skipped


class Exited:
    """The CLI process ended."""

    __slots__ = ("info",)

    def __init__(self, info: ExitInfo) -> None:
        self.info = info


class ProcessLink:
    """Owned by one session incarnation. The process's reader and exit-watcher threads call
    :meth:`on_lines`, :meth:`on_exit` and :meth:`on_warning`; they decode and ``tell`` the
    session actor once per batch. Until the actor :meth:`attach`\\ es, batches are buffered (in
    order). The ``initialize`` control response is taken out of the stream and stored in
    :attr:`init_response` (then :attr:`init_done` is set; it is also set when the process exits
    first). Thread-safe."""

    def __init__(self, init_request_id: str) -> None:
        self.init_request_id = init_request_id
        self.init_done = threading.Event()
        self.init_response: Response | None = None
        self.handle: ProcessHandle | None = None  # set by the process child's start factory
        self.exit_info: ExitInfo | None = None
        self.mcp_answer: McpStatusAnswer | None = None
        """The last ``mcp_status`` answer of :meth:`await_mcp`."""
        self._mcp_prefix = f"{init_request_id}_mcp_"
        self._mcp_seq = 0
        self._mcp_done = threading.Event()
        self._exited = threading.Event()
        self._lock = threading.Lock()
        self._ref: Mailbox | None = None
        self._buffer: list[Lines | Exited | TransportWarning] = []

    # the spawn and readiness -----------------------------------------------------------------

    def start(self, spec: ProcessSpec, cctx: ChildContext, timeout: float) -> pykka.ActorRef[Any]:
        """ChildSpec factory (session scope supervisor thread): spawn the CLI and write
        ``initialize``, no waiting here (the root supervisor thread is shared by every session
        start); the caller waits for the answer in :meth:`await_ready`."""
        handle = ProcessActor.open(spec, on_lines=self.on_lines, on_exit=self.on_exit, on_warning=self.on_warning,
                                   context=cctx, timeout=timeout)
        self.handle = handle
        try:
            handle.write_lines([
                b'{"type":"control_request","request_id":"%s","request":{"subtype":"initialize","hooks":null}}'
                % self.init_request_id.encode()
            ], timeout=timeout)
        except BaseException:
            handle.terminate(2.0)
            raise
        return handle.actor_ref

    def await_ready(self, deadline: float, start_timeout: float) -> None:
        """Block the caller until the CLI answered ``initialize`` (readiness is that answer, not
        ``system/init``); raise ProcessError when it exited or refused first."""
        if not self.init_done.wait(max(0.0, deadline - time.monotonic())):
            tail = self.handle.stderr_tail()[-2048:] if self.handle is not None else ""
            raise ProcessError(f"Claude Code did not answer initialize within {start_timeout:g} s", stderr_tail=tail)
        response = self.init_response
        if response is None:
            info = self.exit_info
            if info is not None:
                raise info.error("Claude Code exited before answering initialize")
            raise ProcessError("Claude Code exited before answering initialize")
        if response.subtype != "success":
            raise ProcessError(f"Claude Code refused initialize: {response.error}")

    def await_mcp(self, deadline: float) -> None:
        """Block the caller until no MCP server of the session is ``pending`` (each connected or
        failed), asking ``mcp_status`` every :data:`_MCP_POLL` seconds, or until ``deadline``
        or the process exits; the last answer is in :attr:`mcp_answer`. Protocol fact: Claude
        Code connects MCP servers in the background and does not hold the first turn for them,
        so a turn sent at once may go to the model without their tools."""
        handle = self.handle
        while handle is not None and self.exit_info is None:
            self._mcp_seq += 1
            self._mcp_done.clear()
            request = {"type": "control_request", "request_id": f"{self._mcp_prefix}{self._mcp_seq}",
                       "request": {"subtype": "mcp_status"}}
            handle.write_lines([_encode(request)], timeout=max(0.1, deadline - time.monotonic()))
            if not self._mcp_done.wait(max(0.0, deadline - time.monotonic())):
                return
            answer = self.mcp_answer
            if answer is None or not any(s.status == "pending" for s in answer.mcpServers or ()):
                return
            if self._exited.wait(min(_MCP_POLL, max(0.0, deadline - time.monotonic()))) or time.monotonic() >= deadline:
                return

    # reader thread ---------------------------------------------------------------------------

    def on_lines(self, lines: list[bytes]) -> None:
        messages: list[Message] = []
        skipped: list[bytes] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                msg = decode_line(line)
            except msgspec.DecodeError:  # (ValidationError too: JSON that is not an object)
                # Protocol fact: the CLI may print non-JSON lines on stdout; skip them.
                skipped.append(line[:200])
                continue
            if isinstance(msg, ControlResponse):
                rid = msg.response.request_id
                if self.init_response is None and rid == self.init_request_id:
                    self.init_response = msg.response
                    self.init_done.set()
                    continue
                if rid is not None and rid.startswith(self._mcp_prefix):
                    self.mcp_answer = decode_mcp_answer(msg.response.response)
                    self._mcp_done.set()
                    continue
            messages.append(msg)
        if messages or skipped:
            self._deliver(Lines(messages, skipped))

    def on_warning(self, code: str, message: str, detail: JsonObject) -> None:
        self._deliver(TransportWarning(code, message, detail))

    # exit watcher thread ---------------------------------------------------------------------

    def on_exit(self, info: ExitInfo) -> None:
        self.exit_info = info
        self.init_done.set()
        self._mcp_done.set()
        self._exited.set()
        self._deliver(Exited(info))

    # inside the session actor (a dispatcher worker) ------------------------------------------

    def attach(self, ref: Mailbox) -> None:
        with self._lock:
            self._ref = ref
            pending, self._buffer = self._buffer, []
            for message in pending:
                ref.tell(message)

    def _deliver(self, message: Lines | Exited | TransportWarning) -> None:
        with self._lock:
            ref = self._ref
            if ref is None:
                self._buffer.append(message)
                return
            try:
                ref.tell(message)
            except Exception:  # the session actor is gone: nothing left to tell
                pass
