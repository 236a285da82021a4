"""Session actors share a bounded dispatcher: one stuck on its agent never delays another's turn."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from paddock.actors import default_dispatcher
from paddock.contract import OperationTimeout, StartSessionInput

from .conftest import text_of

AGENT = str(Path(__file__).with_name("scripted_agent.py"))


@pytest.mark.timeout(90)
def test_sessions_stuck_on_their_agent_do_not_delay_another_sessions_turn(make, tmp_path):
    # More stuck sessions than the dispatcher has workers: with a thread per worker held by
    # each stuck handler (and nothing else), the healthy session could not run at all.
    h = make(driver="acp", binary=sys.executable, args=[AGENT], env={"SCRIPTED_STUCK": "1"},
             request_timeout=20.0)
    h.start("ok")  # the agent process runs; this session answers
    stuck = default_dispatcher().workers + 2
    outcomes: list[BaseException | None] = []

    def start_stuck(n: int) -> None:
        folder = tmp_path / f"stuck{n}"
        folder.mkdir()
        try:
            h.adapter.start_session(StartSessionInput(thread_id=f"stuck{n}", cwd=str(folder)), timeout=15.0)
            outcomes.append(None)
        except BaseException as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=start_stuck, args=(n,), daemon=True) for n in range(stuck)]
    for t in threads:
        t.start()
    # Every stuck session's session/new has reached the agent, which will never answer it.
    markers = [tmp_path / f"stuck{n}" / "session-new-received" for n in range(stuck)]
    deadline = time.monotonic() + 10
    while not all(m.exists() for m in markers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all(m.exists() for m in markers), "the stuck sessions' session/new never reached the agent"
    t0 = time.monotonic()
    res, events = h.turn("hello", thread_id="ok")
    took = time.monotonic() - t0
    assert text_of(events, res.turn_id) == "unknown:hello\n"
    assert took < 8.0, f"the healthy session's turn took {took:.2f} s behind {stuck} stuck sessions"
    for t in threads:
        t.join(30)
    assert len(outcomes) == stuck
    assert all(isinstance(o, OperationTimeout) for o in outcomes), outcomes
