"""Pipe plumbing for ProcessActor: the bounded line splitter, the stdout reader loop, the stderr
ring buffer and the bounded stdin writer."""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Callable
from typing import IO

from paddock.contract import OperationTimeout, ProcessError

__all__ = ["COALESCE_BELOW", "LineSplitter", "StderrRing", "StdinWriter", "read_stderr", "read_stdout_lines"]

COALESCE_BELOW = 16 * 1024
"""A read shorter than this (bytes) is followed by the ``coalesce`` wait, when one is set."""

log = logging.getLogger("paddock.actors")

LinesSink = Callable[[list[bytes]], None]


class LineSplitter:
    """Splits a byte stream into lines (without the ``\\n``) holding at most ``max_line_bytes``
    of an unfinished line. A longer line is dropped while it streams past (nothing of it is kept)
    and reported once, when it ends, through ``on_overlong(length)``. Not thread-safe: one
    reader thread owns it."""

    __slots__ = ("_buf", "_max", "_on_overlong", "_skipped")

    def __init__(self, max_line_bytes: int, on_overlong: Callable[[int], None]) -> None:
        self._max = max_line_bytes
        self._on_overlong = on_overlong
        self._buf = bytearray()
        self._skipped = -1  # >= 0: inside an over-long line, this many bytes dropped so far

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        size = len(chunk)
        if self._skipped >= 0:
            nl = chunk.find(b"\n")
            if nl < 0:
                self._skipped += size
                return lines
            self._on_overlong(self._skipped + nl)
            self._skipped = -1
            start = nl + 1
        elif self._buf:
            nl = chunk.find(b"\n")
            if nl < 0:
                if len(self._buf) + size > self._max:
                    self._skipped = len(self._buf) + size
                    self._buf = bytearray()
                else:
                    self._buf += chunk
                return lines
            length = len(self._buf) + nl
            if length > self._max:
                self._on_overlong(length)
            else:
                self._buf += chunk[:nl]
                lines.append(bytes(self._buf))
            self._buf = bytearray()
            start = nl + 1
        limit = self._max
        parts = (chunk[start:] if start else chunk).split(b"\n")
        tail = parts.pop()
        if parts and max(map(len, parts)) <= limit:
            # the common case: bytes.split in C, one length check for the whole chunk
            lines += parts
            start = size - len(tail)
        find = chunk.find
        while True:
            nl = find(b"\n", start)
            if nl < 0:
                break
            if nl - start > limit:
                self._on_overlong(nl - start)
            else:
                lines.append(chunk[start:nl])
            start = nl + 1
        if start < size:
            rest = size - start
            if rest > limit:
                self._skipped = rest
            else:
                self._buf = bytearray(chunk[start:])
        return lines

    def finish(self) -> list[bytes]:
        """At EOF: the unterminated last line, if any (an over-long one is reported)."""
        if self._skipped >= 0:
            self._on_overlong(self._skipped)
            self._skipped = -1
            return []
        if self._buf:
            line, self._buf = bytes(self._buf), bytearray()
            return [line]
        return []


def read_stdout_lines(
    pipe: IO[bytes],
    splitter: LineSplitter,
    sink: LinesSink,
    chunk_bytes: int,
    coalesce: float = 0.0,
) -> None:
    """Reader-thread body: read big chunks until EOF, hand each chunk's lines to ``sink`` in
    one call. A failing sink is logged, never fatal to the stream.

    ``coalesce`` > 0: after a read that returned less than :data:`COALESCE_BELOW` bytes, wait
    that many seconds before the next read, so that a child writing one small line per
    ``write`` (the Codex app-server: one line per streamed delta) is read in batches instead
    of one syscall, one split and one hand-off per line. It delays a line by at most
    ``coalesce`` seconds and never while data keeps arriving in big reads."""
    read = pipe.read
    while True:
        try:
            chunk = read(chunk_bytes) or b""
        except (OSError, ValueError):
            chunk = b""
        lines = splitter.feed(chunk) if chunk else splitter.finish()
        if lines:
            try:
                sink(lines)
            except Exception:
                log.exception("on_lines callback failed; the stream continues")
        if not chunk:
            _close(pipe)
            return
        if coalesce and len(chunk) < COALESCE_BELOW:
            time.sleep(coalesce)


def _close(pipe: IO[bytes]) -> None:
    try:
        pipe.close()
    except OSError:
        pass


