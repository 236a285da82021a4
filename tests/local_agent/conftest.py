from __future__ import annotations

import os

import pytest

from ._client import RawClient


@pytest.fixture
def state_dir(tmp_path):
    path = tmp_path / "state"
    return path


@pytest.fixture
def spawn_agent(state_dir, tmp_path):
    """Factory: start ``python -m paddock.drivers.local`` with a private state dir; always reaped."""
    clients: list[RawClient] = []

    def start(*args: str, env: dict[str, str] | None = None) -> RawClient:
        full_env = dict(os.environ)
        full_env.pop("PADDOCK_LOCAL_BUFFERED", None)
        full_env["PADDOCK_LOCAL_STATE_DIR"] = str(state_dir)
        full_env["HOME"] = str(tmp_path / "home")
        full_env.update(env or {})
        client = RawClient(*args, env=full_env)
        clients.append(client)
        return client

    yield start
    for client in clients:
        if client.proc.poll() is None:
            client.proc.kill()
        client.close()


@pytest.fixture
def agent(spawn_agent):
    """An initialised agent (no fs capability advertised)."""
    client = spawn_agent()
    client.initialize()
    return client


@pytest.fixture
def workspace(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return path
