"""Issue 25 #3: a stopped (SIGSTOP) agent. An interrupt ends its turn within ``interrupt_timeout``,
a send to it fails at once with a typed error, and one that stays stopped for ``hang_timeout`` is
declared hung, killed and restarted, its sessions resuming. Real local agents stopped with SIGSTOP,
through the public API."""

from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from paddock import Runtime
from paddock.contract import ProcessError
from tests.helpers import until
from tests.runtime.conftest import run_turn, text_of
from tests.runtime.test_faults import _wait_for

ONE_LOCAL = {"instances": {"local": {"driver": "local"}}}
INTERRUPT_TIMEOUT = 10.0  # the default bound (SessionActor.interrupt_timeout)


def _agent() -> psutil.Process:
    """The one local agent of this host: the child of its orphan-guard shim."""
    [shim] = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
    [agent] = shim.children()
    return agent


def test_an_interrupt_to_a_stopped_agent_ends_the_turn_within_the_bound_and_close_keeps_its_budget(
        tmp_path, workspace):
    rt = Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state")
    try:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        with rt.subscribe(thread_id="t1") as sub:
            turn = rt.send_turn("t1", "@chunks 200\n@delay 0.1\n@reply " + "slow " * 200)
            _wait_for(sub, lambda e: e.type == "content.delta")
            agent = _agent()
            agent.send_signal(signal.SIGSTOP)
            asked = time.monotonic()
            rt.interrupt_turn("t1", turn.turn_id)
            seen = _wait_for(sub, lambda e: e.type == "turn.completed", timeout=INTERRUPT_TIMEOUT + 10)
            took = time.monotonic() - asked
    finally:
        closing = time.monotonic()
        rt.close(timeout=5)  # the agent is still stopped: it answers no shutdown request
        closed = time.monotonic() - closing
    end = seen[-1]
    assert end.turn_id == turn.turn_id and end.state == "interrupted", end
    assert took <= INTERRUPT_TIMEOUT + 1.5, took
    warnings = [e for e in seen if e.type == "runtime.warning" and e.code == "turn.interrupt_unacknowledged"]
    assert len(warnings) == 1, [(e.type, getattr(e, "code", None)) for e in seen]
    assert closed <= 6.0, closed
    assert psutil.wait_procs([agent], timeout=1)[1] == []


def test_a_send_to_a_stopped_agent_fails_at_once_with_a_typed_error(tmp_path, workspace):
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        for thread in ("t1", "t2"):
            rt.start_session(thread, instance="local", cwd=str(workspace))
        agent = _agent()
        agent.send_signal(signal.SIGSTOP)
        try:
            # kill() returns before the agent is stopped: the kernel stops it when it next runs
            # (CI, under load, once sent before that and the turn was accepted).
            until(lambda: agent.status() == psutil.STATUS_STOPPED, timeout=10)
            asked = time.monotonic()
            with pytest.raises(ProcessError, match="stopped") as caught:
                rt.send_turn("t2", "@reply never")
            assert time.monotonic() - asked < 2.0
            assert caught.value.thread_id == "t2" and caught.value.instance_id == "local"
            assert rt.read_thread("t2").turns == ()  # no turn was started
        finally:
            agent.send_signal(signal.SIGCONT)
        _, events = run_turn(rt, "t2", "@reply continued")
        assert text_of(events) == "continued"


def test_an_agent_stopped_for_hang_timeout_is_killed_restarted_and_its_session_resumes(
        tmp_path, workspace, monkeypatch):
    monkeypatch.setenv("PADDOCK_HANG_TIMEOUT", "1.5")
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        run_turn(rt, "t1", "@reply before")
        agent = _agent()
        with rt.subscribe(thread_id="t1") as sub:
            agent.send_signal(signal.SIGSTOP)
            seen = _wait_for(sub, lambda e: e.type == "session.exited", timeout=15)
        [exited] = [e for e in seen if e.type == "session.exited"]
        [hung] = [e for e in seen if e.type == "runtime.warning" and e.code == "process.hung"]
        assert "declared hung" in hung.message and "stopped" in hung.message, hung.message
        assert exited.recoverable is True and exited.signal == signal.SIGKILL, exited
        assert "declared hung" in (exited.stderr_tail or "") and "stopped" in exited.stderr_tail, exited.stderr_tail
        assert psutil.wait_procs([agent], timeout=5)[1] == []
        _, events = run_turn(rt, "t1", "@reply-history")  # the first send resumes the thread
        assert text_of(events) == "history: 1"
        assert _agent().pid != agent.pid  # on the agent its supervisor started again
