"""Issue 25: a grandchild born just before its shim is killed dies with the shim's tree. The shim
reports its tree to the host every 50 ms to 1 s; a process born in between was not in that report.
A real runtime, the real local agent and its ``@spawn`` sleeper (it ignores SIGTERM)."""

from __future__ import annotations

import os
import signal

import psutil

from paddock import Runtime
from tests.runtime.conftest import run_turn, text_of
from tests.runtime.test_faults import _wait_for

ONE_LOCAL = {"instances": {"local": {"driver": "local"}}}


def test_a_grandchild_born_within_the_shims_report_period_dies_when_the_shim_is_killed(tmp_path, workspace):
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        for n in range(2):  # the second on the restarted agent
            rt.start_session(f"t{n}", instance="local", cwd=str(workspace))
            _, events = run_turn(rt, f"t{n}", "@spawn 120")
            sleeper = psutil.Process(int(text_of(events).split()[-1]))  # "spawned PID"
            agent = sleeper.parent()
            shim = agent.parent()
            assert "_shim.py" in " ".join(shim.cmdline()), shim.cmdline()
            with rt.subscribe(thread_id=f"t{n}") as sub:
                os.kill(shim.pid, signal.SIGKILL)  # at once: the sleeper is younger than the last report
                gone, alive = psutil.wait_procs([sleeper, agent], timeout=5)
                assert alive == [], f"round {n}: outlived the killed shim: {alive}"
                _wait_for(sub, lambda e: e.type == "session.exited")
            _, events = run_turn(rt, f"t{n}", "@reply again")  # the supervisor restarted the agent
            assert text_of(events) == "again"
