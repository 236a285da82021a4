"""Running the server: bind a unix socket (0600) or a loopback TCP port with a bearer token, open
one Runtime, serve it with uvicorn, and close it in order on SIGTERM, SIGINT or SIGHUP.

Thread map: the main thread opens the Runtime and runs the asyncio loop (uvicorn, every handler,
the signal handlers); Runtime calls run in the AsyncRuntime's executor threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import secrets
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

from paddock._operations._wire import ENDPOINT_FILE, SOCKET_NAME, TOKEN_FILE, Endpoint, read_endpoint
from paddock.contract import ConfigError, PaddockError

__all__ = ["SOCKET_PATH_MAX", "parse_listen", "serve"]

SOCKET_PATH_MAX = 107
"""Linux ``sun_path`` holds 108 bytes with the terminating NUL."""
GRACEFUL_SECONDS = 3
"""How long uvicorn waits for responses in flight at shutdown before it cancels them."""
STALLED_SECONDS = 1.5
"""At shutdown, after the runtime closed: how long a response still being written may take
before its connection is aborted (a client that stopped reading); under GRACEFUL_SECONDS."""


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port). Only loopback addresses are accepted: the API can run
    commands on this machine, and the token is its only guard."""
    host, sep, port_text = listen.rpartition(":")
    host = host.strip("[]")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(None, f"--listen must be HOST:PORT (for example 127.0.0.1:8765), got {listen!r}")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(None, f"--listen {listen!r} is not a loopback address; paddock serve listens on 127.0.0.1 or ::1 only")
    return host, int(port_text)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


def _bind_unix(path: Path) -> socket.socket:
    if len(os.fsencode(path)) > SOCKET_PATH_MAX:
        raise ConfigError(
            None,
            f"the socket path {str(path)!r} is longer than {SOCKET_PATH_MAX} bytes; "
            "use a shorter --state-dir or --listen 127.0.0.1:PORT",
        )
    if path.exists() or path.is_symlink():
        if _answers(path):
            raise ConfigError(None, f"a paddock server already listens on {path}; it owns this state directory")
        path.unlink()  # a crashed server's leftover
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket is born 0600: no window in which others may connect
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(512)
    sock.setblocking(False)
    return sock


