"""The stall watchdog (issue #24): a running turn silent for ``[runtime] stall_warning`` seconds
gets one ``runtime.warning`` (``turn.stalled``) per silence; a turn that keeps talking gets none."""

from __future__ import annotations

import pytest

from paddock import Runtime

pytestmark = pytest.mark.timeout(60)


def _turn(rt: Runtime, thread_id: str, text: str) -> list:
    with rt.subscribe(thread_id=thread_id) as events:
        turn = rt.send_turn(thread_id, text)
        seen = []
        while (event := events.get(timeout=30)) is not None:
            seen.append(event)
            if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                return seen
    raise AssertionError(f"no turn.completed; saw {[e.type for e in seen]}")


def test_a_silent_turn_is_warned_about_once_per_silence_and_a_talking_one_is_not(tmp_path):
    config = {"runtime": {"stall_warning": 0.6}, "instances": {"agent": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="agent", cwd=str(tmp_path))
        # two chunks 1.5 s apart: one silence of at least 1.5 s, warned at 0.6 s, 1.2 s (, ...)
        silent = _turn(rt, "t", "@chunks 2\n@delay 1.5\n@reply one two")
        stalled = [e for e in silent if e.type == "runtime.warning" and e.code == "turn.stalled"]
        assert len(stalled) >= 2, [(e.type, getattr(e, "code", None)) for e in silent]
        seconds = [e.detail["silent_seconds"] for e in stalled]
        assert all(later - earlier >= 0.5 for earlier, later in zip(seconds, seconds[1:])), seconds
        assert seconds[0] >= 0.6 and stalled[0].turn_id == silent[-1].turn_id and "no sign of life" in stalled[0].message
        # every warning came before the second chunk: the text arrived after them
        last_warning = max(silent.index(e) for e in stalled)
        assert [e for e in silent[last_warning:] if e.type == "content.delta"]
        assert silent[-1].state == "completed"
        # a chunk every 0.1 s is never silent for 0.6 s
        talking = _turn(rt, "t", "@chunks 15\n@delay 0.1\n@reply " + "word " * 15)
        assert not [e for e in talking if e.type == "runtime.warning" and e.code == "turn.stalled"]
