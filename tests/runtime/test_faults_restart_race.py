"""Issue 33 #3: control calls that race a shared agent's restart. SIGKILL the ``local`` agent
(one shared ACP process per instance) mid-turn and call at once: a start on a new thread, and
the other control calls, wait for the restart within their timeout instead of surfacing
pykka's ``ActorDeadError`` (or fail typed, never with an internal error). Real local agents,
through the public API."""

from __future__ import annotations

import signal
import threading
import time

import psutil
import pytest

from paddock import Runtime
from paddock.contract import McpStdioServer, PaddockError
from tests.runtime.conftest import run_turn
from tests.runtime.test_faults import _wait_for

ONE_LOCAL = {"instances": {"local": {"driver": "local"}}}


def _agent() -> psutil.Process:
    [shim] = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
    [agent] = shim.children()
    return agent


@pytest.mark.parametrize("attempt", range(3))
def test_a_start_right_after_the_shared_agent_dies_waits_for_the_restart(tmp_path, workspace, attempt):
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        run_turn(rt, "t1", "@reply before")
        with rt.subscribe(thread_id="t1") as sub:
            rt.send_turn("t1", "@delay 30\n@reply slow")
            _agent().send_signal(signal.SIGKILL)
            started = rt.start_session("t2", instance="local", cwd=str(workspace), timeout=30)
            assert started.thread_id == "t2"
            _wait_for(sub, lambda e: e.type == "session.exited")
        _, events = run_turn(rt, "t2", "@reply after", timeout=30)
        assert [e.state for e in events if e.type == "turn.completed"] == ["completed"]


def test_a_start_whose_agent_dies_before_answering_starts_on_the_restarted_agent(tmp_path, workspace):
    """The start's ``session/new`` went to the agent, which was killed before it answered (the
    soak's ``start_race`` saw this): the start goes on with the restarted agent, within its
    timeout. The agent answers ``session/new`` once the session's MCP servers are connected; the
    first start of this one never answers (the second exits at once and is left out)."""
    flag = tmp_path / "mcp-started"
    hanging = McpStdioServer(name="hangs-once", command="sh",
                             args=("-c", f'[ -e "{flag}" ] && exit 0; touch "{flag}"; exec sleep 60'))
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        result: list[object] = []
        starter = threading.Thread(target=lambda: result.append(_call(
            rt.start_session, "t2", instance="local", cwd=str(workspace), mcp_servers=[hanging], timeout=30)))
        starter.start()
        try:
            deadline = time.monotonic() + 20
            while not flag.exists() and time.monotonic() < deadline:
                starter.join(0.02)  # the agent runs the MCP server: session/new is pending
            assert flag.exists()
            _agent().send_signal(signal.SIGKILL)
        finally:
            starter.join(40)
        [started] = result
        assert not isinstance(started, BaseException), started
        _, events = run_turn(rt, "t2", "@reply after", timeout=30)
        assert [e.state for e in events if e.type == "turn.completed"] == ["completed"]


def _call(fn, *args, **kwargs) -> object:
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:
        return exc


def test_control_calls_racing_a_restart_never_surface_an_internal_error(tmp_path, workspace):
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        for thread in ("a", "b", "c"):
            rt.start_session(thread, instance="local", cwd=str(workspace))
        run_turn(rt, "a", "@reply before")
        rt.send_turn("a", "@delay 30\n@reply slow")
        errors: list[BaseException] = []

        def call(fn, *args, **kwargs) -> None:
            try:
                fn(*args, **kwargs)
            except PaddockError:
                pass  # typed: what the caller may get
            except BaseException as exc:  # the assertion shows it
                errors.append(exc)

        calls = [
            (rt.start_session, ("d",), {"instance": "local", "cwd": str(workspace), "timeout": 30}),
            (rt.send_turn, ("b", "@reply racing"), {"timeout": 30}),
            (rt.stop_session, ("c",), {"timeout": 30}),
            (rt.list_sessions, (), {}),
            (rt.interrupt_turn, ("a",), {"timeout": 30}),
        ]
        _agent().send_signal(signal.SIGKILL)
        threads = [threading.Thread(target=call, args=(fn, *args), kwargs=kwargs) for fn, args, kwargs in calls]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
        assert not errors, errors
        _, events = run_turn(rt, "d", "@reply after", timeout=30)
        assert [e.state for e in events if e.type == "turn.completed"] == ["completed"]
