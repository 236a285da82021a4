"""A dead model endpoint (issue #33, item 6): a running turn whose agent goes quiet on an
instance whose ``endpoint`` takes no connection is failed by the runtime within the instance's
``endpoint_timeout``, with one ``runtime.error`` naming the endpoint and the reason; a turn on a
live endpoint that is just as quiet is left alone.

The local agent calls no model: a turn of two chunks with a long pause between them stands in
for an agent waiting on its model (the runtime's check is the same for every driver; the live
drivers' own turns on a dead port are in tests/live/test_dead_endpoint.py)."""

from __future__ import annotations

import socket
import time

import pytest

from paddock import Runtime

pytestmark = pytest.mark.timeout(60)

QUIET_TURN = "@chunks 2\n@delay 40\n@reply waiting on the model"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on exit: nothing listens there


def _turn(rt: Runtime, thread_id: str, text: str, timeout: float) -> tuple[list, float]:
    with rt.subscribe(thread_id=thread_id) as sub:
        started = time.monotonic()
        turn = rt.send_turn(thread_id, text)
        seen = []
        while (event := sub.get(timeout=timeout)) is not None:
            seen.append(event)
            if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                # anything else of this turn arrives with or right after it
                while (late := sub.get(timeout=0.5)) is not None:
                    seen.append(late)
                return seen, time.monotonic() - started
    raise AssertionError(f"no turn.completed within {timeout} s; saw {[e.type for e in seen]}")


def test_a_turn_on_a_dead_endpoint_fails_once_within_endpoint_timeout_naming_it_and_a_live_one_is_left_alone(
        tmp_path):
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    with socket.create_server(("127.0.0.1", 0)) as live:
        config = {"instances": {
            "dead": {"driver": "local", "endpoint": url, "endpoint_timeout": 3},
            "live": {"driver": "local", "endpoint": f"http://127.0.0.1:{live.getsockname()[1]}", "endpoint_timeout": 1},
        }}
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            rt.start_session("t", instance="dead", cwd=str(tmp_path))
            events, took = _turn(rt, "t", QUIET_TURN, timeout=30)
            errors = [e for e in events if e.type == "runtime.error"]
            completed = [e for e in events if e.type == "turn.completed"]
            assert [e.code for e in errors] == ["endpoint.unreachable"], [(e.type, getattr(e, "code", "")) for e in events]
            assert url in errors[0].message and "Connection refused" in errors[0].message, errors[0].message
            assert errors[0].detail["endpoint"] == url and errors[0].turn_id == completed[0].turn_id
            assert [(e.state, url in (e.error or "")) for e in completed] == [("failed", True)], completed
            assert took < 3 + 5, f"the turn failed after {took:.1f} s"
            # the session goes on: the next turn (talking) completes
            events, _ = _turn(rt, "t", "@reply still here", timeout=30)
            assert events[-1].type == "turn.completed" and events[-1].state == "completed"
            assert not [e for e in events if e.type == "runtime.error"]

            # just as quiet, for longer than its endpoint_timeout, on an endpoint that answers
            rt.start_session("u", instance="live", cwd=str(tmp_path))
            events, took = _turn(rt, "u", "@chunks 2\n@delay 4\n@reply quiet but fine", timeout=30)
            assert events[-1].type == "turn.completed" and events[-1].state == "completed", events[-1]
            assert not [e for e in events if e.type == "runtime.error"] and took >= 4
