"""fs/read_text_file, terminal/* and unknown requests served to a scripted ACP agent."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil
import pytest

from .conftest import text_of

AGENT = str(Path(__file__).with_name("scripted_agent.py"))


@pytest.fixture
def h(make, tmp_path):
    h = make(driver="acp", binary=sys.executable, args=[AGENT], client_fs=True, client_terminal=True,
             env={"FROM_INSTANCE": "inst-value"})
    (tmp_path / "secret.txt").write_text("secret")
    (h.cwd / "mine.txt").write_text("hello")
    (h.cwd / "link").symlink_to(tmp_path / "secret.txt")
    h.start()
    return h


def reply(h, text: str) -> list[str]:
    res, events = h.turn(text)
    return text_of(events, res.turn_id).splitlines()


def test_reads_are_confined(h, tmp_path):
    lines = reply(h, f"read {h.cwd}/mine.txt\nread {tmp_path}/secret.txt\nread {h.cwd}/../secret.txt\n"
                     f"read {h.cwd}/link\nread /proc/self/environ\nread {h.cwd}/missing.txt")
    assert lines[0] == "ok:hello"
    assert all(line.startswith("err:-32602:Access denied") for line in lines[1:5]), lines
    assert lines[5] == f"err:-32002:Resource not found: {h.cwd}/missing.txt"


def test_terminal_runs_in_the_workspace_with_the_instance_env(h):
    lines = reply(h, "term echo $FROM_INSTANCE; pwd; exit 3")
    assert lines[0] == "exit=3 truncated=False out=inst-value"
    assert lines[1] == str(h.cwd)


def test_terminal_output_limit(h):
    lines = reply(h, "termlimit 10 printf 0123456789abcdefghij")
    assert lines == ["exit=0 truncated=True out=abcdefghij"]


def test_terminal_cwd_escape_and_unknown_requests(h, tmp_path):
    lines = reply(h, f"termcwd {tmp_path} true\ntermcwd sub/../.. true\nask terminal/output\nask fancy/method")
    assert lines[0].startswith("err:-32602:Access denied") and lines[1].startswith("err:-32602:Access denied")
    assert lines[2:] == ["err:-32002", "err:-32601"]


def test_terminal_is_killed_with_the_session(h):
    lines = reply(h, "termhang sleep 60")
    assert lines[0].startswith("started:")
    sleepers = [p for p in psutil.Process().children(recursive=True) if "sleep" in " ".join(p.cmdline())]
    assert sleepers
    h.adapter.stop_session("t1", timeout=10)
    deadline = time.monotonic() + 5
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in sleepers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in sleepers)


@pytest.mark.parametrize("guard, expected", [(0.0, "completed"), (2.0, "interrupted")])
def test_cancel_guard_waits_for_the_turn_to_start(make, guard, expected):
    from .conftest import etype

    h = make(driver="acp", binary=sys.executable, args=[AGENT], cancel_guard=guard)
    h.start()
    res = h.send("deaf-start")
    h.adapter.interrupt_turn("t1", res.turn_id)  # right after the prompt: inside the deaf window
    events = h.events_until(lambda e: etype(e) == "turn.completed", timeout=10)
    assert events[-1].state == expected


def test_authenticate_with_the_configured_method(make):
    from paddock.contract import DriverError

    ok = make(driver="acp", binary=sys.executable, args=[AGENT], auth_method="good", instance_id="a")
    assert ok.start().status == "ready"
    bad = make(driver="acp", binary=sys.executable, args=[AGENT], auth_method="bad", instance_id="b")
    with pytest.raises(DriverError, match="Authentication required"):
        bad.start()


def test_resume_through_session_resume(make):
    from paddock.contract import ResumeCursor

    from .conftest import etype

    h = make(driver="acp", binary=sys.executable, args=[AGENT], env={"SCRIPTED_RESUME": "1"})
    assert h.adapter.capabilities().sessions.resume is False  # not known before initialize
    cursor = ResumeCursor(driver="acp", version=1, payload='{"sessionId":"old-session"}')
    session = h.start(resume_cursor=cursor)
    assert session.resumed and session.resume_cursor == cursor
    caps = h.adapter.capabilities()
    assert caps.sessions.resume and not caps.sessions.load
    started = h.events_until(lambda e: etype(e) == "session.started")[-1]
    assert started.resumed


def test_probe_reports_a_missing_binary(tmp_path, hub):
    from paddock.drivers import BUILT_IN_DRIVERS

    from .conftest import Harness

    spec = BUILT_IN_DRIVERS["acp"]
    h = Harness(tmp_path, hub, driver="acp", binary="no-such-agent-binary")
    assert "not found" in spec.probe(h.ctx)
    h2 = Harness(tmp_path, hub, driver="acp", binary=sys.executable, instance_id="x")
    assert spec.probe(h2.ctx) is None


def test_agent_without_load_loses_its_sessions_on_restart(make):
    import os
    import signal

    from paddock.contract import SessionClosedError

    from .conftest import etype

    h = make(driver="acp", binary=sys.executable, args=[AGENT])
    h.start()
    old = h.adapter._link
    os.kill(old.conn.process.pid, signal.SIGKILL)
    exited = h.events_until(lambda e: etype(e) == "session.exited")[-1]
    assert exited.recoverable is False
    deadline = time.monotonic() + 10
    while (h.adapter._link is old or h.adapter._link is None) and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(SessionClosedError):
        h.send("read x")
    assert not h.adapter.has_session("t1")
    assert h.start().status == "ready"  # a fresh session on the restarted agent
    lines = reply(h, "ask fancy/method")
    assert lines == ["err:-32601"]


def test_agent_that_never_answers_initialize(make):
    from paddock.contract import DriverError, StartSessionInput

    h = make(driver="acp", binary=sys.executable, args=[AGENT], env={"SCRIPTED_HANG_INIT": "1"})
    t0 = time.monotonic()
    with pytest.raises(DriverError, match="initialize"):
        h.adapter.start_session(StartSessionInput(thread_id="t1", cwd=str(h.cwd)), timeout=1.5)
    assert time.monotonic() - t0 < 8


def test_unacknowledged_cancel_ends_the_turn_after_cancel_timeout(make):
    from .conftest import etype

    h = make(driver="acp", binary=sys.executable, args=[AGENT], cancel_timeout=0.2, cancel_guard=0.0)
    h.start()
    res = h.send("deaf-forever")
    h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.interrupt_turn("t1")
    events = h.events_until(lambda e: etype(e) == "turn.completed")
    assert events[-1].state == "interrupted" and "did not acknowledge" in events[-1].error
    assert any(etype(e) == "runtime.warning" and e.code == "acp.cancel_unacknowledged" for e in events)
    assert h.adapter.list_sessions()[0].active_turn_id is None


def test_stop_closes_the_native_session_when_supported(make, tmp_path):
    mark = tmp_path / "closed.txt"
    h = make(driver="acp", binary=sys.executable, args=[AGENT], env={"SCRIPTED_CLOSE_MARK": str(mark)})
    h.start()
    h.adapter.stop_session("t1")
    h.adapter.close(timeout=10)  # the agent reads session/close before its stdin closes
    assert mark.read_text() == "scripted-1\n"
