"""Issue 25 #8: a clean shutdown of ``paddock serve`` prints no traceback, also with SSE clients
that never read what they asked for."""

from __future__ import annotations

import array
import fcntl
import signal
import socket
import termios

from tests.helpers import until


def _stalled_sse_client(served) -> socket.socket:
    """An SSE client that sends its request and never reads a byte of the answer."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(str(served.state / "paddock.sock"))
    sock.sendall(b"GET /v1/events?from_seq=1 HTTP/1.1\r\nHost: paddock\r\nAccept: text/event-stream\r\n\r\n")
    return sock


def _unread(sock: socket.socket) -> int:
    """Bytes the kernel holds for ``sock`` that it never read (FIONREAD)."""
    count = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
    return count[0]


def test_sigterm_with_sse_clients_that_never_read_prints_no_traceback(make_server):
    served = make_server("unix")
    clients = [_stalled_sse_client(served) for _ in range(3)]
    try:
        rt = served.remote()
        rt.start_session("t1", instance="local-a", cwd=served.workspace)
        with rt.subscribe(thread_id="t1", types=["turn.completed"]) as sub:
            rt.send_turn("t1", "@chunks 20000\n@reply a longer answer so that the frames fill every buffer")
            assert sub.get(timeout=60) is not None
        # Each stalled stream has filled its client's receive buffer: the server's writes block now.
        until(lambda: all(_unread(sock) >= 2048 for sock in clients), timeout=30)
        rt.close()
        served.proc.send_signal(signal.SIGTERM)
        _, stderr = served.proc.communicate(timeout=30)
    finally:
        for sock in clients:
            sock.close()
    assert served.proc.returncode == 0, stderr.decode()
    assert b"Traceback" not in stderr and b"CancelledError" not in stderr, stderr.decode()
