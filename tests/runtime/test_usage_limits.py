"""Usage limits (issue 39) on the local agent: a model's usage limit is a ``runtime.error`` of
``error_class = "usage_limit"`` with its reset time; with ``on_usage_limit = "wait"`` the thread is
parked (``thread.state.changed`` to ``waiting``) and its turn completes after the reset with no
call from the host, also across a host restart in between; with ``"fail"`` the turn just fails."""

from __future__ import annotations

import time

import pytest

from paddock import Runtime

from .conftest import TWO_LOCAL

pytestmark = pytest.mark.timeout(90)

WAIT = {**TWO_LOCAL, "runtime": {"on_usage_limit": "wait"}}


def until(sub, predicate, timeout: float = 30.0) -> list:
    """The events of ``sub`` up to the first that ``predicate`` holds for; fails after ``timeout`` s."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        event = sub.get(timeout=max(0.05, deadline - time.monotonic()))
        if event is None:
            break
        seen.append(event)
        if predicate(event):
            return seen
    raise AssertionError(f"not seen within {timeout} s; saw {[(e.type, getattr(e, 'state', None)) for e in seen]}")


def test_a_usage_limit_parks_the_thread_and_the_turn_completes_after_the_reset(tmp_path, workspace):
    with Runtime.open(WAIT, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local-a", cwd=workspace)
        with rt.subscribe(thread_id="t") as sub:
            resets = time.time() + 3
            rt.send_turn("t", f"@limit-until {resets}\n@reply after the reset")
            first = until(sub, lambda e: e.type == "turn.completed")
            [limit] = [e for e in first if e.type == "runtime.error"]
            assert limit.error_class == "usage_limit" and limit.resets_at == pytest.approx(resets, abs=0.01)
            assert first[-1].state == "failed"
            parked = until(sub, lambda e: e.type == "thread.state.changed")[-1]
            assert parked.state == "waiting" and parked.resets_at >= resets
            again = until(sub, lambda e: e.type == "turn.completed", timeout=20)
            assert again[-1].state == "completed" and time.time() >= resets
            text = "".join(e.delta for e in again if e.type == "content.delta")
            assert text == "after the reset"


def test_the_wait_survives_a_host_restart(tmp_path, workspace):
    state = tmp_path / "state"
    resets = time.time() + 3
    with Runtime.open(WAIT, state_dir=state) as rt:
        rt.start_session("t", instance="local-a", cwd=workspace)
        with rt.subscribe(thread_id="t", types=["thread.state.changed"]) as sub:
            rt.send_turn("t", f"@limit-until {resets}\n@reply resumed by itself")
            until(sub, lambda e: e.state == "waiting")
    assert time.time() < resets  # closed before the reset: the new host sends the turn
    with Runtime.open(WAIT, state_dir=state) as rt:
        with rt.subscribe(thread_id="t", types=["turn.completed"]) as sub:
            done = until(sub, lambda e: e.type == "turn.completed", timeout=20)[-1]
        assert done.state == "completed" and time.time() >= resets
        turns = rt.read_thread("t").turns
        assert turns[-1].state == "completed"


def test_fail_ends_the_turn_failed_and_sends_nothing_again(tmp_path, workspace):
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local-a", cwd=workspace)
        with rt.subscribe(thread_id="t") as sub:
            rt.send_turn("t", f"@limit-until {time.time() + 1}\nhello")
            first = until(sub, lambda e: e.type == "turn.completed")
            assert first[-1].state == "failed" and any(e.type == "runtime.error" and e.error_class == "usage_limit" for e in first)
            assert sub.get(timeout=2.5) is None  # nothing parked, nothing sent again
