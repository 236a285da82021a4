"""The instance's one OpenCode server: spawned (``opencode serve``, supervised) or external, its
HTTP transport, its one event stream (``/global/event``) and the routing of events to session actors.

Threads: the SSE reader thread calls :meth:`ServerLink._on_events` (one ``tell`` per session and
read batch) and :meth:`ServerLink._on_status`; the server process's stdout reader and exit watcher
call the readiness and exit hooks; the instance supervisor's thread runs the start factory
(:meth:`ServerLink.child_spec`), which waits for the readiness line (bounded). Every public method
is thread-safe.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pykka

from paddock.actors import (
    ExitInfo,
    HttpTransport,
    LineTap,
    Mailbox,
    ProcessActor,
    ProcessHandle,
    ProcessSpec,
    SseStatus,
    SseStream,
    TransportWarning,
)
from paddock.contract import DriverError, OperationTimeout, PaddockError, ProcessError
from paddock.drivers._binary import find_binary
from paddock.drivers._registry import InstanceContext
from paddock.supervisors import ChildContext, ChildSpec, Confinement

from ._config import API_KEY_VAR, QUIET_ENV, OpencodeConfig, server_config

__all__ = [
    "READY_LINE", "ServerDown", "ServerEvents", "ServerLink", "ServerUp", "free_port", "parse_ready_url", "spawn_command",
]

log = logging.getLogger("paddock.drivers.opencode")

READY_LINE = re.compile(rb"opencode server listening on (https?://\S+)")
"""The readiness line on stdout (opencode-server.md section 1)."""


def parse_ready_url(line: bytes) -> str | None:
    """The URL of a readiness line, else ``None``."""
    match = READY_LINE.search(line)
    return match.group(1).decode("ascii", "replace").rstrip("/") if match else None


def free_port() -> int:
    # `--port 0` is not random (it takes 4096 when free): pick a free port ourselves, and still
    # read the real URL from the readiness line.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerEvents:
    """Events of one session, in stream order (told by the SSE reader thread)."""

    __slots__ = ("events",)

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events


class ServerDown:
    """The server went away: its process exited (``info``) or the event stream broke
    (``info`` is ``None``, ``detail`` says why); a restart or a reconnect may follow."""

    __slots__ = ("info", "detail")

    def __init__(self, info: ExitInfo | None, detail: str) -> None:
        self.info = info
        self.detail = detail


class ServerUp:
    """The server (re)started or the stream reconnected: calls and events work again.
    ``restarted``: a new server process (open requests of the old one are gone)."""

    __slots__ = ("generation", "restarted")

    def __init__(self, generation: int, restarted: bool) -> None:
        self.generation = generation
        self.restarted = restarted


class ServerLink:
    """Where the instance's server is and how to reach it.

    ``spawn`` is ``(argv, env, cwd)`` for spawned mode (``argv`` ends before ``--port``); ``None``
    is external mode at ``url``. :attr:`transport` is ``None`` until the server is up.
    """

    def __init__(self, *, driver: str, instance_id: str, password: str | None, request_timeout: float,
                 start_timeout: float, shutdown_timeout: float, url: str | None = None,
                 spawn: tuple[list[str], dict[str, str], str] | None = None, lease_dir: str | None = None,
                 tap: LineTap | None = None,
                 instance_warning: Callable[[str, str, dict[str, Any]], None] | None = None,
                 confinement: Confinement | None = None) -> None:
        self.driver = driver
        self.instance_id = instance_id
        self._password = password
        self._request_timeout = request_timeout
        self._start_timeout = start_timeout
        self._shutdown_timeout = shutdown_timeout
        self._external_url = url
        self._spawn = spawn
        self._lease_dir = lease_dir
        self._confinement = confinement  # the spawned server's rules, plus binding its own port
        self._tap = tap
        self._instance_warning = instance_warning  # a warning when no session is routed yet
        self._where = {"driver": driver, "instance_id": instance_id}
        self._lock = threading.Lock()
        self._routes: dict[str, Mailbox] = {}
        self.transport: HttpTransport | None = None
        self.stream: SseStream | None = None
        self.handle: ProcessHandle | None = None
        self.generation = 0
        self.up = threading.Event()
        self.version: str | None = None
        self.url: str | None = None
        self._stream_lost = False
        self._closed = False

    @property
    def spawned(self) -> bool:
        return self._spawn is not None

    # routing (any thread) --------------------------------------------------------------------

    def register(self, session_id: str, ref: Mailbox) -> None:
        with self._lock:
            self._routes[session_id] = ref

    def unregister(self, session_id: str, ref: Mailbox | None = None) -> None:
        with self._lock:
            if ref is None or self._routes.get(session_id) is ref:
                self._routes.pop(session_id, None)

    def _broadcast(self, message: object) -> None:
        with self._lock:
            refs = list(self._routes.values())
        for ref in refs:
            try:
                ref.tell(message)
            except pykka.ActorDeadError:
                pass

    # calls (any thread) ------------------------------------------------------------------------

    def require(self) -> HttpTransport:
        """The transport of a server that is up, else :class:`DriverError` (restarting/down)."""
        transport = self.transport
        if transport is None or not self.up.is_set():
            raise DriverError(self.driver, self.instance_id, "the OpenCode server is not running (it is starting or "
                              "restarting); retry when the session is ready again")
        return transport

    # the stream (SSE reader thread) ------------------------------------------------------------

    def _on_events(self, batch: list[Any]) -> None:
        per: dict[str, list[dict[str, Any]]] = {}
        for event in batch:
            if isinstance(event, dict) and isinstance(event.get("payload"), dict):
                event = event["payload"]  # /global/event wraps each event: {directory, payload}
            props = event.get("properties") if isinstance(event, dict) else None
            sid = props.get("sessionID") if isinstance(props, dict) else None
            if isinstance(sid, str):
                per.setdefault(sid, []).append(event)
        if not per:
            return  # server.*, plugin.added, catalog.*: nothing of a session
        with self._lock:
            targets = [(self._routes.get(sid), events) for sid, events in per.items()]
        for ref, events in targets:
            if ref is None:
                continue
            try:
                ref.tell(ServerEvents(events))
            except pykka.ActorDeadError:
                pass

    def _on_status(self, status: SseStatus) -> None:
        if status.state == "disconnected" and self.up.is_set() and not self._stream_lost:
            self._stream_lost = True
            self._broadcast(ServerDown(None, f"the event stream broke ({status.detail}); reconnecting"))
        elif status.state == "connected" and self._stream_lost:
            self._stream_lost = False
            if self.up.is_set():
                self._broadcast(ServerUp(self.generation, restarted=False))

    def _on_warning(self, code: str, message: str, detail: dict[str, Any]) -> None:
        # A malformed or over-long event names no session: every session reports it
        # (runtime.warning transport.<code>), so none is lost silently.
        log.warning("%s: %s", self.instance_id, message)
        with self._lock:
            routed = bool(self._routes)
        if routed:
            self._broadcast(TransportWarning(code, message, detail))
        elif self._instance_warning is not None:
            self._instance_warning("transport." + code.rsplit(".", 1)[-1], message, detail)

    # bring-up ---------------------------------------------------------------------------------

    def _come_up(self, url: str, restarted: bool) -> None:
        """Point the transport and the stream at ``url`` and wait for the stream (bounded), so
        that the first session call comes after ``GET /event`` (and none of its events is lost)."""
        deadline = time.monotonic() + self._start_timeout
        with self._lock:
            transport, stream = self.transport, self.stream
        if transport is None:
            transport = HttpTransport(url, password=self._password, timeout=self._request_timeout, tap=self._tap,
                                      where=self._where)
            # /global/event, not /event: /event carries only the events of the server's own
            # directory, and sessions live in their own cwd (POST /session?directory=...).
            stream = transport.stream("/global/event", on_events=self._on_events, on_status=self._on_status,
                                      on_warning=self._on_warning, name=f"sse-{self.instance_id}",
                                      # server.heartbeat comes every 10 s: 3 missed means a dead link
                                      read_timeout=35.0)
            with self._lock:
                self.transport, self.stream = transport, stream
        else:
            transport.retarget(url)
            assert stream is not None
            stream.reconnect()
        assert stream is not None
        if not stream.wait_connected(max(0.1, deadline - time.monotonic())):
            raise OperationTimeout("opening the OpenCode event stream", self._start_timeout, **self._where)
        self._stream_lost = False
        self.url = url
        self.generation += 1
        self.up.set()
        if restarted:
            self._broadcast(ServerUp(self.generation, restarted=True))

    def connect_external(self) -> None:
        """External mode: check ``GET /global/health``, open the stream (caller's thread)."""
        assert self._external_url is not None
        probe = HttpTransport(self._external_url, password=self._password, timeout=min(10.0, self._request_timeout),
                              where=self._where)
        try:
            health = probe.json("GET", "/global/health")
        finally:
            probe.close()
        if isinstance(health, dict) and isinstance(health.get("version"), str):
            self.version = health["version"]
        self._come_up(self._external_url, restarted=False)

    def child_spec(self, on_exit: Callable[[ExitInfo], None] | None = None) -> ChildSpec:
        """The supervised ``opencode serve`` (permanent: restarted after a crash, with the
        instance supervisor's backoff and budget)."""
        assert self._spawn is not None
        argv, env, cwd = self._spawn

        def start(cctx: ChildContext) -> pykka.ActorRef[Any]:
            # Instance supervisor thread: spawn, then wait for the readiness line (bounded by
            # start_timeout); an early exit fails the start with the stderr tail.
            restarted = self.generation > 0
            self.up.clear()
            ready = threading.Event()
            found: list[str] = []

            def on_lines(lines: list[bytes]) -> None:
                if found:
                    return
                for line in lines:
                    url = parse_ready_url(line)
                    if url is not None:
                        found.append(url)
                        ready.set()
                        return

            def exited(info: ExitInfo) -> None:
                # Exit watcher thread.
                ready.set()
                if found and not info.requested and not self._closed:
                    self.up.clear()
                    self._broadcast(ServerDown(info, _exit_text(info)))
                if on_exit is not None:
                    on_exit(info)

            port = free_port()
            spec = ProcessSpec(
                argv=(*argv, "serve", "--hostname", "127.0.0.1", "--port", str(port)), env=env, cwd=cwd,
                name=f"{self.instance_id}:opencode", owner=self.instance_id, lease_dir=self._lease_dir,
                confinement=self._confinement.widened(bind=(port,)) if self._confinement is not None else None,
                # `opencode serve` does not read stdin: the graceful step is SIGTERM to the group.
                graceful=lambda handle: None, graceful_timeout=0.0, shutdown_timeout=self._shutdown_timeout,
            )
            handle = ProcessActor.open(spec, on_lines=on_lines, on_exit=exited, context=cctx,
                                       timeout=self._start_timeout)
            if not ready.wait(self._start_timeout) or not found:
                info = handle.exit_info
                tail = handle.stderr_tail()[-4096:]
                handle.terminate(1.0)
                if info is not None:
                    raise ProcessError("opencode serve exited before it was ready", info.returncode,
                                       stderr_tail=info.stderr_tail[-4096:], driver=self.driver,
                                       instance_id=self.instance_id)
                raise ProcessError(f"opencode serve printed no readiness line within {self._start_timeout:g} s",
                                   stderr_tail=tail, driver=self.driver, instance_id=self.instance_id)
            self.handle = handle
            try:
                self._come_up(found[0], restarted)
            except PaddockError:
                handle.terminate(1.0)
                raise
            return handle.actor_ref

        return ChildSpec(id="server", start=start, restart="permanent", shutdown=self._shutdown_timeout + 2.0,
                         start_timeout=self._start_timeout + 10.0)

    def close(self) -> None:
        """Close the stream and the transport (the process is the supervisor's). Idempotent."""
        self._closed = True
        self.up.clear()
        with self._lock:
            stream, transport = self.stream, self.transport
        if stream is not None:
            stream.close()
        if transport is not None:
            transport.close()


def _exit_text(info: ExitInfo) -> str:
    how = f"killed by signal {info.signal}" if info.signal else f"exit code {info.returncode}"
    return f"the OpenCode server exited ({how})"


def spawn_command(ctx: InstanceContext, config: OpencodeConfig, password: str) -> tuple[list[str], dict[str, str], str]:
    """``(argv, env, cwd)`` of a spawned server (``argv`` ends before ``--port``): its config file
    written (unless the instance env names its own), its password and key in the env.
    :class:`DriverError` when the binary is not found. Caller's thread."""
    found = find_binary(config.binary, peer="opencode", env=ctx.env)
    if isinstance(found, str):
        raise DriverError("opencode", ctx.instance_id, f"cannot start OpenCode: {found}")
    env = dict(ctx.env)
    for key, value in QUIET_ENV.items():
        env.setdefault(key, value)
    access = ctx.access
    config_dir = os.path.join(ctx.home, "opencode-paddock")
    os.makedirs(config_dir, mode=0o700, exist_ok=True)
    path = os.path.join(config_dir, "opencode.json")
    if access.endpoint is None and "OPENCODE_CONFIG" in env:
        path = env["OPENCODE_CONFIG"]  # the instance env names its own config: keep it
    else:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(server_config(access), f, indent=2)
        env["OPENCODE_CONFIG"] = path
    if access.api_key:
        env[API_KEY_VAR] = access.api_key
    env["OPENCODE_SERVER_PASSWORD"] = password
    env.pop("OPENCODE_SERVER_USERNAME", None)  # Basic auth as `opencode`, the server's default
    workdir = os.path.join(ctx.home, "opencode-cwd")
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    return [*found.argv, *config.args], env, workdir
