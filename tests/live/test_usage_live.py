"""Live: the usage ledger and usage limits on every pinned driver against the scripted model
server, behind the tripwire proxy (issue 39).

- the ledger's totals of a thread equal the usage its agent reported (the last cumulative
  ``thread.token-usage.updated``), and every turn is counted;
- a model that answers a usage limit (HTTP 429 with a reset 3 s ahead, ``SCENARIO:usage_limit``)
  under ``on_usage_limit = "wait"`` ends with the turn completed after the reset with no call from
  the host: either Paddock parked the thread and sent the turn again (``runtime.error`` of class
  ``usage_limit``, ``thread.state.changed`` to ``waiting``), or the agent retried by itself. The
  test prints which, and whether ``resets_at`` was known.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from paddock import Runtime
from paddock.contract import Budget, BudgetExceededError
from paddock.testing import ModelServer, Text, UsageLimit

from tests.runtime.test_usage_limits import until

from .test_host_handoff import _instance, proxied  # noqa: F401  (proxied: a fixture)

pytestmark = [pytest.mark.live, pytest.mark.timeout(240)]

DRIVERS = ["claude", "codex", "opencode", "gemini", "qwen", "claude-acp", "copilot", "codex-acp"]
SCRIPT = {"scenarios": {"usage_limit": [UsageLimit(resets_in=3.0), Text(text="Back after the reset", chunks=1)]}}


def _events_until_completed(sub, timeout: float) -> list:
    return until(sub, lambda e: e.type == "turn.completed" and e.state == "completed", timeout)


@contextlib.contextmanager
def _served(driver: str, tmp_path, proxied, runtime: dict | None = None) -> Iterator[dict]:
    """The config of one instance ``agent`` of the pinned ``driver`` against a running scripted
    model server (workspace ``tmp_path/ws``)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ModelServer(SCRIPT, workspace=workspace, log_path=tmp_path / "requests.jsonl") as server:
        yield {"runtime": runtime or {}, "instances": {"agent": _instance(driver, tmp_path, server, proxied)}}


@contextlib.contextmanager
def _started(config: dict, tmp_path) -> Iterator[Runtime]:
    """A runtime on ``config`` with thread ``t`` started on ``agent``."""
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="agent", cwd=str(tmp_path / "ws"), runtime_mode="full-access", timeout=90)
        yield rt


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_ledger_and_a_usage_limit_on_every_driver(driver, tmp_path, proxied):
    with _served(driver, tmp_path, proxied, {"on_usage_limit": "wait"}) as config:
        with _started(config, tmp_path) as rt:
            history: list = []
            with rt.subscribe(thread_id="t") as sub:
                for prompt in ("say hi SCENARIO:text", "again SCENARIO:text"):
                    rt.send_turn("t", prompt, timeout=60)
                    history += _events_until_completed(sub, 90)
                reported = [e for e in rt.read_thread("t").turns]
                began = time.time()
                rt.send_turn("t", "limited SCENARIO:usage_limit", timeout=60)
                limited = _events_until_completed(sub, 150)
                history += limited
            usage = rt.usage("t")
    last = [e for e in history if e.type == "thread.token-usage.updated"]
    ledger = usage.total
    if last:
        u = last[-1].usage
        assert (ledger.input_tokens, ledger.output_tokens) == (u.input_tokens or 0, u.output_tokens or 0), (ledger, u)
    assert ledger.turns >= len(reported) + 1
    errors = [e for e in limited if e.type == "runtime.error" and e.error_class == "usage_limit"]
    parked = [e for e in limited if e.type == "thread.state.changed" and e.state == "waiting"]
    text = "".join(e.delta for e in limited if e.type == "content.delta" and e.stream == "assistant_text")
    assert "Back after the reset" in text and time.time() >= began + 2.5
    how = ("parked by Paddock" if parked else "retried by the agent") + (
        f", usage_limit {'with' if errors and errors[0].resets_at else 'without'} resets_at" if errors else ", no runtime.error")
    print(f"{driver}: usage {'reported' if last else 'not reported'} ({ledger.total_tokens} tokens); limit: {how}")



def _until_completed(sub, timeout: float) -> list:
    return until(sub, lambda e: e.type == "turn.completed", timeout)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_token_budget_stops_the_thread_on_every_driver(driver, tmp_path, proxied):
    """A thread budget set just above what the thread spent: the next turn's usage report crosses
    it (the turn is stopped, or it ends first), and the turn after that is refused with
    ``BudgetExceededError``; the overshoot is at most that one report."""
    with _served(driver, tmp_path, proxied) as config:
        with _started(config, tmp_path) as rt:
            with rt.subscribe(thread_id="t") as sub:
                rt.send_turn("t", "say hi SCENARIO:text", timeout=60)
                first = _events_until_completed(sub, 90)
                spent = rt.usage("t").total.total_tokens
                [info] = [i for i in rt.instances() if i.id == "agent"]
                assert info.capabilities is not None
                if not spent:
                    # An agent that reports no token counts says so (a token budget cannot bind
                    # it, and the host can know that up front): that is what is checked here.
                    assert info.capabilities.usage.source == "none", (driver, info.capabilities.usage)
                    print(f"{driver}: usage.source none, no token counts reported: a token budget cannot bind it")
                    return
                rt.set_budget(Budget(tokens=spent + 1), thread_id="t")
                rt.send_turn("t", "again SCENARIO:text", timeout=60)
                second = _until_completed(sub, 90)
            with pytest.raises(BudgetExceededError) as err:
                rt.send_turn("t", "one more SCENARIO:text", timeout=60)
            after = rt.usage("t").total.total_tokens
    assert (err.value.budget, err.value.scope, err.value.limit) == ("tokens", "thread", spent + 1)
    assert after > spent + 1  # the second turn's report crossed it: the refusal follows from it
    print(f"{driver}: budget {spent + 1}, spent {after} after one more turn ({second[-1].state}); "
          f"overshoot {after - spent - 1} tokens")


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_parked_thread_completes_after_a_host_restart_on_every_driver(driver, tmp_path, proxied):
    """``on_usage_limit = "wait"``: the host closes while the thread is parked and opens the state
    dir again; the new runtime sends the turn again at the reset, with no call from the host. A
    driver whose agent retries by itself is not parked by Paddock (its turn completes after the
    reset, which is checked instead)."""
    with _served(driver, tmp_path, proxied, {"on_usage_limit": "wait"}) as config:
        with _started(config, tmp_path) as rt:
            with rt.subscribe(thread_id="t") as sub:
                rt.send_turn("t", "limited SCENARIO:usage_limit", timeout=60)
                first = until(sub, lambda e: e.type == "turn.completed", 150)
                if first[-1].state == "completed":
                    # The agent retried by itself past the reset: nothing is parked, so a restart
                    # has nothing to carry (the conformance report names this driver's way).
                    text = "".join(e.delta for e in first if e.type == "content.delta" and e.stream == "assistant_text")
                    assert "Back after the reset" in text
                    print(f"{driver}: the agent retried by itself; Paddock parked nothing")
                    return
                until(sub, lambda e: e.type == "thread.state.changed" and e.state == "waiting", 30)
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            with rt.subscribe(thread_id="t", types=["turn.completed"]) as sub:
                done = until(sub, lambda e: e.type == "turn.completed", 150)[-1]
            assert done.state == "completed", done
            assert rt.read_thread("t").turns[-1].state == "completed"
