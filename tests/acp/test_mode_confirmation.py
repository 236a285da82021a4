"""Trust: an ACP session never sends a prompt while the agent may be in a mode looser than the
runtime mode allows. Driven against ``closing_agent.py``, a scripted agent with
claude-agent-acp's session lifecycle (a slow ``session/close``, a ``session/load`` answered from
a session still in memory, a ``set_mode`` a closing session acknowledges and ignores).

Wire that motivated it (claude-agent-acp 0.49.0, conformance 04b under load): the stop's
``session/close`` and the restart's ``session/load`` went out 5 ms apart; the load answered
from the closing session (``currentModeId: bypassPermissions``), our ``set_mode default`` was
acknowledged by it, and the prompt then found no session.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paddock.contract import RequestError, ValidationError
from tests.adapter_harness import etype

AGENT = Path(__file__).with_name("closing_agent.py")
MODES = {"approval-required": "default", "full-access": "bypassPermissions"}


def _agent(make, **config):
    return make(driver="acp", binary=sys.executable, args=[str(AGENT)], native_modes=MODES, **config)


def _turn_declining(h, text: str) -> tuple[list, list]:
    """One turn whose requests are all declined: (its events, the request.opened among them)."""
    res = h.send(text)
    events, opened = [], []
    while True:
        more = h.events_until(lambda e: etype(e) in ("request.opened", "turn.completed"))
        events += more
        last = more[-1]
        if etype(last) == "turn.completed" and last.turn_id == res.turn_id:
            return events, opened
        if etype(last) == "request.opened":
            opened.append(last)
            h.adapter.respond_to_request("t1", last.request_id, "decline")


def _requests(h) -> list[str]:
    return (h.cwd / "requests.log").read_text().split()


def test_a_restart_in_a_stricter_mode_loads_after_the_close_and_asks(make):
    h = _agent(make)
    session = h.start(runtime_mode="full-access")
    _, events = h.turn("run before.txt")
    assert (h.cwd / "before.txt").exists()  # full-access: ran unasked, by the agent's own mode
    h.adapter.stop_session("t1")
    restarted = h.start(runtime_mode="approval-required", resume_cursor=session.resume_cursor)
    assert restarted.resumed
    started = [e for e in h.events_until(lambda e: etype(e) == "session.started") if etype(e) == "session.started"]
    assert not started[-1].resume_failed, started[-1]
    events, opened = _turn_declining(h, "run after.txt")
    assert [e.kind for e in opened] == ["command"], [etype(e) for e in events]
    assert not (h.cwd / "after.txt").exists(), "the command ran unasked after the restart"
    assert events[-1].state == "completed", events[-1]
    log = _requests(h)
    # The close was answered before the load went out: the load reloaded it in mode default.
    assert log.index("session/load") > log.index("session/close")


def test_a_close_left_unanswered_means_the_session_is_not_reused(make):
    h = _agent(make, request_timeout=1.0, env={"CLOSING_AGENT_CLOSE_DELAY": "30"})
    session = h.start(runtime_mode="full-access")
    h.turn("run before.txt")
    h.adapter.stop_session("t1")
    restarted = h.start(runtime_mode="approval-required", resume_cursor=session.resume_cursor)
    assert not restarted.resumed
    events = h.events_until(lambda e: etype(e) == "session.started")
    warnings = [e for e in events if etype(e) == "runtime.warning"]
    assert warnings and warnings[-1].code == "acp.resume_failed" and "not reused" in warnings[-1].message
    assert events[-1].resume_failed
    assert "session/load" not in _requests(h)  # refused before asking: a new session instead
    events, opened = _turn_declining(h, "run after.txt")
    assert [e.kind for e in opened] == ["command"]
    assert not (h.cwd / "after.txt").exists()


def test_an_agent_drifting_to_a_looser_mode_is_set_back_before_the_next_prompt(make):
    h = _agent(make)
    h.start(runtime_mode="approval-required")
    _, events = h.turn("drift")
    drift = [e for e in events if etype(e) == "runtime.warning" and e.code == "acp.mode_drift"]
    assert drift and drift[0].detail == {"mode": "bypassPermissions", "target": "default"}
    h.events_until(lambda e: etype(e) == "session.configured" and e.config.get("current_mode") == "default")
    events, opened = _turn_declining(h, "run after.txt")
    assert [e.kind for e in opened] == ["command"], [etype(e) for e in events]
    assert not (h.cwd / "after.txt").exists()


def test_a_turn_is_refused_typed_while_the_agent_refuses_the_runtime_mode(make):
    h = _agent(make)
    h.start(runtime_mode="approval-required")
    h.turn("stuck\ndrift")
    h.events_until(lambda e: etype(e) == "runtime.warning" and "refused mode" in e.message)
    prompts = _requests(h).count("session/prompt")
    with pytest.raises(RequestError, match="session/set_mode"):
        h.send("run after.txt")
    assert _requests(h).count("session/prompt") == prompts  # no prompt went out
    assert not (h.cwd / "after.txt").exists()


def test_a_plan_exit_never_offers_a_mode_looser_than_the_runtime_mode(make):
    """claude-agent-acp's ExitPlanMode offers "Yes, and bypass permissions" as an allow_always
    option: in approval-required it is withheld, so ``accept_for_session`` (which prefers
    allow_always) is not offered and ``accept`` keeps the session asking."""
    h = _agent(make)
    h.start(runtime_mode="approval-required")
    res = h.send("planexit")
    [opened] = [e for e in h.events_until(lambda e: etype(e) == "request.opened")
                if etype(e) == "request.opened"]
    assert [o["id"] for o in opened.data["options"]] == ["default", "plan"]
    assert "accept_for_session" not in opened.decisions
    with pytest.raises(ValidationError, match="does not offer 'accept_for_session'"):
        h.adapter.respond_to_request("t1", opened.request_id, "accept_for_session")  # stays open
    h.adapter.respond_to_request("t1", opened.request_id, "accept")
    h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    events, asked = _turn_declining(h, "run after.txt")
    assert [e.kind for e in asked] == ["command"], [etype(e) for e in events]
    assert not (h.cwd / "after.txt").exists()
    assert not [e for e in events if etype(e) == "runtime.warning" and e.code == "acp.mode_drift"]
