"""The usage ledger and budgets (issue 39) on the local agent: the ledger's totals are the sum of
the turns' reported usage, survive a restart and are rebuilt from the event log; a budget warns at
its fraction, stops the running turn at its limit (within one usage report) and refuses the next
``send_turn`` until it is raised."""

from __future__ import annotations

import pickle
import sqlite3
import time

import msgspec
import pytest

from paddock import Runtime
from paddock.contract import Budget, BudgetExceededError

from .conftest import TWO_LOCAL, run_turn

pytestmark = pytest.mark.timeout(90)

PRICED = {**TWO_LOCAL, "pricing": {"m-1": {"input": 2.0, "output": 10.0, "cached_input": 1.0}}}


def _turns(rt: Runtime, thread_id: str, usages: list[tuple[int, int]]) -> None:
    for inp, out in usages:
        _, events = run_turn(rt, thread_id, f"@usage {inp} {out}\nhello")
        assert events[-1].state == "completed"


def test_the_ledger_totals_equal_the_sum_of_the_turns_and_survive_a_restart(tmp_path, workspace):
    state = tmp_path / "state"
    usages = [(100, 20), (250, 40), (7, 3)]
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
        rt.start_session("a", instance="local-a", cwd=workspace)
        rt.start_session("b", instance="local-b", cwd=workspace)
        _turns(rt, "a", usages)
        _turns(rt, "b", [(1000, 1)])
        report = rt.usage("a")
        assert [(t.input_tokens, t.output_tokens) for t in report.turns] == usages
        assert all(t.turns == 1 and t.state == "completed" and t.turn_seconds >= 0 for t in report.turns)
        assert (report.total.input_tokens, report.total.output_tokens) == (357, 63)
        assert report.total.total_tokens == 420 and report.total.turns == 3
        assert report.total.cost is None and report.total.cost_source == "unknown"
        everything = rt.usage()
        assert everything.total.total_tokens == 420 + 1001 and everything.total.turns == 4
        assert {i.instance_id: i.total_tokens for i in everything.instances} == {"local-a": 420, "local-b": 1001}
        assert rt.usage(instance="local-b").total.turns == 1
        assert rt.usage(since=time.time() + 60).total.turns == 0
        # the agent processes of each instance: CPU seconds and peak RSS (none per thread)
        assert all(i.cpu_seconds is not None and i.cpu_seconds > 0 and i.peak_rss_bytes > 1_000_000
                   for i in everything.instances), everything.instances
        assert everything.total.cpu_seconds >= max(i.cpu_seconds for i in everything.instances)
        assert report.threads[0].cpu_seconds is None and report.turns[0].peak_rss_bytes is None
        before = rt.usage()
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
        kept = rt.usage()  # kept in paddock.db (the processes' figures only grow)
        assert msgspec.structs.replace(kept.total, cpu_seconds=None, peak_rss_bytes=None) == msgspec.structs.replace(
            before.total, cpu_seconds=None, peak_rss_bytes=None)
        assert kept.total.cpu_seconds >= before.total.cpu_seconds
        _turns(rt, "a", [(1, 1)])  # a resumed thread keeps counting from its cumulative total
        assert rt.usage("a").total.total_tokens == 422
    db = sqlite3.connect(state / "paddock.db")
    with db:
        db.execute("DROP TABLE usage_turns")
        db.execute("DROP TABLE usage_threads")
        db.execute("DROP TABLE usage_meta")
    db.close()
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
        rebuilt = rt.usage()  # folded again from the event log
        assert rebuilt.total.total_tokens == 422 + 1001 and rebuilt.total.turns == 5


def test_cost_comes_from_the_provider_else_from_the_pricing_table(tmp_path, workspace):
    with Runtime.open(PRICED, state_dir=tmp_path / "state") as rt:
        rt.start_session("p", instance="local-a", cwd=workspace, model="m-1")
        _turns(rt, "p", [(1_000_000, 100_000)])
        priced = rt.usage("p").total
        assert priced.cost_source == "pricing" and priced.cost == pytest.approx(2.0 + 1.0)
        rt.start_session("q", instance="local-b", cwd=workspace)
        _, events = run_turn(rt, "q", "@cost 0.25\n@usage 10 10\nhi")
        assert events[-1].state == "completed"
        reported = rt.usage("q").total
        assert reported.cost_source == "provider" and reported.cost == pytest.approx(0.25)
        assert rt.usage().total.cost_source == "mixed" and rt.usage().total.cost == pytest.approx(3.25)


