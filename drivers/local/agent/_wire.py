"""The agent's stdout: JSON-RPC lines through one buffer and one writer thread.

Every thread may call :meth:`Wire.send`; lines keep the order of the calls. A dedicated writer
thread does the blocking ``os.write`` calls, so the stdin reader never blocks on a slow client
(no pipe deadlock when the client writes to us while we write to it). Producers other than the
reader are throttled once more than :data:`BACKLOG_LIMIT` bytes wait to be written.

Line mode (default) hands every line to the writer at once. Buffered mode keeps lines until
:data:`FLUSH_AT` bytes are waiting or a caller asks for a flush (the agent flushes after every
response, before every request that waits for an answer, and before every pause).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:  # the agent imports nothing of the runtime at run time
    from paddock.contract import JsonObject, JsonValue

__all__ = ["BACKLOG_LIMIT", "FLUSH_AT", "Wire"]

FLUSH_AT = 64 * 1024
BACKLOG_LIMIT = 4 * 1024 * 1024


class Pending:
    """A JSON-RPC request awaiting its answer (to the client, or to an MCP server): completed by
    the reader that sees the answer, or woken by a cancelled turn (:meth:`cancel`)."""

    __slots__ = ("req_id", "event", "result", "error", "cancelled")

    def __init__(self, req_id: int | None = None) -> None:
        self.req_id = req_id
        self.event = threading.Event()
        self.result: JsonValue = None
        self.error: JsonValue = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.event.set()


class Wire:
    """Ordered, thread-safe JSON-RPC line output on a file descriptor."""

    def __init__(self, fd: int = 1, *, buffered: bool = False) -> None:
        self._fd = fd
        self._buffered = buffered
        self._encoder = msgspec.json.Encoder()
        self._cv = threading.Condition(threading.Lock())
        self._buf = bytearray()
        self._kick = False
        self._queued = 0  # bytes ever appended
        self._written = 0  # bytes ever written (or dropped after the pipe broke)
        self._broken = False
        self._thread = threading.Thread(target=self._run, name="wire-writer", daemon=True)
        self._thread.start()

    # -- producers (any thread) -------------------------------------------------------------

    def send(self, msg: JsonObject, *, flush: bool = False, throttle: bool = True) -> None:
        """Encode ``msg`` as one line. ``throttle=False`` is for the stdin reader thread."""
        with self._cv:
            buf = self._buf
            self._encoder.encode_into(msg, buf, -1)
            buf += b"\n"
            self._after_append(flush, throttle)

    def send_chunk(self, prefix: bytes, text: str, suffix: bytes) -> None:
        """Append ``prefix + json(text) + suffix`` (a pre-encoded line around one string)."""
        with self._cv:
            buf = self._buf
            buf += prefix
            self._encoder.encode_into(text, buf, -1)
            buf += suffix
            self._after_append(False, True)

    def send_raw(self, lines: bytes | bytearray, *, flush: bool = False) -> None:
        """Append complete, already encoded lines (a producer's batch, or ``@garbage``)."""
        with self._cv:
            self._buf += lines
            self._after_append(flush, True)

    def encode(self, obj: JsonValue) -> bytes:
        """JSON-encode ``obj`` with the shared encoder (safe from any thread)."""
        with self._cv:
            return self._encoder.encode(obj)

    def flush(self) -> None:
        """Hand everything appended so far to the writer thread (does not wait for the write)."""
        with self._cv:
            if self._buf:
                self._kick = True
                self._cv.notify_all()

    def flush_and_wait(self, *, timeout: float = 5.0) -> bool:
        """Flush and block until everything appended so far is written; False on timeout."""
        with self._cv:
            target = self._queued + len(self._buf)
            if self._buf:
                self._kick = True
                self._cv.notify_all()
            return self._cv.wait_for(lambda: self._written >= target or self._broken, timeout)

    def _after_append(self, flush: bool, throttle: bool) -> None:
        # Caller holds self._cv.
        size = len(self._buf)
        if flush or not self._buffered or size >= FLUSH_AT:
            self._kick = True
            self._cv.notify_all()
        if throttle and size >= BACKLOG_LIMIT and not self._broken:
            self._cv.wait_for(lambda: len(self._buf) < BACKLOG_LIMIT or self._broken)

    # -- writer thread ----------------------------------------------------------------------

    def _run(self) -> None:
        fd = self._fd
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._kick and self._buf)
                data = self._buf
                self._buf = bytearray()
                self._queued += len(data)
                self._kick = False
                self._cv.notify_all()
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as exc:
                # The client went away: nobody reads our output any more.
                print(f"paddock-local: stdout closed ({exc}); exiting", file=sys.stderr, flush=True)
                with self._cv:
                    self._broken = True
                    self._written = self._queued
                    self._cv.notify_all()
                os._exit(0)
            with self._cv:
                self._written += len(data)
                self._cv.notify_all()
