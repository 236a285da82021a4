"""Lines typed on stdin, read without blocking the event stream (``chat`` and ``run``)."""

from __future__ import annotations

import os
import select
import time

__all__ = ["LineInput"]


class LineInput:
    """Lines from a file descriptor, unbuffered by Python (so ``select`` sees every byte). Used
    from one thread (the CLI's main thread)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = b""
        self.eof = False

    def line(self, timeout: float | None) -> str | None:
        """The next line without its newline; ``None`` if none arrived within ``timeout``.
        Raises ``EOFError`` once the input ended and every line was taken."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if b"\n" in self._buf:
                head, self._buf = self._buf.split(b"\n", 1)
                return head.decode(errors="replace").rstrip("\r")
            if self.eof:
                if self._buf:
                    head, self._buf = self._buf, b""
                    return head.decode(errors="replace")
                raise EOFError
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.fd, 65536)
            if chunk:
                self._buf += chunk
            else:
                self.eof = True