def test_a_token_budget_warns_then_refuses_the_next_turn_until_raised(tmp_path, workspace):
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local-a", cwd=workspace, budget=Budget(tokens=500))
        with rt.subscribe(thread_id="t", types=["budget.warning"]) as warnings:
            _turns(rt, "t", [(100, 100), (100, 100)])  # 400: 80 % of 500
            warned = warnings.get(timeout=10)
            assert warned is not None and not warned.exceeded
            assert (warned.budget, warned.scope, warned.figure, warned.limit) == ("tokens", "thread", 400, 500)
            _turns(rt, "t", [(100, 100)])  # 600: spent, within one report (overshoot 100)
            spent = warnings.get(timeout=10)
            assert spent is not None and spent.exceeded and spent.figure == 600
        with pytest.raises(BudgetExceededError):
            rt.steer_turn("t", "steering spends too")
        with pytest.raises(BudgetExceededError) as err:
            rt.send_turn("t", "one more")
        assert (err.value.budget, err.value.scope, err.value.figure, err.value.limit) == ("tokens", "thread", 600, 500)
        again = pickle.loads(pickle.dumps(err.value))
        assert str(again) == str(err.value) and again.limit == 500
        assert rt.usage("t").total.total_tokens - 500 <= 200  # the overshoot: at most one report
        rt.start_session("other", instance="local-a", cwd=workspace)
        _turns(rt, "other", [(1, 1)])  # another thread is not bound by it
        rt.set_budget(Budget(tokens=5000), thread_id="t")
        _turns(rt, "t", [(1, 1)])


def test_a_spent_budget_holds_across_a_restart(tmp_path, workspace):
    config = {**TWO_LOCAL, "runtime": {"budgets": {"turns": 2}}}
    state = tmp_path / "state"
    with Runtime.open(config, state_dir=state) as rt:
        rt.start_session("t", instance="local-a", cwd=workspace)
        _turns(rt, "t", [(1, 1), (1, 1)])
        rt.usage()  # the ledger has folded both turns
        with pytest.raises(BudgetExceededError, match="runtime's turns budget"):
            rt.send_turn("t", "three")
    with Runtime.open(config, state_dir=state) as rt:
        with pytest.raises(BudgetExceededError):
            rt.send_turn("t", "three")
        rt.set_budget(Budget(turns=10))
        _turns(rt, "t", [(1, 1)])


def test_a_cost_budget_interrupts_the_running_turn(tmp_path, workspace):
    config = {**TWO_LOCAL, "instances": {**TWO_LOCAL["instances"],
                                         "local-a": {**TWO_LOCAL["instances"]["local-a"], "budgets": {"cost": 1.0}}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local-a", cwd=workspace)
        # the cost report comes before the answer, whose chunks take 10 s: the budget stops it
        began = time.monotonic()
        _, events = run_turn(rt, "t", "@cost 1.5\n@chunks 5\n@delay 2.5\n@reply a b c d e")
        assert events[-1].state == "interrupted", [e.type for e in events]
        assert time.monotonic() - began < 8
        spent = [e for e in events if e.type == "budget.warning" and e.exceeded]
        assert spent and spent[0].scope == "instance" and spent[0].scope_id == "local-a"
        with pytest.raises(BudgetExceededError):
            rt.send_turn("t", "again")


def test_a_restart_replays_the_log_from_where_the_ledger_read_it(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
        rt.start_session("t", instance="local-a", cwd=workspace)
        _turns(rt, "t", [(3, 4)])
        run_turn(rt, "t", "@chunks 50\n@reply " + "many words " * 25)
        rt.stop_session("t")  # session.exited: an event the ledger does not fold, last in the log
    log = sqlite3.connect(state / "events.db")
    [(last,)] = log.execute("SELECT max(last_seq) FROM event_chunks").fetchall()
    log.close()
    db = sqlite3.connect(state / "paddock.db")
    [(folded,)] = db.execute("SELECT value FROM usage_meta WHERE key = 'folded_seq'").fetchall()
    db.close()
    assert folded >= last  # closing noted that the ledger read the whole log
