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


def test_a_turn_waiting_for_a_person_is_not_stalled_and_its_clock_restarts_at_the_answer(tmp_path):
    # Issue 33 #7: an approval left open for 4 bounds gets no turn.stalled; after the answer the
    # turn's silences count again, from the answer on.
    config = {"runtime": {"stall_warning": 0.5}, "instances": {"agent": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="agent", cwd=str(tmp_path), runtime_mode="approval-required")
        with rt.subscribe(thread_id="t") as events:
            turn = rt.send_turn("t", f"@write {tmp_path}/a.txt x\n@chunks 2\n@delay 1.2\n@reply one two")
            seen = []
            while (event := events.get(timeout=10)) is not None and event.type != "request.opened":
                seen.append(event)
            assert event is not None, [e.type for e in seen]
            opened = event
            # Four bounds with the request open: nothing but silence.
            assert events.get(timeout=2.0) is None
            rt.respond_to_request("t", opened.request_id, "accept")
            after = []
            while (event := events.get(timeout=30)) is not None:
                after.append(event)
                if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                    break
        stalled = [e for e in seen + after if e.type == "runtime.warning" and e.code == "turn.stalled"]
        assert stalled, [(e.type, getattr(e, "code", None)) for e in after]  # the later silence counts
        # counted from the answer, not from the request's opening 2 s before it
        assert all(e.detail["silent_seconds"] < 1.9 for e in stalled), [e.detail for e in stalled]
        assert after[-1].state == "completed"
