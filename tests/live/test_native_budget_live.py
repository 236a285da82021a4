"""Live: a thread's own budget reaches the pinned Claude Code as its native limit, a second layer
under Paddock's (issue 39): ``start_session(budget=Budget(cost=...))`` starts the CLI with
``--max-budget-usd`` (read back from the running process's command line), a thread without a
budget of its own gets no such flag, and the CLI accepts it (the turn completes)."""

from __future__ import annotations

import pytest

from paddock import Runtime
from paddock.contract import Budget

from tests.helpers import shim_agents
from tests.runtime.test_usage_limits import until

from .test_host_handoff import _instance, one_agent, proxied  # noqa: F401  (proxied: a fixture)

pytestmark = [pytest.mark.live, pytest.mark.timeout(240)]


def _flag(argv: list[str]) -> str | None:
    return argv[argv.index("--max-budget-usd") + 1] if "--max-budget-usd" in argv else None


def test_the_threads_cost_budget_is_claudes_max_budget_usd(tmp_path, proxied):
    with one_agent("claude", tmp_path, proxied) as (_, config, workspace):
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            before = {p.pid for p in shim_agents()}
            rt.start_session("t", instance="agent", cwd=str(workspace), budget=Budget(cost=2.5), timeout=90)
            [bounded] = [p for p in shim_agents() if p.pid not in before]
            rt.start_session("u", instance="agent", cwd=str(workspace), timeout=90)
            [plain] = [p for p in shim_agents() if p.pid not in before | {bounded.pid}]
            assert _flag(bounded.cmdline()) == "2.5" and _flag(plain.cmdline()) is None
            with rt.subscribe(thread_id="t") as sub:
                rt.send_turn("t", "say hi SCENARIO:text", timeout=60)
                done = until(sub, lambda e: e.type == "turn.completed", 90)[-1]
            assert done.state == "completed"
