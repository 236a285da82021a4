"""Helpers for live tests: find a pinned CLI (skip with the install command when it is missing),
a scripted model server, and the network tripwire.

Live tests are marked ``@pytest.mark.live``. The peers folder is ``$PADDOCK_PEERS_DIR``, else
``~/.cache/paddock/peers`` (the one default of ``paddock peers`` and the drivers). With
``PADDOCK_REQUIRE_PEERS=1`` a missing peer fails the test instead of skipping it.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from paddock.contract import TurnCompleted
from paddock.testing import ModelServer, Peer, load_pins, peer_argv


def require_peer(name: str) -> tuple[Peer, list[str]]:
    """The pin and the command line of an installed peer; skips the test when it is missing
    (fails instead when ``PADDOCK_REQUIRE_PEERS=1``, so CI cannot pass by skipping)."""
    peer = load_pins()[name]
    argv = peer_argv(peer)
    if argv is None:
        reason = f"{peer.package}@{peer.version} is not installed; install with: {peer.install_hint}"
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(reason + " (PADDOCK_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(reason)
    return peer, argv


class Tripwire:
    """An HTTP proxy on 127.0.0.1 for HTTP(S)_PROXY/ALL_PROXY that lets only loopback through.

    A request for a non-loopback target (``CONNECT github.com:443``, ``GET http://x/...``) is
    recorded in ``hits`` and refused with 403. Loopback targets are relayed (recorded in
    ``relayed``): most CLIs honour ``NO_PROXY`` and never come here, but some (qwen) send even
    127.0.0.1 traffic through the proxy.
    """

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(32)
        self.hits: list[str] = []
        self.relayed: list[str] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._serve, name="tripwire", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(10.0)
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                data = conn.recv(4096)
                if not data:
                    break
                head += data
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split()
            target = parts[1] if len(parts) > 1 else ""
            if parts and parts[0] == "CONNECT":
                hostport = target
            else:
                hostport = urlsplit(target).netloc
            host, _, port = hostport.rpartition(":")
            host = host.strip("[]")
            if host not in ("127.0.0.1", "localhost", "::1") or not port.isdigit():
                with self._cond:
                    self.hits.append(line or "<empty>")
                    self._cond.notify_all()
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                conn.close()
                return
            with self._cond:
                self.relayed.append(line)
            upstream = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
            if parts[0] == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                rest = head.split(b"\r\n\r\n", 1)[1]
            else:  # absolute-form request: forward it in origin form
                path = urlsplit(target)._replace(scheme="", netloc="").geturl() or "/"
                rest = f"{parts[0]} {path} {parts[2] if len(parts) > 2 else 'HTTP/1.1'}".encode() + head[len(line):]
            if rest:
                upstream.sendall(rest)
            conn.settimeout(None)
            upstream.settimeout(None)
            other = threading.Thread(target=_pipe, args=(upstream, conn), daemon=True)
            other.start()
            _pipe(conn, upstream)
            other.join(10)
            upstream.close()
            conn.close()
        except OSError:
            conn.close()

    def wait_for_hit(self, *, timeout: float) -> bool:
        """True as soon as a non-loopback target was asked for; False after ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: bool(self.hits), timeout)

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close alone does not)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(2)


def turn_text(rt, thread_id: str, prompt: str, timeout: float = 60.0) -> tuple[str, TurnCompleted]:
    """Send ``prompt`` as a turn through the Runtime ``rt``; return its assistant text and its
    ``turn.completed`` event (fails the test when ``timeout`` seconds pass between events)."""
    with rt.subscribe(thread_id=thread_id) as events:
        turn = rt.send_turn(thread_id, prompt)
        text, end = [], None
        while end is None:
            event = events.get(timeout=timeout)
            assert event is not None, f"no turn.completed within {timeout:g} s"
            if event.type == "content.delta" and event.stream == "assistant_text":
                text.append(event.delta)
            elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                end = event
    return "".join(text), end


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def tripwire():
    wire = Tripwire()
    try:
        yield wire
    finally:
        wire.close()
    assert not wire.hits, f"a CLI tried to leave 127.0.0.1 through the proxy: {wire.hits}"


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def model_server(tmp_path, workspace):
    with ModelServer(workspace=workspace, log_path=tmp_path / "model-requests.jsonl") as server:
        yield server
