"""A hostile local agent (its ``@run`` directive) tries what the issue lists; under the default
``confinement = "workspace"`` the kernel refuses each access, with ``confinement = "none"`` each
succeeds (so these tests can fail). The instances' roots are the workspace (the state dir lies
outside them: Landlock answers EACCES); with the default roots the state dir lies inside one (the
temp folder) and is covered instead (its files do not exist for the agent)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from paddock import Runtime
from paddock.supervisors import landlock_abi

from ..runtime.conftest import run_turn

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not sys.platform.startswith("linux") or landlock_abi() < 6,
                       reason="needs Linux with Landlock ABI 6+ (filesystem, TCP, scoped signals)"),
]

PY = sys.executable


def _config(confinement: str, ws: Path, **extra) -> dict:
    extra = {"roots": [str(ws)], **extra}
    return {"instances": {
        "a": {"driver": "local", "confinement": confinement, **extra},
        "b": {"driver": "local", "confinement": confinement, **extra},
    }}


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A fake host home with an ~/.ssh key, a state dir holding a server token, and a workspace."""
    home = tmp_path / "hosthome"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("HOST-SSH-KEY")
    monkeypatch.setenv("HOME", str(home))
    state = tmp_path / "state"
    ws = tmp_path / "ws"
    ws.mkdir()
    return home, state, ws


def _attempt(rt, thread: str, command: str) -> str:
    _, events = run_turn(rt, thread, f"@run {command}; echo rc=$?", timeout=60)
    return "".join(e.delta for e in events if e.type == "content.delta")


def _scenario(rt, state: Path, ws: Path, home: Path, outside: Path) -> dict[str, str]:
    rt.start_session("ta", instance="a", cwd=ws, runtime_mode="full-access")
    rt.start_session("tb", instance="b", cwd=ws, runtime_mode="full-access")
    creds = state / "instances" / "b" / "credentials.json"
    creds.write_text("B-SECRET-CREDENTIAL")
    (state / "server.token").write_text("SERVER-TOKEN-VALUE")
    seen = {
        "other_home": _attempt(rt, "ta", f"cat {creds}"),
        "events_db": _attempt(rt, "ta", f"head -c 16 {state / 'events.db'} | od -c | head -1"),
        "server_token": _attempt(rt, "ta", f"cat {state / 'server.token'}"),
        "host_ssh": _attempt(rt, "ta", f"cat {home / '.ssh' / 'id_ed25519'}"),
        "write_outside": _attempt(rt, "ta", f"echo x > {outside / 'planted'}"),
        "signal_host": _attempt(rt, "ta", f"kill -0 {os.getpid()}"),
        "own_workspace": _attempt(rt, "ta", f"echo x > {ws / 'mine'} && cat {ws / 'mine'}"),
    }
    return seen


def test_the_kernel_refuses_a_hostile_agent(host, tmp_path) -> None:
    home, state, ws = host
    outside = Path(os.path.expanduser("~")) / "outside"  # the fake host home: not a root
    outside.mkdir()
    with Runtime.open(_config("workspace", ws), state_dir=state) as rt:
        seen = _scenario(rt, state, ws, home, outside)
        info = {i.id: i for i in rt.instances()}["a"]
    assert info.confinement is not None and info.confinement.confined
    for key in ("other_home", "server_token", "host_ssh", "write_outside", "events_db"):
        assert "Permission denied" in seen[key], (key, seen[key])
    assert "Operation not permitted" in seen["signal_host"], seen["signal_host"]
    assert "rc=0" in seen["own_workspace"]
    everything = " ".join(seen.values())
    for secret in ("B-SECRET-CREDENTIAL", "SERVER-TOKEN-VALUE", "HOST-SSH-KEY"):
        assert secret not in everything
    assert not (outside / "planted").exists()


def test_without_confinement_every_access_succeeds(host, tmp_path) -> None:
    home, state, ws = host
    outside = Path(os.path.expanduser("~")) / "outside"
    outside.mkdir()
    with Runtime.open(_config("none", ws), state_dir=state) as rt:
        seen = _scenario(rt, state, ws, home, outside)
    assert "B-SECRET-CREDENTIAL" in seen["other_home"]
    assert "SERVER-TOKEN-VALUE" in seen["server_token"]
    assert "HOST-SSH-KEY" in seen["host_ssh"]
    assert "rc=0" in seen["write_outside"] and (outside / "planted").exists()
    assert "rc=0" in seen["signal_host"]


def _connect_command(port: int) -> str:
    return (f"{PY} -I -S -c \"import socket; s=socket.socket(); s.settimeout(5); "
            f"s.connect(('127.0.0.1', {port})); print('connected')\" 2>&1 | tail -1")


@pytest.mark.parametrize("confinement", ["workspace", "none"])
def test_network_endpoints_allows_only_the_listed_ports(host, confinement) -> None:
    home, state, ws = host
    servers = [socket.socket() for _ in range(2)]
    try:
        for s in servers:
            s.bind(("127.0.0.1", 0))
            s.listen()
        allowed, denied = (s.getsockname()[1] for s in servers)
        config = {"instances": {"a": {"driver": "local", "confinement": confinement, "network": "endpoints",
                                      "allow_ports": [allowed]}}}
        with Runtime.open(config, state_dir=state) as rt:
            rt.start_session("ta", instance="a", cwd=ws, runtime_mode="full-access")
            ok = _attempt(rt, "ta", _connect_command(allowed))
            refused = _attempt(rt, "ta", _connect_command(denied))
    finally:
        for s in servers:
            s.close()
    assert "connected" in ok
    if confinement == "workspace":
        assert "Permission denied" in refused, refused
    else:
        assert "connected" in refused


def test_with_the_default_roots_the_state_dir_inside_one_is_covered(host) -> None:
    """The default roots hold the temp folder, and this state dir lies in it: the agent's view of
    the state dir is an empty read-only folder (its own home bound back in), so the token and
    the other home's credentials cannot be read, and nothing can be planted there."""
    home, state, ws = host
    config = {"instances": {"a": {"driver": "local"}, "b": {"driver": "local"}}}
    with Runtime.open(config, state_dir=state) as rt:
        rt.start_session("ta", instance="a", cwd=ws, runtime_mode="full-access")
        (state / "server.token").write_text("SERVER-TOKEN-VALUE")
        creds = state / "instances" / "b" / "credentials.json"
        creds.write_text("B-SECRET-CREDENTIAL")
        token = _attempt(rt, "ta", f"cat {state / 'server.token'}")
        other = _attempt(rt, "ta", f"cat {creds}")
        plant = _attempt(rt, "ta", f"echo x > {state / 'planted'}")
        own = _attempt(rt, "ta", 'echo mine > "$HOME/own.txt" && cat "$HOME/own.txt"')
        beside = _attempt(rt, "ta", f"echo x > {ws.parent / 'new-beside-state.txt'}")
    assert "No such file or directory" in token and "SERVER-TOKEN-VALUE" not in token
    assert "No such file or directory" in other and "B-SECRET-CREDENTIAL" not in other
    assert "rc=0" not in plant and not (state / "planted").exists()
    assert "mine" in own and (state / "instances" / "a" / "own.txt").exists()
    assert "rc=0" in beside  # the folder holding the state dir stays writable
