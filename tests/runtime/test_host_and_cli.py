"""Host death, the CLI and the examples, driven as real processes."""

from __future__ import annotations

import contextlib
import os
import pty
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from paddock import Runtime
from tests.helpers.streams import read_until
from tests.runtime.conftest import TWO_LOCAL, run_turn, text_of

ROOT = Path(__file__).resolve().parents[2]
PADDOCK = [sys.executable, "-m", "paddock.cli"]


def _env(**extra):
    env = dict(os.environ)
    env.pop("PADDOCK_STATE_DIR", None)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@contextlib.contextmanager
def host_process(script: str, tmp_path: Path, ready: bytes):
    """Run ``script`` as a host process (state dir and workspace under ``tmp_path``) until it
    prints ``ready``; yields it with its agent processes, and kills what is left at the end."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    host = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "state"), str(ws)],
                            cwd=ROOT, stdout=subprocess.PIPE, env=_env())
    try:
        read_until(host.stdout, ready, 30, tail=2000)
        yield host, psutil.Process(host.pid).children(recursive=True)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        host.stdout.close()


HOST = textwrap.dedent(
    """
    import sys, time
    from paddock import Runtime
    from tests.runtime.conftest import TWO_LOCAL, run_turn
    rt = Runtime.open(TWO_LOCAL, state_dir=sys.argv[1])
    rt.start_session("t1", instance="local-a", cwd=sys.argv[2])
    run_turn(rt, "t1", "@reply before the crash")
    print("ready", flush=True)
    time.sleep(888)
    """
)


def test_host_killed_leaves_no_agent_and_threads_resume(tmp_path):
    with host_process(HOST, tmp_path, b"ready") as (host, agents):
        assert agents, "the host should have started an agent process"
        host.kill()
        host.wait(10)
        gone, alive = psutil.wait_procs(agents, timeout=2.0)
        assert not alive, f"agents outlived their host by 2 s: {alive}"
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "state") as rt:
        _, events = run_turn(rt, "t1", "@reply-history")
        assert "1" in text_of(events)


def test_paddock_run_streams_a_turn(tmp_path):
    out = subprocess.run(
        PADDOCK + ["run", "--state-dir", str(tmp_path / "s"), "--cwd", str(tmp_path), "@chunks 3\\n@reply hi there"],
        cwd=ROOT, capture_output=True, timeout=60, env=_env(),
    )
    assert out.returncode == 0, out.stderr.decode()
    assert b"hi there" in out.stdout and b"completed" in out.stdout


def test_paddock_run_follows_approve_flag_without_a_tty(tmp_path):
    for decision, exists in (("decline", False), ("accept", True)):
        target = tmp_path / f"{decision}.txt"
        out = subprocess.run(
            PADDOCK + ["run", "--state-dir", str(tmp_path / "s"), "--cwd", str(tmp_path), "--approve", decision,
                       f"@write {target.name} hello"],
            cwd=ROOT, capture_output=True, timeout=60, env=_env(), stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 0, out.stderr.decode()
        assert target.exists() is exists
        assert f"approval answered: {decision}".encode() in out.stdout


def test_ctrl_c_in_paddock_run_closes_cleanly_through_a_pty(tmp_path):
    pid, fd = pty.fork()
    if pid == 0:  # the child: paddock run on a pty
        os.chdir(ROOT)
        os.execve(sys.executable, PADDOCK + ["run", "--state-dir", str(tmp_path / "s"), "--cwd", str(tmp_path),
                                             "@chunks 2000\\n@delay 0.01\\n@spawn 777"], _env())
    try:
        read_until(fd, b"turn", 30, tail=2000)  # streaming has begun
        proc = psutil.Process(pid)
        tree = proc.children(recursive=True)
        assert tree, "paddock run should have an agent child"
        os.write(fd, b"\x03")  # Ctrl-C through the terminal
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 130
        gone, alive = psutil.wait_procs(tree, timeout=2.0)
        assert not alive, f"processes left after Ctrl-C: {alive}"
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)


def test_paddock_demo_exits_0_with_a_summary():
    out = subprocess.run(PADDOCK + ["demo"], cwd=ROOT, capture_output=True, timeout=120, env=_env())
    assert out.returncode == 0, out.stdout.decode() + out.stderr.decode()
    assert b"demo ok" in out.stdout and b"thread" in out.stdout and b"interrupted" in out.stdout


def test_sessions_and_stop_commands(tmp_path):
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        rt.start_session("t1", instance="local-a", cwd=tmp_path)
    listed = subprocess.run(PADDOCK + ["sessions", "--state-dir", str(tmp_path / "s")], cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert listed.returncode == 0 and b"t1" in listed.stdout and b"closed" in listed.stdout
    stopped = subprocess.run(PADDOCK + ["stop", "t1", "--state-dir", str(tmp_path / "s")], cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert stopped.returncode == 0
    listed = subprocess.run(PADDOCK + ["sessions", "--state-dir", str(tmp_path / "s")], cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert b"stopped" in listed.stdout
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s"):
        # a runtime owns the state dir (and its bindings): the CLI must not write behind it
        refused = subprocess.run(PADDOCK + ["stop", "t1", "--state-dir", str(tmp_path / "s")], cwd=ROOT, capture_output=True, timeout=30, env=_env())
        assert refused.returncode == 1 and b"stop the thread through the runtime that owns it" in refused.stderr


def test_doctor_reports_each_instance(tmp_path):
    cfg = tmp_path / "p.toml"
    cfg.write_text('[instances.a]\ndriver = "local"\n[instances.b]\ndriver = "acp"\nbinary = "/nonexistent/agent"\n')
    out = subprocess.run(PADDOCK + ["doctor", "--config", str(cfg), "--state-dir", str(tmp_path / "s")],
                         cwd=ROOT, capture_output=True, timeout=60, env=_env())
    assert out.returncode == 1  # b is unavailable
    text = out.stdout.decode()
    assert "a (driver local): available" in text and "b (driver acp): unavailable" in text
    assert "/nonexistent/agent" in text
    local = text.split("b (driver acp)")[0]
    assert f"binary:  {os.path.realpath(sys.executable)}" in local or f"binary:  {sys.executable}" in local
    assert "version: Python 3." in local and "auth:    no authenticate call" in local


@pytest.mark.parametrize(
    "example, expected",
    [
        ("quickstart.py", b"Hello from the local agent!"),
        ("many_sessions.py", b"20 sessions on 4 instances"),
        ("two_accounts.py", b"work: ACCOUNT=work@example.com"),
        ("approvals.py", b"declined.txt exists: False"),
        ("asyncio_host.py", b"t4 finished"),
    ],
)
def test_examples_run(example, expected):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / example)], cwd=ROOT, capture_output=True, timeout=60, env=_env())
    assert out.returncode == 0, out.stderr.decode()
    assert expected in out.stdout


def test_events_command_reads_the_log(tmp_path):
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        rt.start_session("t1", instance="local-a", cwd=tmp_path)
        run_turn(rt, "t1", "@reply logged")
        rt.start_session("t2", instance="local-b", cwd=tmp_path)
        run_turn(rt, "t2", "@reply other")
    out = subprocess.run(PADDOCK + ["events", "--state-dir", str(tmp_path / "s"), "--thread", "t1", "--json"],
                         cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert out.returncode == 0, out.stderr.decode()
    import json

    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert {e["thread_id"] for e in events} == {"t1"}
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and "turn.completed" in {e["type"] for e in events}
    assert "logged" in "".join(e.get("delta", "") for e in events)
    later = subprocess.run(PADDOCK + ["events", "--state-dir", str(tmp_path / "s"), "--from-seq", str(seqs[-1])],
                           cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert later.returncode == 0 and later.stdout.decode().split()[0] == str(seqs[-1])


SIGTERM_HOST = textwrap.dedent(
    """
    import sys, time
    from paddock import Runtime
    from tests.runtime.conftest import TWO_LOCAL, run_turn
    with Runtime.open(TWO_LOCAL, state_dir=sys.argv[1]) as rt:
        rt.start_session("t1", instance="local-a", cwd=sys.argv[2])
        run_turn(rt, "t1", "@reply before SIGTERM")
        print("ready", flush=True)
        time.sleep(888)
    """
)


def test_sigterm_to_a_with_runtime_host_closes_in_order(tmp_path):
    with host_process(SIGTERM_HOST, tmp_path, b"ready") as (host, agents):
        host.send_signal(signal.SIGTERM)
        assert host.wait(20) == 128 + signal.SIGTERM
        gone, alive = psutil.wait_procs(agents, timeout=1.0)
        assert not alive
    # close() ran: the session exited in the log and the binding is resumable ("closed").
    from paddock._state._store import BindingStore

    store = BindingStore(tmp_path / "state" / "paddock.db")
    assert store.get("t1").status == "closed"
    store.close()
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "state") as rt:
        with rt.subscribe(thread_id="t1", types=["session.exited"], from_seq=1) as sub:
            assert sub.get(timeout=5) is not None


NO_CLOSE_HOST = textwrap.dedent(
    """
    import sys
    from paddock import Runtime
    from tests.runtime.conftest import TWO_LOCAL, run_turn
    rt = Runtime.open(TWO_LOCAL, state_dir=sys.argv[1])
    rt.start_session("t1", instance="local-a", cwd=sys.argv[2])
    run_turn(rt, "t1", "@reply the host forgets to close")
    print("done", flush=True)
    """
)


def test_a_host_that_never_closes_still_exits_and_leaves_no_agent(tmp_path):
    with host_process(NO_CLOSE_HOST, tmp_path, b"done") as (host, agents):
        assert host.wait(15) == 0  # atexit closed the runtime; no actor thread held the interpreter
        gone, alive = psutil.wait_procs(agents, timeout=1.0)
        assert not alive
    from paddock._state._store import BindingStore

    store = BindingStore(tmp_path / "state" / "paddock.db")
    assert store.get("t1").status == "closed"
    store.close()


def test_a_config_error_at_open_leaves_no_thread_behind(tmp_path):
    script = textwrap.dedent(
        """
        import sys
        from paddock import Runtime
        from paddock.contract import ConfigError
        try:
            Runtime.open({"instances": {"a": {"driver": "local", "bogus": 1}}}, state_dir=sys.argv[1])
        except ConfigError as exc:
            print("config error:", exc, flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "s")], cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert out.returncode == 0 and b"config error" in out.stdout and b"bogus" in out.stdout
