"""Issue 33 #8: an instance's shared process stops once it has served no session for the
instance's ``idle_timeout``, and the next ``start_session`` spawns it again; a live session keeps
it, however idle. Real local agents (one shared ACP process per instance), through the public
API."""

from __future__ import annotations

import logging

import pytest

from paddock import Runtime
from paddock.contract import ConfigError
from tests.helpers import shim_agents, until
from tests.runtime.conftest import run_turn

pytestmark = pytest.mark.timeout(90)


def test_the_shared_agent_stops_after_its_last_session_and_starts_again_on_demand(tmp_path, workspace, caplog):
    caplog.set_level(logging.INFO, logger="paddock")
    config = {"instances": {"local": {"driver": "local", "idle_timeout": 0.5}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        run_turn(rt, "t1", "@reply one")
        [agent] = shim_agents()
        with rt.subscribe(instance_id="local") as sub:
            # A live session keeps its agent, however idle: three bounds without a turn.
            assert sub.get(timeout=1.5) is None
            assert [p.pid for p in shim_agents()] == [agent.pid]
            rt.stop_session("t1")
            agent.wait(timeout=10)  # exits within the bound (psutil.TimeoutExpired otherwise)
            assert not shim_agents()
            seen = []
            while (event := sub.get(timeout=0.3)) is not None:
                seen.append(event)
        # the stop's own session.exited, nothing after it: no warning, no error
        assert [(e.type, getattr(e, "reason", None)) for e in seen] == [("session.exited", "stopped")], \
            [(e.type, getattr(e, "code", None)) for e in seen]
        started = rt.start_session("t2", instance="local", cwd=str(workspace), timeout=30)
        assert started.status == "ready"
        [again] = shim_agents()
        assert again.pid != agent.pid
        _, events = run_turn(rt, "t2", "@reply two")
        assert [e.state for e in events if e.type == "turn.completed"] == ["completed"]
        # the thread that ran before resumes on the new agent
        assert rt.start_session("t1", instance="local", cwd=str(workspace)).resumed
        _, events = run_turn(rt, "t1", "@reply-history")
        assert [e.state for e in events if e.type == "turn.completed"] == ["completed"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], \
        [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_start_racing_the_idle_stop_gets_a_working_session(tmp_path, workspace):
    config = {"instances": {"local": {"driver": "local", "idle_timeout": 0.05}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        for n in range(8):
            rt.start_session(f"t{n}", instance="local", cwd=str(workspace), timeout=30)
            run_turn(rt, f"t{n}", f"@reply {n}")
            rt.stop_session(f"t{n}")
        until(lambda: not shim_agents(), timeout=10)


def test_idle_timeout_must_be_positive(tmp_path):
    with pytest.raises(ConfigError, match="idle_timeout"):
        Runtime.open({"instances": {"local": {"driver": "local", "idle_timeout": 0}}}, state_dir=tmp_path / "s")
