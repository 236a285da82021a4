"""The relay program: ``python -m paddock.drivers.mcp_relay SPEC``.

An agent is handed this command in place of an MCP server. The relay reads its 0600 spec file,
starts the real stdio server (or connects to an HTTP/SSE one, bridging it to stdio), passes
every JSON-RPC line through unchanged in both directions (for an agent that takes only HTTP MCP,
the session starts the relay itself and it serves streamable HTTP on 127.0.0.1 instead of
speaking on its stdin; see ``._http_front``), and reports to the session over its
private socket: the ``initialize`` answer, the ``tools/list`` answer and every ``tools/call`` with
its duration and error (see :mod:`._protocol`). It ends when its stdin closes (the agent let go
of the server): the server's stdin is closed, then it is terminated, then killed.

Threads: the main thread reads the agent's lines (stdin) or waits for SIGTERM (HTTP front); one
thread reads the server's lines (stdout of a stdio server; HTTP responses and streams for a
remote one). Both sides go through one :class:`Tap`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable

import msgspec

from paddock.contract import McpServer, McpStdioServer

from ._protocol import (
    Exited,
    Failed,
    Hello,
    Listening,
    RelaySpec,
    Report,
    encode_report,
)
from ._tap import Backend, Tap

__all__ = ["Reporter", "Tap", "main"]

def _log(text: str) -> None:
    print(f"paddock-mcp-relay: {text}", file=sys.stderr, flush=True)


class Reporter:
    """The private channel to the session. A relay that cannot reach it still relays (the
    session then sees no ``connected`` and warns). Thread-safe."""

    def __init__(self, path: str, token: str) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(path)
        except OSError as exc:
            _log(f"cannot reach the session's report socket: {exc}")
            self._sock.close()
            self._sock = None
        self.send(Hello(token=token, pid=os.getpid()))

    def send(self, report: Report) -> None:
        with self._lock:
            if self._sock is None:
                return
            try:
                self._sock.sendall(encode_report(report))
            except OSError:
                self._sock.close()
                self._sock = None

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


class _Out:
    """The agent's stdin (our stdout): whole lines, one writer at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def write(self, line: bytes) -> None:
        data = line if line.endswith(b"\n") else line + b"\n"
        with self._lock:
            view = memoryview(data)
            while view:
                view = view[os.write(1, view):]


class _StdioBackend:
    """The real stdio server: our child. ``to_front(line)`` gets each line it writes (on the
    ``server-out`` thread); ``gone(reason)`` runs once if it ends before :meth:`close`."""

    def __init__(self, server: McpStdioServer, to_front: Callable[[bytes], None], gone: Callable[[str], None]) -> None:
        env = dict(os.environ)
        env.update(server.env)
        # raises OSError: the caller reports it
        self._proc = subprocess.Popen([server.command, *server.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=env, cwd=server.cwd, close_fds=True)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._to_front = to_front
        self._gone = gone
        threading.Thread(target=self._pump, name="server-out", daemon=True).start()

    def _pump(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        for line in stdout:
            try:
                self._to_front(line)
            except OSError:
                break
        code = self._proc.wait()
        if not self._closing.is_set():
            self._gone(f"the server exited with code {code}" if code >= 0 else f"the server was killed by signal {-code}")

    def send(self, line: bytes) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        with self._lock:
            try:
                stdin.write(line if line.endswith(b"\n") else line + b"\n")
                stdin.flush()
            except (OSError, ValueError):
                pass  # the server is gone: _pump reports it

    def close(self) -> None:
        """Close the server's stdin (MCP's way to end a stdio server), then SIGTERM, SIGKILL."""
        self._closing.set()
        proc = self._proc
        with self._lock:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
            except OSError:
                pass
        for sig, wait in ((None, 1.0), (signal.SIGTERM, 1.0), (signal.SIGKILL, 1.0)):
            if sig is not None:
                try:
                    proc.send_signal(sig)
                except ProcessLookupError:
                    return
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def _backend(server: McpServer, to_front: Callable[[bytes], None], reporter: Reporter, tap: Tap) -> Backend | None:
    """Start or reach the real server; ``None`` (reported ``failed``) when that cannot be done."""

    def gone(reason: str) -> None:
        reporter.send(Exited(reason=reason) if tap.initialized else Failed(reason=reason))
        reporter.close()
        # The agent sees its server end, as it would without the relay.
        os._exit(0)

    if isinstance(server, McpStdioServer):
        try:
            return _StdioBackend(server, to_front, gone)
        except OSError as exc:
            reason = f"cannot start {server.command!r}: {exc.strerror or exc}"
    else:
        try:
            from ._http_bridge import HttpBridge
        except ImportError:
            reason = "bridging an HTTP MCP server needs httpx: pip install 'agent-paddock[opencode]'"
        else:
            return HttpBridge(server, to_front, lambda why: reporter.send(Failed(reason=why)))
    reporter.send(Failed(reason=reason))
    _log(reason)
    return None


def _front_stdio(server: McpServer, tap: Tap, reporter: Reporter) -> int:
    """The agent started us: its lines on our stdin, the server's on our stdout."""
    out = _Out()

    def to_agent(line: bytes) -> None:
        tap.from_server(line)
        out.write(line)

    backend = _backend(server, to_agent, reporter, tap)
    if backend is None:
        return 1
    try:
        for line in sys.stdin.buffer:
            if line.strip():
                tap.from_agent(line)
                backend.send(line)
    except OSError:
        pass
    backend.close()
    return 0


def _front_http(server: McpServer, token: str, tap: Tap, reporter: Reporter) -> int:
    """The session started us for an agent that takes only HTTP MCP: serve streamable HTTP on
    127.0.0.1 (JSON answers, no server-initiated stream) until SIGTERM."""
    from ._http_front import HttpFront

    front = HttpFront(token, tap)
    backend = _backend(server, front.from_server, reporter, tap)
    if backend is None:
        return 1
    front.backend = backend
    reporter.send(Listening(url=front.url))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    front.close()
    backend.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one relay until the agent closes its stdin; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m paddock.drivers.mcp_relay SPEC_FILE", file=sys.stderr)
        return 2
    try:
        with open(args[0], "rb") as fh:
            spec = msgspec.json.decode(fh.read(), type=RelaySpec)
    except (OSError, msgspec.DecodeError) as exc:
        _log(f"cannot read the spec file: {exc}")
        return 2
    reporter = Reporter(spec.socket, spec.token)
    tap = Tap(reporter.send)
    try:
        if spec.serve is not None:
            return _front_http(spec.server, spec.serve, tap, reporter)
        return _front_stdio(spec.server, tap, reporter)
    finally:
        reporter.close()
