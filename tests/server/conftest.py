"""Fixtures for ``paddock serve``: a real server process on a unix socket or loopback TCP, and
clients of it. State dirs live in short folders under /tmp (a unix socket path holds at most 107
bytes)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from paddock import Runtime
from paddock.client import RemoteRuntime
from tests.helpers.streams import read_until  # noqa: F401  (re-exported for tests/server)
from tests.runtime.conftest import TWO_LOCAL

ROOT = Path(__file__).resolve().parents[2]
PADDOCK = [sys.executable, "-m", "paddock.cli"]

TWO_LOCAL_TOML = """
[instances.local-a]
driver = "local"
env = { ACCOUNT = "a" }

[instances.local-b]
driver = "local"
env = { ACCOUNT = "b" }
"""


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out.pop("PADDOCK_STATE_DIR", None)
    out.pop("PADDOCK_CONFIG", None)
    out["PYTHONUNBUFFERED"] = "1"
    out.update(extra)
    return out


class Served:
    """One ``paddock serve`` process: ``unix`` (the state dir's socket) or ``tcp`` (127.0.0.1,
    a free port, the token in the state dir)."""

    def __init__(self, root: Path, transport: str = "unix", config: str = TWO_LOCAL_TOML) -> None:
        self.root = root
        self.transport = transport
        self.state = root / "state"
        self.workspace = root / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.config = root / "paddock.toml"
        self.config.write_text(config)
        self.proc: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    def start(self, timeout: float = 30.0) -> Served:
        argv = [*PADDOCK, "serve", "--state-dir", str(self.state), "--config", str(self.config)]
        if self.transport == "tcp":
            argv += ["--listen", "127.0.0.1:0"]
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
        out = read_until(self.proc.stdout.fileno(), b"\n", timeout)
        assert b"listening on" in out, out
        if self.transport == "tcp":
            self.url = out.split(b"listening on ")[1].split(b" ")[0].decode()
        return self

    @property
    def token(self) -> str | None:
        return (self.state / "server.token").read_text().strip() if self.transport == "tcp" else None

    def http(self, token: str | None | bool = True, **kw) -> httpx.Client:
        """A raw HTTP client (``token=True``: the right one; a string: that one; None: none)."""
        if token is True:
            token = self.token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if self.transport == "unix":
            return httpx.Client(transport=httpx.HTTPTransport(uds=str(self.state / "paddock.sock")),
                                base_url="http://paddock", headers=headers, timeout=30, **kw)
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kw)

    def remote(self) -> RemoteRuntime:
        return RemoteRuntime.connect(self.state)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream:
                    stream.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def short_root():
    root = Path(tempfile.mkdtemp(prefix="pd-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def make_server(short_root):
    made: list[Served] = []

    def make(transport: str = "unix", config: str = TWO_LOCAL_TOML, name: str = "") -> Served:
        root = short_root / (name or f"s{len(made)}")
        root.mkdir(exist_ok=True)
        served = Served(root, transport, config).start()
        made.append(served)
        return served

    yield make
    for served in made:
        if served.proc is not None and served.proc.poll() is None:
            code = served.stop()
            assert code == 0, f"paddock serve exited {code} on SIGTERM"


@pytest.fixture(params=["unix", "tcp"])
def server(request, make_server) -> Served:
    return make_server(request.param)


@pytest.fixture(params=["in-process", "remote-unix", "remote-tcp"])
def any_rt(request, short_root, make_server):
    """A Runtime, or a RemoteRuntime of a server over the same config: the scenario tests run
    against each. Yields (runtime, workspace)."""
    if request.param == "in-process":
        ws = short_root / "ws"
        ws.mkdir()
        rt = Runtime.open(TWO_LOCAL, state_dir=short_root / "state")
        yield rt, ws
        rt.close()
        return
    served = make_server(request.param.split("-")[1])
    rt = served.remote()
    yield rt, served.workspace
    rt.close()
