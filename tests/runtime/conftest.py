from __future__ import annotations

import pytest

from paddock import Runtime

TWO_LOCAL = {
    "instances": {
        "local-a": {"driver": "local", "env": {"ACCOUNT": "a"}},
        "local-b": {"driver": "local", "env": {"ACCOUNT": "b"}},
    }
}


@pytest.fixture
def workspace(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def rt(tmp_path):
    runtime = Runtime.open(TWO_LOCAL, state_dir=tmp_path / "state")
    yield runtime
    runtime.close()


def run_turn(rt, thread_id, text, *, timeout=20.0, on_request=None):
    """Send a turn and collect its events until its turn.completed; returns (result, events)."""
    with rt.subscribe(thread_id=thread_id) as sub:
        turn = rt.send_turn(thread_id, text)
        events = []
        while True:
            event = sub.get(timeout=timeout)
            assert event is not None, f"no turn.completed within {timeout} s; got {[e.type for e in events]}"
            events.append(event)
            if event.type == "request.opened" and on_request is not None:
                on_request(event)
            if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                return turn, events


def text_of(events):
    return "".join(e.delta for e in events if e.type == "content.delta" and e.stream == "assistant_text")
