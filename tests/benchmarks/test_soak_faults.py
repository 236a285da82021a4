"""The soak's faults of issue 33 #1 and #6, each alone for a short soak, through ``paddock bench
soak``: each fault fires, does what it says, and its invariant holds on a runtime that behaves.
A runtime that kept the state dir after a full-disk close, or let a turn on a dead endpoint run
on, breaks the invariant (checked by hand on a runtime broken so)."""

from __future__ import annotations

import pytest

from tests.benchmarks.test_smoke import bench


def _held(doc: dict, *names: str) -> None:
    for name in names:
        invariant = doc["invariants"][name]
        assert invariant["held"], (name, invariant["details"])


@pytest.mark.timeout(300)
def test_a_runtime_closed_while_its_disk_stays_full_returns_in_time_gives_events_up_and_lets_go_of_its_dir(capsys):
    doc = bench(capsys, "soak", "--minutes", "0.4", "--sessions", "2", "--instances", "1", "--seed", "3",
                "--fault-interval", "1", "--faults", "disk_full_close", "--no-server")
    disk = doc["lanes"]["disk"]
    if "skipped" in disk:
        pytest.skip(f"no tmpfs for the disk lane: {disk['skipped']}")
    assert set(doc["faults"]["counts"]) <= {"disk_full_close", "disk_free", "agent_stop_at_close"}, doc["faults"]["counts"]
    assert doc["faults"]["counts"]["disk_full_close"] >= 1
    first = disk["full_closes"][0]
    assert first["refused"] and first["events_given_up"] > 0 and first["reopened"], first
    assert first["seconds"] <= first["timeout"] + 1.0
    assert disk["ledger"]["completed"] > 0 and disk["log"]["turns_completed"] > 0  # the lane went on after it
    _held(doc, "full_disk_close_releases", "turns_end_exactly_once", "close_within_budget",
          "no_process_outlives_its_session", "subscribers_match_log")


@pytest.mark.timeout(300)
def test_turns_on_an_endpoint_that_goes_dead_fail_in_bound_naming_it_while_the_other_lanes_go_on(capsys):
    doc = bench(capsys, "soak", "--minutes", "0.6", "--sessions", "3", "--instances", "1", "--seed", "5",
                "--fault-interval", "1", "--faults", "endpoint_dead", "--no-disk", "--no-server")
    assert set(doc["faults"]["counts"]) <= {"endpoint_dead", "endpoint_back", "agent_stop_at_close"}, doc["faults"]["counts"]
    endpoint = doc["lanes"]["endpoint"]
    assert endpoint["dead_spells"] and endpoint["failed_by_the_endpoint_in_bound"] >= 1, endpoint
    assert endpoint["ledger"]["by_state"].get("completed", 0) >= 1, endpoint  # and it goes on once back
    _held(doc, "dead_endpoint_fails_in_bound", "turns_end_exactly_once", "no_process_outlives_its_session")