def _answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(None, f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(512)
    sock.setblocking(False)
    return sock


@contextlib.contextmanager
def _listener(state_dir: Path, listen: str | None) -> Iterator[tuple[socket.socket, Endpoint, str | None]]:
    """The bound socket, the endpoint to record, and the token (TCP). Removes the socket, the
    endpoint and token files at exit."""
    token = None
    created: list[Path] = []
    previous = read_endpoint(state_dir)
    if previous is not None and previous.pid != os.getpid() and _pid_alive(previous.pid) and (
        previous.url or (previous.socket and _answers(Path(previous.socket)))
    ):
        where = previous.url or f"unix:{previous.socket}"
        raise ConfigError(None, f"a paddock server (pid {previous.pid}) already listens on {where}; it owns this state directory")
    if listen is None:
        path = state_dir / SOCKET_NAME
        sock = _bind_unix(path)
        created.append(path)
        endpoint = Endpoint(pid=os.getpid(), socket=str(path))
    else:
        host, port = parse_listen(listen)
        sock = _bind_tcp(host, port)
        token = secrets.token_urlsafe(32)
        _write_private(state_dir / TOKEN_FILE, token.encode() + b"\n")
        created.append(state_dir / TOKEN_FILE)
        bound = sock.getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        endpoint = Endpoint(pid=os.getpid(), url=f"http://{shown}:{bound[1]}")
    try:
        yield sock, endpoint, token
    finally:
        sock.close()
        current = read_endpoint(state_dir)
        if current is not None and current.pid == os.getpid():
            created.append(state_dir / ENDPOINT_FILE)
        for p in created:
            with contextlib.suppress(OSError):
                p.unlink()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def serve(
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    state_dir: str | os.PathLike[str] | None = None,
    listen: str | None = None,
    on_ready: Callable[[Endpoint], None] | None = None,
    close_timeout: float = 10.0,
    metrics: bool = True,
) -> int:
    """Serve one Runtime until SIGTERM, SIGINT or SIGHUP; returns the exit status (0 after an
    orderly close). Runs in the main thread. ``on_ready`` runs (in the loop's thread) once the
    server accepts connections and ``state_dir/server.json`` names it. ``metrics`` serves
    Prometheus metrics at ``/metrics`` (:mod:`paddock.server._metrics`).

    Raises :class:`ConfigError` for a non-loopback ``listen``, a busy socket or port, and what
    :meth:`paddock.Runtime.open` raises.
    """
    import uvicorn

    from paddock import Runtime
    from paddock._aio_runtime import AsyncRuntime
    from paddock.server._app import build_app

    folder = Path(state_dir or os.environ.get("PADDOCK_STATE_DIR") or ".paddock").resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(str(folder), f"the state directory cannot be created: {exc}") from None
    with _listener(folder, listen) as (sock, endpoint, token):
        runtime = Runtime.open(config, state_dir=folder)
        executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="paddock-serve")
        arun = AsyncRuntime(runtime, executor)
        collector = None
        try:
            if metrics:
                from paddock.server._metrics import TYPES, MetricsCollector

                hub = runtime._hub
                ledger = runtime._ledger
                collector = MetricsCollector(lambda: runtime.subscribe(types=TYPES), last_seq=lambda: hub.last_seq,
                                             log_path=hub.log_path, usage=lambda: ledger.report())
                collector.start()
            app = build_app(arun, token=token, transport="unix" if endpoint.socket else "tcp", metrics=collector)
            server = _uvicorn_server(uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=GRACEFUL_SECONDS,
                timeout_keep_alive=30, ws="none", http="h11",
            ))
            asyncio.run(_run(server, sock, folder, endpoint, on_ready, runtime, close_timeout))
        finally:
            try:
                runtime.close(timeout=close_timeout)
            finally:
                executor.shutdown(wait=False)
                if collector is not None:
                    collector.close()
    return 0


def _uvicorn_server(config: Any) -> Any:
    """A uvicorn Server without its own signal handling: ours closes the Runtime first, and
    uvicorn's would re-raise the signal after its shutdown instead of letting serve() return."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)


async def _run(server: Any, sock: socket.socket, folder: Path, endpoint: Endpoint,
               on_ready: Callable[[Endpoint], None] | None, runtime: Any, close_timeout: float) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            serving.result()  # startup failed: raise its error
            return
        await asyncio.sleep(0.01)
    _write_private(folder / ENDPOINT_FILE, msgspec.json.encode(endpoint))
    if on_ready is not None:
        on_ready(endpoint)
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
    # Orderly: close the runtime first (every session emits session.exited, which SSE clients
    # still receive; then every subscription ends and so does each stream), then stop serving.
    try:
        await loop.run_in_executor(None, lambda: runtime.close(timeout=close_timeout))
    except PaddockError as exc:
        print(f"paddock serve: closing the runtime: {exc}", file=sys.stderr)
    server.should_exit = True
    # An SSE client that stopped reading leaves its stream blocked in a write for good; uvicorn
    # would cancel it at its graceful timeout and log the task's CancelledError traceback.
    # Streams of clients that read end at once (their subscriptions ended with the runtime).
    aborting = loop.call_later(STALLED_SECONDS, _abort_connections, server)
    await serving
    aborting.cancel()
    stopped.cancel()


def _abort_connections(server: Any) -> None:
    """Drop every connection still open (thread: the loop's): each one's response then sees a
    disconnected client and ends without an error."""
    for connection in list(server.server_state.connections):
        transport = getattr(connection, "transport", None)
        if transport is not None:
            transport.abort()
