"""The driver scenarios that ``record_driver`` records from the pinned app-server and
``test_replay_driver`` replays without it: each drives a :class:`~tests.codex.conftest.Harness`
and returns what the replay test checks.

Regenerate the recordings after moving the codex pin (needs the pinned binary)::

    .venv/bin/python -m tests.codex.record_driver
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .conftest import etype, of_type, text_of

RESUME_PARTS = ("resume-1", "resume-2")


def _approval(h: Any, prompt: str, decision: str) -> dict:
    h.start(runtime_mode="approval-required")
    res = h.send(prompt)
    evs = h.events_until(lambda e: etype(e) in ("request.opened", "turn.completed"))
    [opened] = of_type(evs, "request.opened")
    h.adapter.respond_to_request("t1", opened.request_id, decision, timeout=10)
    evs += h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    [item] = [e for e in of_type(evs, "item.completed") if e.item_id == opened.item_id]
    return {"kind": opened.kind, "decision": of_type(evs, "request.resolved")[0].decision, "item": item.status,
            "state": evs[-1].state}


def text(h: Any) -> dict:
    h.start()
    res, evs = h.turn("say hi SCENARIO:text")
    return {"text": text_of(evs, res.turn_id), "state": evs[-1].state}


def multi_turn(h: Any) -> dict:
    h.start()
    h.turn("remember PELICAN SCENARIO:text")
    res, evs = h.turn("what was the word? SCENARIO:text")
    return {"text": text_of(evs, res.turn_id), "state": evs[-1].state,
            "turns": [t.state for t in h.adapter.read_thread("t1").turns]}


def approval_accept(h: Any) -> dict:
    return _approval(h, "create hello.txt SCENARIO:tool_shell", "accept")


def approval_decline(h: Any) -> dict:
    return _approval(h, "create hello.txt SCENARIO:tool_shell", "decline")


def patch_accept(h: Any) -> dict:
    return _approval(h, "add a file SCENARIO:patch", "accept")


def patch_decline(h: Any) -> dict:
    return _approval(h, "add a file SCENARIO:patch", "decline")


def interrupt(h: Any) -> dict:
    h.start()
    res = h.send("count slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.interrupt_turn("t1", res.turn_id, timeout=10)
    evs = h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    return {"state": evs[-1].state}


def http500(h: Any) -> dict:
    h.start()
    res, evs = h.turn("break SCENARIO:http500")
    return {"state": evs[-1].state, "error": evs[-1].error}


SCENARIOS: dict[str, Callable[[Any], dict]] = {
    "text": text,
    "multi_turn": multi_turn,
    "approval_accept": approval_accept,
    "approval_decline": approval_decline,
    "patch_accept": patch_accept,
    "patch_decline": patch_decline,
    "interrupt": interrupt,
    "http500": http500,
}
"""Scenario name -> driver steps (one instance, one process). ``resume`` is two processes."""

EXPECTED: dict[str, dict] = {
    "text": {"text": "Hello from mock", "state": "completed"},
    "multi_turn": {"text": "Hello from mock", "state": "completed", "turns": ["completed", "completed"]},
    "approval_accept": {"kind": "command", "decision": "accept", "item": "completed", "state": "completed"},
    "approval_decline": {"kind": "command", "decision": "decline", "item": "declined", "state": "completed"},
    "patch_accept": {"kind": "file_change", "decision": "accept", "item": "completed", "state": "completed"},
    "patch_decline": {"kind": "file_change", "decision": "decline", "item": "declined", "state": "completed"},
    "interrupt": {"state": "interrupted"},
    "http500": {"state": "failed"},
}


def resume_first(h: Any) -> Any:
    h.start()
    h.turn("the word is PELICAN SCENARIO:text")
    return h.adapter.list_sessions()[0].resume_cursor


def resume_second(h: Any, cursor: Any) -> dict:
    session = h.start(resume_cursor=cursor)
    res, evs = h.turn("what was the word? SCENARIO:text")
    return {"resumed": session.resumed, "state": evs[-1].state}


KILL_PARTS = ("kill9-1", "kill9-2")


def _pid(h: Any) -> int:
    return h.adapter.link.conn.process.pid


def kill9_first(h: Any) -> dict:
    """A turn, then a slow turn killed (SIGKILL) mid-stream; returns once the session exited."""
    import os
    import signal

    h.start()
    h.turn("the word is PELICAN SCENARIO:text")
    res = h.send("count slowly SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    pid = _pid(h)
    os.kill(pid, signal.SIGKILL)
    evs = h.events_until(lambda e: etype(e) == "session.exited")
    [done] = [e for e in of_type(evs, "turn.completed") if e.turn_id == res.turn_id]
    return {"pid": pid, "state": done.state, "recoverable": evs[-1].recoverable}


def kill9_second(h: Any, old_pid: int) -> dict:
    """After the restart: the next turn resumes the thread on the new process."""
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        link = h.adapter.link
        if link is not None and link.conn.process.pid != old_pid and link.exit_info is None:
            break
        time.sleep(0.05)
    res, evs = h.turn("what was the word? SCENARIO:text")
    started = of_type(evs, "session.started")
    return {"resumed": bool(started) and started[-1].resumed, "state": evs[-1].state}
