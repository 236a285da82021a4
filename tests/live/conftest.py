"""Helpers for live tests: find a pinned CLI (skip with the install command when it is missing),
a scripted model server, and the network tripwire.

Live tests are marked ``@pytest.mark.live``. The peers folder is ``$PADDOCK_PEERS_DIR`` or
``.paddock/peers`` (``.ci/run`` installs into ``$HOME/.cache/paddock/peers``).
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from drivers.testing import ModelServer, Peer, load_pins, peer_argv


def require_peer(name: str) -> tuple[Peer, list[str]]:
    """The pin and the command line of an installed peer; skips the test when it is missing."""
    peer = load_pins()[name]
    argv = peer_argv(peer)
    if argv is None:
        pytest.skip(f"{peer.package}@{peer.version} is not installed; install with: {peer.install_hint}")
    return peer, argv


class Tripwire:
    """A TCP listener on 127.0.0.1 used as HTTP(S)_PROXY/ALL_PROXY. It records the first line of
    every connection (``CONNECT host:443 ...``) and closes it. A CLI that stays on loopback never
    connects here (``NO_PROXY`` exempts 127.0.0.1)."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.hits: list[str] = []
        self._lock = threading.Lock()
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
            with conn:
                conn.settimeout(2.0)
                try:
                    first = conn.recv(512).split(b"\r\n", 1)[0].decode("latin-1")
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    first = "<no request line>"
            with self._lock:
                self.hits.append(first or "<empty>")

    def close(self) -> None:
        self._sock.close()
        self._thread.join(2)


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
