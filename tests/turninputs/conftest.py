"""Shared by the model-catalog and attachment tests: a real PNG, and turns run to their end."""

from __future__ import annotations

import pytest

from paddock.testing._png import red_png


PNG = red_png()
"""A valid 2x2 red RGB PNG."""


@pytest.fixture
def png_file(tmp_path):
    """A workspace folder holding ``red.png``; returns (workspace, path)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    path = ws / "red.png"
    path.write_bytes(PNG)
    return ws, path


def run_turn(rt, thread_id: str, text: str, *, timeout: float = 30.0, **kwargs):
    """Send a turn and collect its events until its ``turn.completed``; returns (result, events)."""
    with rt.subscribe(thread_id=thread_id) as sub:
        turn = rt.send_turn(thread_id, text, **kwargs)
        events = []
        while True:
            event = sub.get(timeout=timeout)
            assert event is not None, f"no turn.completed within {timeout} s; got {[e.type for e in events]}"
            events.append(event)
            if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                return turn, events


def text_of(events) -> str:
    return "".join(e.delta for e in events if e.type == "content.delta" and e.stream == "assistant_text")
