"""``on_usage_limit = "failover"`` (issue 39) on two local instances standing for two accounts:
the local agent's ``@limit-until T a`` limits only the agent whose ``ACCOUNT`` is ``a``.

- a turn that meets the limit on ``local-a`` is handed over to the first instance of the list
  that is available (an instance of an unknown driver is skipped) and not limited: a new thread
  ``t@local-b`` started by the ``fork_thread`` hand-off, ``thread.failed-over`` on the source,
  and the turn completes there with no call from the host; the source gets nothing more until
  the host sends it a turn, and then it answers on its own instance;
- with every listed instance limited, the thread waits for the reset instead;
- a ``failover`` list naming an unknown instance, or a ``"failover"`` policy without a list, is a
  ``ConfigError``.
"""

from __future__ import annotations

import time

import pytest

from paddock import Runtime
from paddock.contract import ConfigError

from .conftest import TWO_LOCAL
from .test_usage_limits import until

pytestmark = pytest.mark.timeout(90)

INSTANCES = {**TWO_LOCAL["instances"], "gone": {"driver": "no-such-driver"}}
FAILOVER = {"runtime": {"on_usage_limit": "failover", "failover": ["gone", "local-b"]}, "instances": INSTANCES}


def _text(events: list, thread_id: str) -> str:
    return "".join(e.delta for e in events if e.type == "content.delta" and e.thread_id == thread_id)


def test_a_limited_thread_is_handed_over_to_the_next_instance_and_comes_back_when_the_host_says(tmp_path, workspace):
    with Runtime.open(FAILOVER, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local-a", cwd=workspace)
        with rt.subscribe() as sub:
            rt.send_turn("t", "@reply the first answer")
            until(sub, lambda e: e.type == "turn.completed")
            rt.send_turn("t", f"@limit-until {time.time() + 60} a\n@reply served by account b")
            seen = until(sub, lambda e: e.type == "turn.completed" and e.thread_id == "t@local-b", timeout=40)
            [limit] = [e for e in seen if e.type == "runtime.error"]
            assert limit.error_class == "usage_limit" and limit.thread_id == "t"
            [moved] = [e for e in seen if e.type == "thread.failed-over"]
            assert (moved.thread_id, moved.instance_id) == ("t", "local-a")
            assert (moved.to_thread_id, moved.to_instance_id) == ("t@local-b", "local-b")
            assert moved.resets_at == pytest.approx(limit.resets_at)
            assert seen[-1].state == "completed" and seen[-1].instance_id == "local-b"
            assert _text(seen, "t@local-b") == "served by account b"
            assert not any(e.type == "thread.state.changed" and e.state == "waiting" for e in seen)
            later = []
            while (event := sub.get(timeout=1.5)) is not None:
                later.append(event)
            assert not [e for e in later if e.thread_id == "t" and e.type == "turn.started"], later
            # The source stays on its own instance; the host brings it back by sending it a turn.
            rt.send_turn("t", "@reply back on account a")
            back = until(sub, lambda e: e.type == "turn.completed" and e.thread_id == "t")
            assert back[-1].state == "completed" and back[-1].instance_id == "local-a"
            assert _text(back, "t") == "back on account a"
        copy = rt.read_thread("t@local-b").turns
        assert [t.state for t in copy] == ["completed"]


def test_with_every_listed_instance_limited_the_thread_waits_for_the_reset(tmp_path, workspace):
    config = {"runtime": {"on_usage_limit": "failover", "failover": ["local-b"]},
              "instances": {"local-a": INSTANCES["local-a"], "local-b": {**INSTANCES["local-b"], "on_usage_limit": "fail"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("u", instance="local-b", cwd=workspace)
        rt.start_session("t", instance="local-a", cwd=workspace)
        resets = time.time() + 4
        with rt.subscribe() as sub:
            rt.send_turn("u", f"@limit-until {resets}\nhello")  # local-b meets its limit first
            until(sub, lambda e: e.type == "turn.completed" and e.thread_id == "u")
            rt.send_turn("t", f"@limit-until {resets}\n@reply after the reset")
            seen = until(sub, lambda e: e.type == "turn.completed" and e.thread_id == "t" and e.state == "completed",
                         timeout=30)
        assert time.time() >= resets
        [warning] = [e for e in seen if e.type == "runtime.warning" and e.code == "usage_limit.no_failover"]
        assert warning.thread_id == "t" and warning.detail == {"tried": ["local-b: limited"]}
        assert any(e.type == "thread.state.changed" and e.state == "waiting" and e.thread_id == "t" for e in seen)
        assert not [e for e in seen if e.type == "thread.failed-over"]
        assert _text(seen, "t") == "after the reset"


@pytest.mark.parametrize(("runtime", "instance", "says"), [
    ({"on_usage_limit": "failover", "failover": ["local-c"]}, {}, "'local-c' is not a configured instance"),
    ({"on_usage_limit": "failover"}, {}, "needs a 'failover' list"),
    ({}, {"on_usage_limit": "failover"}, "needs a 'failover' list"),
    ({}, {"failover": ["local-a"]}, "cannot fail over to itself"),
    ({}, {"on_usage_limit": "move"}, "expected \"fail\", \"wait\" or \"failover\""),
])
def test_a_failover_config_that_cannot_work_is_a_config_error(tmp_path, runtime, instance, says):
    config = {"runtime": runtime,
              "instances": {"local-a": {**INSTANCES["local-a"], **instance}, "local-b": INSTANCES["local-b"]}}
    with pytest.raises(ConfigError, match=says.replace("(", r"\(")):
        Runtime.open(config, state_dir=tmp_path / "state")
