"""Read a child's output stream in the test process (not a child program itself)."""

from __future__ import annotations

import os
import select
import time
from typing import IO


def read_until(fd_or_pipe: int | IO[bytes], marker: bytes, timeout: float, data: bytes = b"", *,
               tail: int = 3000) -> bytes:
    """Read ``fd_or_pipe`` (a descriptor or a pipe) onto ``data`` until ``marker`` is in it and
    return all of it; fail the test (showing the last ``tail`` bytes) when ``timeout`` seconds
    pass first or the stream closes."""
    fd = fd_or_pipe if isinstance(fd_or_pipe, int) else fd_or_pipe.fileno()
    deadline = time.monotonic() + timeout
    while marker not in data:
        left = deadline - time.monotonic()
        assert left > 0, f"did not see {marker!r}; got {data[-tail:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            assert chunk, f"stream closed before {marker!r}; got {data[-tail:]!r}"
            data += chunk
    return data
