"""Issue 33, item 9: the library prints nothing. With no logging configured by the host, a
supervisor's warning (an agent killed under it) reaches no stream: ``paddock`` carries a
``NullHandler``, so Python's last-resort handler stays out of it. A real host process, a real
agent killed with SIGKILL."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.runtime.test_host_and_cli import ROOT, _env

HOST = textwrap.dedent(
    """
    import logging, os, signal, sys, time
    import psutil
    from paddock import Runtime

    seen = []

    class Seen(logging.Filter):  # a filter is no handler: the host still configured no output
        def filter(self, record):
            seen.append(record.getMessage())
            return True

    logging.getLogger("paddock.supervisors").addFilter(Seen())
    rt = Runtime.open({"instances": {"local": {"driver": "local"}}}, state_dir=sys.argv[1])
    rt.start_session("t1", instance="local", cwd=sys.argv[2])
    [shim] = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
    os.kill(shim.children()[0].pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not any("failed" in m for m in seen) and time.monotonic() < deadline:
        time.sleep(0.02)
    rt.close()
    print(sum("failed" in m for m in seen), flush=True)
    """
)


def test_a_supervisor_warning_reaches_no_stream_when_the_host_configured_no_logging(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = subprocess.run([sys.executable, "-c", HOST, str(tmp_path / "state"), str(workspace)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) >= 1, "no supervisor warning was logged: the agent's death went unseen"
    assert proc.stderr == ""
