"""The scripted sessions of the opencode driver's recordings: each drives a Harness and returns
what the replay test checks. Shared by record_driver.py (live) and test_replay.py (replayed)."""

from __future__ import annotations

from collections.abc import Callable

from tests.adapter_harness import etype


def text(h) -> list:
    h.start()
    _, evs = h.turn("Paddock recording. SCENARIO:text")
    return evs


def tool_shell(h) -> list:
    h.start(runtime_mode="approval-required")
    res = h.send("Paddock recording. SCENARIO:tool_shell")
    evs = h.events_until(lambda e: etype(e) in ("request.opened", "turn.completed"))
    opened = [e for e in evs if etype(e) == "request.opened"][0]
    h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=20)
    evs += h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    return evs


SCENARIOS: dict[str, Callable] = {"text": text, "tool_shell": tool_shell}
