"""Issue 33 #5: an interrupted one-shot ``paddock run`` through ``paddock serve`` ends its turn
and stops its session in the server, like a completed one; with the instance's short
``idle_timeout`` the server's shared agent then exits too. Real processes: the server, the CLI
client, the local agent; SIGINT as Ctrl-C sends it."""

from __future__ import annotations

import re
import signal
import subprocess

import psutil
import pytest

from tests.helpers import until
from tests.helpers.streams import read_until
from tests.server.conftest import PADDOCK, ROOT, env

pytestmark = pytest.mark.timeout(120)

ONE_LOCAL_IDLE = """
[instances.local-a]
driver = "local"
idle_timeout = 0.5
"""


def _agents(server: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The server's live descendants (its shims and agents)."""
    try:
        kids = psutil.Process(server.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    alive = []
    for p in kids:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_through_a_server_stops_its_session_and_leaves_no_agent(make_server, sig):
    served = make_server("unix", config=ONE_LOCAL_IDLE)
    run = subprocess.Popen(
        [*PADDOCK, "run", "--state-dir", str(served.state), "--instance", "local-a", "--thread", "i1", "--cwd",
         str(served.workspace), "@chunks 2\\n@delay 30\\n@reply slow answer"],
        cwd=ROOT, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        read_until(run.stdout.fileno(), b"slow", 30)  # the first chunk: the turn is running
        assert _agents(served.proc)
        run.send_signal(sig)
        assert run.wait(20) == 130
        err = run.stderr.read().decode()
        assert "interrupted; closing" in err and "stays live" not in err, err
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        run.stdout.close()
        run.stderr.close()
    with served.remote() as rt:
        assert not rt.has_session("i1")
        with rt.subscribe(thread_id="i1", from_seq=1, types=["turn.completed", "session.exited"]) as sub:
            ends = [sub.get(timeout=10), sub.get(timeout=10)]
        # The run asks the turn to stop (2 s), then stops the session: on a loaded machine the
        # stop can come first, and the turn ends cancelled by it. Either way it ends once.
        assert [(e.type, getattr(e, "state", None) or getattr(e, "reason", None)) for e in ends] in (
            [("turn.completed", "interrupted"), ("session.exited", "stopped")],
            [("turn.completed", "cancelled"), ("session.exited", "stopped")])
    listed = subprocess.run([*PADDOCK, "sessions", "--state-dir", str(served.state)], cwd=ROOT, env=env(),
                            capture_output=True, text=True, timeout=30)
    assert re.search(r"^i1\s+local-a\s+local\s+stopped", listed.stdout, re.M), listed.stdout
    until(lambda: not _agents(served.proc), timeout=15)  # the idle agent exits after 0.5 s