class StderrRing:
    """The last ``capacity`` bytes written to stderr (thread-safe)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._buf = bytearray()
        self._lock = threading.Lock()

    def append(self, data: bytes) -> None:
        with self._lock:
            self._buf += data
            excess = len(self._buf) - self._capacity
            if excess > 0:
                del self._buf[:excess]

    def tail(self) -> str:
        with self._lock:
            return self._buf.decode("utf-8", "replace")


def read_stderr(
    pipe: IO[bytes],
    ring: StderrRing,
    on_chunk: Callable[[bytes], None] | None = None,
    chunk_bytes: int = 65536,
) -> None:
    """Reader-thread body for stderr: keep the tail in ``ring`` (and show each chunk to
    ``on_chunk``) until EOF."""
    while True:
        try:
            chunk = pipe.read(chunk_bytes)
        except (OSError, ValueError):
            chunk = b""
        if not chunk:
            _close(pipe)
            return
        ring.append(chunk)
        if on_chunk is not None:
            try:
                on_chunk(chunk)
            except Exception:
                log.exception("on_stderr callback failed")


class StdinWriter:
    """A bounded, ordered writer in front of a child's stdin.

    The pipe is non-blocking. A write that finds nothing queued goes to the pipe at once, on
    the calling thread (one ``os.write``; no hand-off, no wake-up of another thread); whatever
    the pipe does not take, and every write made while bytes are still queued, is queued for
    the writer thread, which waits for the pipe to drain. Bytes reach the child in the order
    the writes were made.

    ``write``/``write_lines`` never block longer than their ``timeout`` (default: not at all):
    when more than ``max_pending_bytes`` wait, they raise :class:`OperationTimeout`, so a child
    that stops reading cannot block the caller. ``on_line(line)`` (the transcript tap) is called
    for every line just before it is written, in write order: on the calling thread for a direct
    write, else on the writer thread. After the pipe breaks or :meth:`close`, writes raise
    :class:`ProcessError`.
    """

    def __init__(
        self,
        pipe: IO[bytes],
        *,
        name: str,
        max_pending_bytes: int,
        on_line: Callable[[bytes], None] | None = None,
    ) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)
        self._name = name
        self._max = max_pending_bytes
        self._on_line = on_line
        self._items: list[tuple[bytes, bool]] = []
        self._pending = 0  # bytes queued or being written by the writer thread
        self._closing = False
        self._broken: str | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"stdin-{name}", daemon=True)
        self._thread.start()

    def write(self, data: bytes, *, timeout: float = 0.0) -> None:
        """Queue raw bytes (no tap). Thread: any."""
        self._put([(data, False)], len(data), timeout)

    def write_lines(self, lines: list[bytes], *, timeout: float = 0.0) -> None:
        """Queue lines (each gets a ``\\n``; the tap sees each line without it). Thread: any."""
        self._put([(line, True) for line in lines], sum(len(x) + 1 for x in lines), timeout)

    def _put(self, items: list[tuple[bytes, bool]], size: int, timeout: float) -> None:
        with self._cond:
            if self._pending and self._pending + size > self._max:
                self._cond.wait_for(
                    lambda: self._broken or self._closing or self._pending + size <= self._max,
                    timeout,
                )
            if self._broken or self._closing:
                raise ProcessError(
                    f"Cannot write to the stdin of {self._name!r}: {self._broken or 'closed'}"
                )
            if self._pending and self._pending + size > self._max:
                raise OperationTimeout(f"writing to the stdin of {self._name!r}", timeout)
            if self._pending:
                self._items.extend(items)
                self._pending += size
                self._cond.notify_all()
                return
            # Nothing queued: write here, under the lock that orders every write.
            data = self._join(items)
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self._abort_locked(exc.strerror or str(exc))
                raise ProcessError(
                    f"Cannot write to the stdin of {self._name!r}: {self._broken}"
                ) from None
            if written < len(data):
                rest = data[written:]
                self._items.append((rest, False))
                self._pending += len(rest)
                self._cond.notify_all()

    def _join(self, items: list[tuple[bytes, bool]]) -> bytes:
        """The bytes of ``items``, after showing each line to the tap (lock held or writer thread)."""
        tap = self._on_line
        if len(items) == 1 and not items[0][1]:
            return items[0][0]
        parts: list[bytes] = []
        for data, is_line in items:
            if is_line:
                if tap is not None:
                    try:
                        tap(data)
                    except Exception:
                        log.exception("outbound tap failed")
                parts.append(data)
                parts.append(b"\n")
            else:
                parts.append(data)
        return b"".join(parts)

    def reader_gone(self) -> str | None:
        """Why nothing written now can reach the child, or ``None``: the pipe broke or was
        closed here, or no process holds its read end any more (the child exited, or closed
        its stdin), which a non-blocking ``poll`` of the write end reports as ``POLLERR``
        before any write fails. Thread: any; one ``poll`` syscall."""
        with self._cond:
            if self._broken or self._closing:
                return self._broken or "closed"
            try:
                poller = select.poll()
                poller.register(self._fd, select.POLLOUT)
                ready = poller.poll(0)
            except (OSError, ValueError) as exc:
                return getattr(exc, "strerror", None) or str(exc)
        if any(mask & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _, mask in ready):
            return "the reading end of the pipe is closed"
        return None

    def close(self) -> None:
        """Close stdin once what is queued has been written. Thread: any; does not block."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()

    def abort(self, reason: str) -> None:
        """Drop what is queued and refuse further writes (the child is gone)."""
        with self._cond:
            self._abort_locked(reason)

    def _abort_locked(self, reason: str) -> None:
        self._broken = self._broken or reason
        self._items = []
        self._pending = 0
        self._closing = True
        self._cond.notify_all()

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        try:
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: self._items or self._closing)
                    items, self._items = self._items, []
                    if not items and self._closing:
                        return
                    # The tap runs under the lock so that it sees lines in write order.
                    data = self._join(items)
                view = memoryview(data)
                try:
                    while view:
                        try:
                            view = view[os.write(self._fd, view) :]
                        except BlockingIOError:
                            poller.poll(200)  # wake now and then to notice an abort
                            if self._broken:
                                return
                except (OSError, ValueError) as exc:
                    self.abort(getattr(exc, "strerror", None) or str(exc))
                    return
                with self._cond:
                    if not self._broken:
                        self._pending -= len(data)
                    self._cond.notify_all()
        finally:
            _close(self._pipe)
