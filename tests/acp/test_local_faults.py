"""Process faults through the ACP adapter: crash, kill -9, grandchildren, garbage, resume."""

from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from paddock.contract import SessionClosedError

from .conftest import etype, text_of


def agent_pid(h) -> int:
    """The agent itself (below the orphan-guard shim when there is one)."""
    link = h.adapter._link
    shim = psutil.Process(link.conn.process.pid)
    kids = shim.children()
    return kids[0].pid if kids else shim.pid


def wait_new_link(h, old, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        link = h.adapter._link
        if link is not None and link is not old and link.exit_info is None:
            return link
        time.sleep(0.02)
    raise AssertionError("the agent was not restarted")


def test_crash_mid_turn_fails_the_turn_and_the_session_recovers(make):
    h = make()
    h.start()
    _, first = h.turn("@reply before")
    old = h.adapter._link
    res = h.send("@reply boom boom boom\n@chunks 3\n@crash 3")
    events = h.events_until(lambda e: etype(e) == "session.exited")
    types = [etype(e) for e in events]
    done = [e for e in events if etype(e) == "turn.completed"]
    assert len(done) == 1 and done[0].state == "failed" and done[0].turn_id == res.turn_id
    assert "exit code 3" in done[0].error
    exited = events[-1]
    assert exited.recoverable is True and exited.exit_code == 3
    assert types.index("turn.completed") < types.index("session.exited")
    wait_new_link(h, old)
    res2, ev2 = h.turn("@reply-history")
    started = [e for e in ev2 if etype(e) == "session.started"]
    assert started and started[0].resumed
    assert text_of(ev2, res2.turn_id) == "history: 2"


def test_kill_9_mid_turn_then_restart_per_policy(make):
    h = make()
    h.start(runtime_mode="approval-required")
    old = h.adapter._link
    res = h.send("@reply " + "y" * 100 + "\n@chunks 100\n@delay 0.05")
    h.events_until(lambda e: etype(e) == "content.delta")
    os.kill(agent_pid(h), signal.SIGKILL)
    events = h.events_until(lambda e: etype(e) == "session.exited")
    done = [e for e in events if etype(e) == "turn.completed"]
    assert [d.state for d in done] == ["failed"] and done[0].turn_id == res.turn_id
    assert events[-1].recoverable is True
    # The orphan-guard shim mirrors the agent's end; either form names an abnormal exit.
    assert events[-1].signal == signal.SIGKILL or events[-1].exit_code not in (None, 0)
    new = wait_new_link(h, old)
    assert new.generation == old.generation + 1
    restarted = h.events_until(lambda e: etype(e) == "session.state.changed")
    assert restarted[-1].state == "ready"
    assert h.adapter.has_session("t1")
    res2, ev2 = h.turn("@reply after")
    assert text_of(ev2, res2.turn_id) == "after"


def test_open_request_expires_when_the_agent_dies(make):
    h = make()
    h.start(runtime_mode="approval-required")
    h.send("@run true")
    opened = h.events_until(lambda e: etype(e) == "request.opened")[-1]
    os.kill(agent_pid(h), signal.SIGKILL)
    events = h.events_until(lambda e: etype(e) == "session.exited")
    resolved = [e for e in events if etype(e) == "request.resolved"]
    assert [(r.request_id, r.resolution) for r in resolved] == [(opened.request_id, "expired")]
    types = [etype(e) for e in events]
    assert types.index("request.resolved") < types.index("turn.completed") < types.index("session.exited")


@pytest.mark.slow  # four restarts with exponential backoff (0.5, 1, 2 s)
def test_restart_budget_exhausted_closes_the_sessions(make):
    h = make()
    h.start()
    for kill in range(4):
        old = h.adapter._link
        os.kill(agent_pid(h), signal.SIGKILL)
        if kill == 0:  # one crash, one session.exited: later kills find the session already ended
            h.events_until(lambda e: etype(e) == "session.exited")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            link = h.adapter._link
            if link is None or (link is not old and link.exit_info is None):
                break
            time.sleep(0.02)
        if h.adapter._link is None:
            break
    assert h.adapter._link is None
    assert not h.adapter.has_session("t1")
    gave_up = h.events_until(lambda e: etype(e) == "runtime.error")
    assert gave_up[-1].code == "acp.restart_limit"
    with pytest.raises(SessionClosedError):
        h.send("@reply nope")


def test_spawned_grandchild_dies_with_the_session(make):
    h = make()
    h.start()
    res, events = h.turn("@spawn 30")
    pid = int(text_of(events, res.turn_id).split()[-1])
    assert psutil.pid_exists(pid)
    h.adapter.close(timeout=10)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_agent_ignoring_sigterm_is_still_stopped(make):
    h = make()
    h.start()
    h.turn("@ignore-sigterm")
    t0 = time.monotonic()
    h.adapter.close(timeout=3)
    assert time.monotonic() - t0 < 10


def test_garbage_lines_are_warnings_and_the_turn_completes(make):
    h = make()
    h.start()
    res, events = h.turn("@garbage\n@reply fine")
    warnings = [e for e in events if etype(e) == "runtime.warning"]
    assert warnings and warnings[0].code == "transport.malformed_line"
    assert events[-1].state == "completed" and text_of(events, res.turn_id) == "fine"


def test_resume_in_a_fresh_agent_process(make):
    a = make(instance_id="same")
    a.start()
    r1, _ = a.turn("@reply first")
    r2, _ = a.turn("@reply second")
    cursor = r2.resume_cursor
    a.adapter.close(timeout=10)
    b = make(instance_id="same")
    session = b.start(resume_cursor=cursor)
    assert session.resumed and session.resume_cursor == cursor
    started = b.events_until(lambda e: etype(e) == "session.started")[-1]
    assert started.resumed and not started.resume_failed
    res, events = b.turn("@reply-history")
    assert text_of(events, res.turn_id) == "history: 2"


def test_failed_resume_falls_back_to_a_new_session(make):
    from paddock.contract import ResumeCursor

    h = make()
    bogus = ResumeCursor(driver="local", version=1, payload='{"sessionId": "no-such-session"}')
    session = h.start(resume_cursor=bogus)
    assert not session.resumed and session.status == "ready"
    events = h.events_until(lambda e: etype(e) == "session.started")
    assert events[-1].resume_failed and not events[-1].resumed
    assert any(etype(e) == "runtime.warning" and e.code == "acp.resume_failed" for e in events)
    res, ev = h.turn("@reply-history")
    assert text_of(ev, res.turn_id) == "history: 0"
