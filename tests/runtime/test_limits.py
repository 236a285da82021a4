"""Issue 35, per-agent resource limits: an instance's ``limits`` hold its agent's whole tree,
enforced by the agent's orphan-guard shim. Over memory or processes the tree is killed (a
``process.limit_exceeded`` warning names the limit), restarted and its sessions resume; another
instance's agent is untouched; a CPU limit throttles without a kill. Real local agents through the
public API."""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from paddock import Runtime
from paddock.contract import ConfigError
from tests.runtime.conftest import run_turn, text_of
from tests.runtime.test_faults import _wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim's tree watch reads /proc")


def _agent(instance_home: str) -> psutil.Process:
    """The local agent whose environment's HOME is ``instance_home`` (the child of its shim)."""
    shims = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
    for shim in shims:
        for agent in shim.children():
            if agent.environ().get("HOME") == instance_home:
                return agent
    raise AssertionError(f"no agent with HOME={instance_home}")


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@contextlib.contextmanager
def _limited(tmp_path, workspace, limits: dict[str, int]) -> Iterator[tuple[Runtime, psutil.Process]]:
    """A runtime with one local instance ``small`` under ``limits`` and a session ``t1`` on it
    that ran one turn; yields it and the agent."""
    config = {"instances": {"small": {"driver": "local", "limits": limits}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="small", cwd=str(workspace))
        run_turn(rt, "t1", "@reply before")
        yield rt, _agent(_home(rt, "small"))


def _home(rt: Runtime, instance: str) -> str:
    [info] = [i for i in rt.instances() if i.id == instance]
    assert info.home is not None
    return info.home


def test_an_agent_over_its_memory_limit_is_killed_within_2_s_and_resumes_and_others_are_untouched(
        tmp_path, workspace):
    config = {"instances": {"small": {"driver": "local", "limits": {"memory_mb": 256}},
                            "other": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        [small_info] = [i for i in rt.instances() if i.id == "small"]
        assert small_info.limits is not None and small_info.limits.memory_mb == 256
        assert small_info.limits.mechanism == "tree watch", small_info.limits
        rt.start_session("t1", instance="small", cwd=str(workspace))
        rt.start_session("t2", instance="other", cwd=str(workspace))
        run_turn(rt, "t1", "@reply before")
        run_turn(rt, "t2", "@reply before")
        agent = _agent(_home(rt, "small"))
        other = _agent(_home(rt, "other"))
        below = None  # the last time the agent was seen under its limit: it crossed after that
        with rt.subscribe(thread_id="t1") as sub:
            rt.send_turn("t1", "@alloc 512")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    if agent.memory_info().rss > 256 * 1024 * 1024:
                        break
                except psutil.NoSuchProcess:
                    break
                below = time.monotonic()
                time.sleep(0.01)
            seen = _wait_for(sub, lambda e: e.type == "session.exited", timeout=30)
            exited_at = time.monotonic()
        assert below is not None
        assert exited_at - below <= 2.0, exited_at - below
        [warning] = [e for e in seen if e.type == "runtime.warning" and e.code == "process.limit_exceeded"]
        assert "memory_mb = 256" in warning.message and "grew most: pid" in warning.message, warning.message
        [exited] = [e for e in seen if e.type == "session.exited"]
        assert exited.recoverable is True and exited.signal == signal.SIGKILL, exited
        assert psutil.wait_procs([agent], timeout=5)[1] == []
        _, events = run_turn(rt, "t1", "@reply-history")  # the session resumes on the next turn
        assert text_of(events) == "history: 1"
        assert _agent(_home(rt, "small")).pid != agent.pid
        assert _agent(_home(rt, "other")).pid == other.pid  # the other instance's agent is untouched
        _, events = run_turn(rt, "t2", "@reply still here")
        assert text_of(events) == "still here"


def test_a_fork_bomb_under_a_process_limit_is_contained_and_reaped(tmp_path, workspace):
    with _limited(tmp_path, workspace, {"processes": 50}) as (rt, agent):
        with rt.subscribe(thread_id="t1") as sub:
            rt.send_turn("t1", "@fork 2000")
            seen = _wait_for(sub, lambda e: e.type == "session.exited", timeout=30)
        [warning] = [e for e in seen if e.type == "runtime.warning" and e.code == "process.limit_exceeded"]
        assert "processes = 50" in warning.message, warning.message
        figure = int(warning.message.split("its tree had ")[1].split()[0])
        assert 50 < figure <= 150, warning.message  # caught within one fast poll of crossing
        assert f"pid {agent.pid}" in warning.message  # the agent forked them all
        assert psutil.wait_procs([agent], timeout=5)[1] == []
        shims = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
        # everything the bomb forked is reaped: what is left is the restarted agent's tree at most
        assert sum(len(_tree(s)) for s in shims) <= 3
        _, events = run_turn(rt, "t1", "@reply-history")  # the host and the session keep working
        assert text_of(events) == "history: 1"


def test_a_cpu_limit_throttles_the_agent_without_killing_it(tmp_path, workspace, monkeypatch):
    monkeypatch.setenv("PADDOCK_HANG_TIMEOUT", "0.5")  # the throttle's stops never count as a hang
    with _limited(tmp_path, workspace, {"cpu_percent": 10}) as (rt, agent):
        rt.start_session("t2", instance="small", cwd=str(workspace))
        before = agent.cpu_times()
        started = time.monotonic()
        with rt.subscribe(thread_id="t2") as sub2:
            with rt.subscribe(thread_id="t1") as sub:
                burning = rt.send_turn("t1", "@burn 3")
                time.sleep(1.0)  # into the burn: the throttle stops the agent most of the time
                # a send while the throttle holds the agent stopped is taken, not refused as a halt
                other = rt.send_turn("t2", "@reply meanwhile")
                events = _wait_for(sub, lambda e: e.type == "turn.completed" and e.turn_id == burning.turn_id,
                                   timeout=30)
            took = time.monotonic() - started
            after = agent.cpu_times()
            other_events = _wait_for(sub2, lambda e: e.type == "turn.completed" and e.turn_id == other.turn_id,
                                     timeout=30)
        assert other_events[-1].state == "completed" and text_of(other_events) == "meanwhile"
        used = (after.user + after.system) - (before.user + before.system)
        assert text_of(events) == "burned 3 s"
        assert not [e for e in events if e.type == "runtime.warning"], events
        assert used < 0.35 * took, (used, took)  # unthrottled it would be ~1 CPU for 3 s
        assert _agent(_home(rt, "small")).pid == agent.pid  # never killed
        _, events = run_turn(rt, "t1", "@reply-history")
        assert text_of(events) == "history: 2"


@pytest.mark.parametrize("limits, key", [
    ({"memory_mb": 0}, "memory_mb"),
    ({"cpu_percent": -5}, "cpu_percent"),
    ({"processes": "many"}, "processes"),
    ({"swap_mb": 10}, "swap_mb"),
])
def test_a_bad_limit_is_a_config_error_naming_the_key(tmp_path, limits, key):
    config = {"instances": {"small": {"driver": "local", "limits": limits}}}
    with pytest.raises(ConfigError, match=rf"\[instances\.small\] limits.*{key}"):
        Runtime.open(config, state_dir=tmp_path / "state")


def test_a_terminal_command_is_held_to_the_instance_limits_whatever_variables_the_agent_names(
        tmp_path, workspace):
    agent = str(Path(__file__).parent.parent / "acp" / "scripted_agent.py")
    config = {"instances": {"acp": {"driver": "acp", "binary": sys.executable, "args": [agent],
                                    "client_terminal": True, "limits": {"processes": 5}}}}
    forks = "for i in $(seq 20); do sleep 2 & done; wait; echo all-done"
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="acp", cwd=str(workspace), runtime_mode="full-access")
        _, events = run_turn(rt, "t1", f"termenv PADDOCK_LIMITS=processes=1000 {forks}", timeout=60)
    text = "".join(e.delta for e in events if e.type == "content.delta")
    assert "exit=" in text and "all-done" not in text, text  # the terminal's tree was killed at 5
