"""A private unix-socket listener: many short-lived writers (MCP relays), one reader thread.

The socket is created 0600 inside a 0700 folder, so only this user reaches it; a writer sends
newline-terminated lines. One thread (``unix-listener``) runs a selector over the listening
socket and every accepted connection, splits what arrives into lines and hands them, per
connection, to ``on_lines``; it never waits on the consumer (``on_lines`` must only ``tell``).
"""

from __future__ import annotations

import logging
import os
import selectors
import socket
import threading
from collections.abc import Callable

from ._lines import LineSplitter

__all__ = ["UnixLineListener"]

log = logging.getLogger("paddock.actors")

_MAX_LINE = 1024 * 1024


class UnixLineListener:
    """Listens on ``path`` (a new socket, 0600; its folder must exist and be 0700). ``on_lines``
    ``(connection, lines)`` and ``on_closed(connection)`` run on the listener's thread;
    ``connection`` is an int, unique per accepted connection. :meth:`close` (any thread) stops the
    thread, closes every connection and removes the socket file."""

    def __init__(self, path: str, on_lines: Callable[[int, list[bytes]], None],
                 on_closed: Callable[[int], None] | None = None) -> None:
        self.path = path
        self._on_lines = on_lines
        self._on_closed = on_closed
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(path)
            # The folder is 0700 already; the mode is the second lock on the door.
            os.chmod(path, 0o600)
            self._sock.listen(64)
            self._sock.setblocking(False)
        except OSError:
            self._sock.close()
            raise
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._sock, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, False)
        self._next = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="unix-listener", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 2.0) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def _run(self) -> None:
        conns: dict[int, tuple[socket.socket, LineSplitter]] = {}
        try:
            while not self._closed:
                for key, _ in self._selector.select():
                    if key.data is None:
                        self._accept(conns)
                    elif key.data is False:
                        return
                    else:
                        self._read(key.data, conns)
        except Exception:  # the listener must never take the runtime down
            log.exception("the unix listener %s failed", self.path)
        finally:
            for conn, _ in conns.values():
                conn.close()
            self._selector.close()
            self._sock.close()
            self._wake_r.close()
            self._wake_w.close()

    def _accept(self, conns: dict[int, tuple[socket.socket, LineSplitter]]) -> None:
        try:
            conn, _ = self._sock.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        self._next += 1
        number = self._next

        def overlong(size: int) -> None:
            log.warning("dropped a %d-byte line on %s", size, self.path)

        conns[number] = (conn, LineSplitter(_MAX_LINE, overlong))
        self._selector.register(conn, selectors.EVENT_READ, number)

    def _read(self, number: int, conns: dict[int, tuple[socket.socket, LineSplitter]]) -> None:
        conn, splitter = conns[number]
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            lines = splitter.feed(data)
            if lines:
                self._on_lines(number, lines)
            return
        tail = splitter.finish()
        if tail:
            self._on_lines(number, tail)
        self._selector.unregister(conn)
        conn.close()
        del conns[number]
        if self._on_closed is not None:
            self._on_closed(number)
