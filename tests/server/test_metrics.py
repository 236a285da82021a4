"""``GET /metrics`` of a real ``paddock serve`` (issue #24): Prometheus text behind the same token,
scraped during a turn and after it, and around an approval."""

from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.timeout(120)

LOCAL_A = {"instance": "local-a", "driver": "local"}


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _value(samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted({**LOCAL_A, **labels}.items()))))


def _scrape_until(client, condition, timeout: float = 30.0):
    """Scrape until ``condition(samples)`` holds; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.get("/metrics")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain"), r.text
        samples = _samples(r.text)
        if condition(samples):
            return samples
        assert time.monotonic() < deadline, f"metrics never matched; last scrape:\n{r.text}"
        time.sleep(0.05)


def test_metrics_show_a_turn_while_it_runs_and_its_duration_after(make_server):
    served = make_server("tcp")
    with served.http(token=None) as anonymous:
        assert anonymous.get("/metrics").status_code == 401  # the same auth as the API
    with served.remote() as rt, served.http() as client:
        rt.start_session("m1", instance="local-a", cwd=served.workspace, runtime_mode="approval-required")
        rt.send_turn("m1", "@chunks 40\n@delay 0.05\n@reply " + "slow words " * 20)
        during = _scrape_until(client, lambda s: _value(s, "paddock_turns_started_total") == 1)
        assert _value(during, "paddock_sessions_live") == 1 and _value(during, "paddock_turns_running") == 1
        assert 0 <= _value(during, "paddock_turn_running_seconds") < 60  # the turn, with its duration so far
        growing = _scrape_until(client, lambda s: (_value(s, "paddock_turn_running_seconds") or 0) >= 0.5)
        assert _value(growing, "paddock_turns_running") == 1
        assert not _value(during, "paddock_turns_completed_total", state="completed")
        after = _scrape_until(client, lambda s: _value(s, "paddock_turns_completed_total", state="completed") == 1)
        assert _value(after, "paddock_turn_duration_seconds_count") == 1 and _value(after, "paddock_turns_running") == 0
        assert _value(after, "paddock_turn_duration_seconds_sum") >= 1.5  # 39 pauses of 0.05 s
        assert _value(after, "paddock_turn_first_text_seconds_count") == 1
        assert after[("paddock_events_total", ())] > 0
        assert after[("paddock_event_log_bytes", ())] > 0

        rt.send_turn("m1", f"@write {served.workspace}/m.txt metered")
        asked = _scrape_until(client, lambda s: _value(s, "paddock_requests_pending") == 1)
        assert _value(asked, "paddock_requests_opened_total", kind="file_change") == 1
        [pending] = rt.pending_requests("m1")
        rt.respond_to_request("m1", pending.request_id, "accept")
        answered = _scrape_until(client, lambda s: _value(s, "paddock_request_answer_seconds_count") == 1)
        assert _value(answered, "paddock_requests_pending") == 0
        assert _value(answered, "paddock_requests_resolved_total", resolution="answered", decision="accept") == 1
        assert _value(answered, "paddock_requests_decided_total", decided_by="person") == 1
        rt.stop_session("m1")
        stopped = _scrape_until(client, lambda s: _value(s, "paddock_sessions_live") == 0)
        assert sum(v for (name, _), v in stopped.items() if name == "paddock_session_exits_total") == 1


def test_the_usage_ledger_is_scraped_per_instance_and_a_spent_budget_is_http_429(make_server):
    from paddock.contract import Budget, BudgetExceededError

    served = make_server("tcp")
    with served.remote() as rt, served.http() as client:
        rt.start_session("u1", instance="local-a", cwd=served.workspace, budget=Budget(tokens=100))
        rt.send_turn("u1", "@usage 90 30\nhi")
        used = _scrape_until(client, lambda s: _value(s, "paddock_usage_tokens_total", kind="input") == 90)
        assert _value(used, "paddock_usage_tokens_total", kind="output") == 30
        assert rt.usage("u1").total.total_tokens == 120
        r = client.post("/v1/send_turn", json={"thread_id": "u1", "text": "more"})
        assert r.status_code == 429 and r.json()["error"]["code"] == "budget_exceeded", r.text
        assert r.json()["error"]["attrs"]["limit"] == 100
        with pytest.raises(BudgetExceededError) as err:  # rebuilt by the client, with its figures
            rt.send_turn("u1", "more")
        assert (err.value.budget, err.value.figure) == ("tokens", 120)
