"""``paddock serve`` as a process: orderly close on SIGTERM/SIGINT, no survivor after SIGKILL,
loopback only, one server per state directory."""

from __future__ import annotations

import signal
import subprocess
import time

import psutil
import pytest

from tests.server.conftest import PADDOCK, ROOT, env


def _agents(served) -> list[psutil.Process]:
    return psutil.Process(served.proc.pid).children(recursive=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_closes_in_order(make_server, sig):
    served = make_server("unix")
    rt = served.remote()
    rt.start_session("t1", instance="local-a", cwd=served.workspace)
    agents = _agents(served)
    assert agents, "the session's agent runs under the server"
    sub = rt.subscribe(thread_id="t1")
    rt.send_turn("t1", "@chunks 2000\n@delay 0.01")
    assert sub.get(timeout=10) is not None
    assert served.stop(sig) == 0
    seen = []
    while (event := sub.get(timeout=10)) is not None:
        seen.append(event.type)
    assert sub.ended and seen[-1] == "session.exited"  # the stream ends after the session's exit
    assert "turn.completed" in seen
    assert not (served.state / "paddock.sock").exists() and not (served.state / "server.json").exists()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in agents)
    rt.close()


def test_sigkill_leaves_no_survivor(make_server):
    served = make_server("tcp")
    rt = served.remote()
    for i, inst in enumerate(("local-a", "local-b")):
        rt.start_session(f"t{i}", instance=inst, cwd=served.workspace)
    rt.send_turn("t0", "@spawn 300\n@reply spawned")  # a grandchild that ignores SIGTERM
    deadline = time.monotonic() + 10
    while len(_agents(served)) < 3:
        assert time.monotonic() < deadline, [p.cmdline() for p in _agents(served)]
        time.sleep(0.05)
    agents = _agents(served)
    served.proc.kill()
    served.proc.wait()
    deadline = time.monotonic() + 15
    while alive := [p for p in agents if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]:
        assert time.monotonic() < deadline, f"survivors: {[p.cmdline() for p in alive]}"
        time.sleep(0.05)
    rt.close()
    served.stop()


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "10.1.2.3:8765", "example.com:80", "[::]:0", "8765"])
def test_only_loopback_listen_addresses(short_root, listen):
    r = subprocess.run([*PADDOCK, "serve", "--state-dir", str(short_root / "s"), "--listen", listen],
                       cwd=ROOT, env=env(), capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "paddock serve:" in r.stderr
    assert "loopback" in r.stderr or "HOST:PORT" in r.stderr
    assert not (short_root / "s" / "server.token").exists()


@pytest.mark.parametrize(("first", "second"), [("unix", []), ("unix", ["--listen", "127.0.0.1:0"]), ("tcp", [])])
def test_a_second_server_on_the_same_state_dir_is_refused(make_server, first, second):
    served = make_server(first)
    r = subprocess.run([*PADDOCK, "serve", "--state-dir", str(served.state), *second], cwd=ROOT, env=env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "already listens" in r.stderr
    with served.http() as http:
        assert http.get("/health").json()["pid"] == served.proc.pid


def test_a_socket_path_too_long_is_named(short_root):
    deep = short_root / ("d" * 100)
    r = subprocess.run([*PADDOCK, "serve", "--state-dir", str(deep)], cwd=ROOT, env=env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "longer than 107 bytes" in r.stderr and "--listen" in r.stderr


def test_a_bad_config_fails_cleanly(short_root):
    bad = short_root / "bad.toml"
    bad.write_text("[instances.a]\ndriver = 'local'\nenv = 5\n")
    r = subprocess.run([*PADDOCK, "serve", "--state-dir", str(short_root / "s"), "--config", str(bad)],
                       cwd=ROOT, env=env(), capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "Invalid config" in r.stderr and "instances.a" in r.stderr
    assert not (short_root / "s" / "paddock.sock").exists() and not (short_root / "s" / "server.json").exists()
