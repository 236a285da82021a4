"""Issue 25: output an ACP agent sends for a prompt after its turn ended ``interrupted`` (the agent
never acknowledged the cancel) is not the next turn's: it is dropped, with one
``runtime.warning`` (``acp.late_output``), until the agent answers that prompt. A real scripted
agent process that ignores cancels (``deaf-forever N``; the local agent honours every cancel)."""

from __future__ import annotations

import sys
from pathlib import Path

from .conftest import etype, text_of

AGENT = str(Path(__file__).with_name("scripted_agent.py"))


def test_output_after_an_unacknowledged_cancel_is_dropped_not_given_to_the_next_turn(make):
    h = make(driver="acp", binary=sys.executable, args=[AGENT], cancel_timeout=0.2, cancel_guard=0.0)
    h.start()
    first = h.send("deaf-forever 60")  # 60 chunks 0.05 s apart, whatever the host says
    h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.interrupt_turn("t1")
    ended = h.events_until(lambda e: etype(e) == "turn.completed")
    assert ended[-1].turn_id == first.turn_id and ended[-1].state == "interrupted"
    # The agent streams on for about 3 s, then answers the old prompt, then runs this one.
    second, events = h.turn("ask fancy/method")
    assert events[-1].state == "completed", events[-1]
    assert text_of([e for e in events if getattr(e, "turn_id", None) == second.turn_id]) == "err:-32601\n"
    late = [e for e in events if etype(e) == "runtime.warning" and e.code == "acp.late_output"]
    assert len(late) == 1 and late[0].turn_id == first.turn_id, late
    leaked = [e for e in events if etype(e) == "content.delta" and e.delta.startswith("d")]
    assert leaked == []
