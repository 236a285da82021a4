"""Every benchmark runs at a tiny size through ``paddock bench`` and prints one JSON document of
the documented shape. No timing is asserted: performance is the benchmarks' business."""

from __future__ import annotations

import argparse
import json

import pytest

from paddock.cli import _bench


def bench(capsys, name: str, *rest: str) -> dict:
    code = _bench.run(argparse.Namespace(name=name, json=True, rest=list(rest)))
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert code == 0, doc
    assert doc["benchmark"] == name
    assert len(doc["machine"]["load_average"]) == 3
    return doc


def test_the_suite_is_listed(capsys):
    assert _bench.run(argparse.Namespace(name="list", json=False, rest=[])) == 0
    names = capsys.readouterr().out.split()
    for name in ("throughput", "latency", "sessions", "teardown", "peer-acp", "peer-claude", "peer-codex",
                 "peer-opencode", "hub", "floor", "serve", "item-memory", "soak", "checkpoint"):
        assert name in names
    assert not any(n.startswith("-") or n.startswith("_") for n in names)


def test_throughput_shape(capsys):
    doc = bench(capsys, "throughput", "--sessions", "2", "--chunks", "200", "--rounds", "1")
    [r] = doc["per_round"]
    for key in ("runtime_log_on", "runtime_log_off"):
        assert r[key]["content_deltas"] == 400
        assert r[key]["dropped_for_subscriber"] == 0
        assert r[key]["events_per_s"] > 0 and r[key]["host_cpu_per_100k"] > 0
    assert r["raw"]["content_lines"] == 400 and r["agent_write"]["lines"] >= 400
    assert r["ratio_log_on_to_raw"] > 0 and r["ratio_log_off_to_raw"] > 0
    assert set(doc["meets_targets"]) == {
        "log_on_events_per_s", "log_off_events_per_s", "cpu_per_100k_log_on", "cpu_per_100k_log_off"
    }


def test_latency_shape(capsys):
    doc = bench(capsys, "latency", "--rates", "400", "--seconds", "0.5", "--sessions", "2", "--warmup", "0")
    assert [r["event_log"] for r in doc["results"]] == [True, False]
    for r in doc["results"]:
        assert r["completed"] and r["events"] == 200
        assert r["measured_events"] == 200
        assert 0 <= r["p50_ms"] <= r["p99_ms"] <= r["max_ms"]
    assert doc["meets_target"] is None  # no 10k/s run at this size


def test_sessions_shape(capsys):
    doc = bench(capsys, "sessions", "--sizes", "6/2,8/2", "--workers", "3")
    assert doc["sizes"] == ["6/2", "8/2"]
    for run, sessions in zip(doc["runs"], (6, 8)):
        assert run["live_sessions"] == sessions and run["turns_completed"] == sessions
        assert run["survivors"] == 0 and run["error_count"] == 0
        assert run["processes_before_close"] >= 2
        assert run["host_rss_peak_mb"] > 0 and run["host_threads_peak"] > 1
        assert run["session_start_p50_ms"] <= run["session_start_p99_ms"]
        assert run["turns_per_s"] > 0 and run["user_cpu_seconds"] >= 0 and run["system_cpu_seconds"] >= 0
    assert doc["summary"]["turns_per_s_ratio_last_to_first"] > 0
    assert doc["meets_targets"]["survivors"] is True


def test_sessions_with_stubborn_grandchildren_shape(capsys):
    doc = bench(capsys, "sessions", "--sessions", "2", "--instances", "2", "--workers", "2", "--spawn", "30",
                "--close-timeout", "2")
    [run] = doc["runs"]
    assert run["survivors"] == 0 and run["close_timeout"] == 2.0 and run["spawn"] == 30.0
    assert "close_over_timeout_seconds" in run and "close_within_timeout_plus_1s" in doc["meets_targets"]


def test_item_memory_shape(capsys):
    doc = bench(capsys, "item-memory", "--deltas", "2000")
    [r] = doc["results"]
    assert r["deltas_seen"] == 2000 and r["turn_state"] == "completed"
    assert r["rss_peak_mb"] >= r["rss_before_mb"] > 0


@pytest.mark.timeout(240)
def test_soak_shape(capsys):
    doc = bench(capsys, "soak", "--minutes", "0.2", "--sessions", "4", "--instances", "2", "--seed", "1",
                "--fault-interval", "1")
    assert doc["seed"] == 1 and doc["sessions"] == 4
    assert set(doc["invariants"]) == {
        "turns_end_exactly_once", "subscribers_match_log", "no_process_outlives_its_session",
        "resources_flat", "close_within_budget", "one_session_exited_per_session", "starts_survive_restarts",
        "full_disk_close_releases", "dead_endpoint_fails_in_bound",
        "queued_turns_end_once_unsent_when_interrupted", "running_turns_within_bound",
        "over_limit_agents_killed_alone_and_resumed",
    }
    for invariant in doc["invariants"].values():
        assert isinstance(invariant["held"], bool) and isinstance(invariant["details"], list)
        assert invariant["held"] == (invariant["violations"] == 0)
    assert doc["meets_targets"] == all(v["held"] for v in doc["invariants"].values())
    ends = ("agent_cont", "disk_free", "endpoint_back")
    assert doc["faults"]["total"] == sum(n for k, n in doc["faults"]["counts"].items() if k not in ends)
    assert all({"t", "kind", "lane"} <= set(entry) for entry in doc["faults"]["log"])
    assert "disk" in doc["lanes"] and ("fills" in doc["lanes"]["disk"] or doc["lanes"]["disk"]["skipped"])
    for name in ("local", "server", "endpoint", "limits"):
        lane = doc["lanes"][name]
        if name == "server" and "skipped" in lane:  # no server extra
            continue
        assert lane["log"]["turns_started"] > 0 and lane["subscribers"] and lane["closes"]
    assert doc["turns"]["started"] >= doc["turns"]["completed"] > 0
    for key in ("host_rss_mb", "host_threads"):
        assert set(doc["resources"][key]) == {"start", "end", "growth", "peak"}
    assert doc["resources"]["samples"] and doc["durations"]["total_s"] > 0


def test_close_shape(capsys):
    doc = bench(capsys, "close", "--runs", "1", "--instances", "2", "--timeout", "3", "--spawn", "5")
    [run] = doc["runs"]
    assert run["instances"] == 2 and run["turns_completed"] == 2 and run["stopped_agent"] is True
    assert run["processes_before_close"] >= 6 and run["survivors"] == 0
    assert doc["close_seconds"] == [run["close_seconds"]] and doc["runs_within_budget"] in ("0/1", "1/1")


def test_checkpoint_shape(capsys):
    doc = bench(capsys, "checkpoint", "--files", "300", "--changed", "20", "--rounds", "2", "--settle", "0")
    assert doc["files"] == 300 and len(doc["rounds"]) == 2
    assert all(r["diff_files"] == 20 for r in doc["rounds"])
    assert "checkpoint_under_0_5s" in doc["meets_targets"] and doc["checkpoint_max_s"] > 0


def test_teardown_shape(capsys):
    doc = bench(capsys, "teardown", "--trees", "3", "--deadline", "0.5", "--watch", "0.5")
    assert doc["trees"] == 3 and doc["survivors"] == 0 and doc["processes"] >= 3
    watch = doc["watch_cpu_s_per_agent_min"]
    assert set(watch) == {"report_only", "memory_processes", "cpu", "all"}
    assert all(isinstance(v, float) and v >= 0 for v in watch.values()), watch


def test_peer_acp_shape(capsys):
    doc = bench(capsys, "peer-acp", "--sessions", "2", "--chunks", "200")
    if "skipped" in doc:
        pytest.skip(doc["skipped"])
    [r] = doc["per_round"]
    assert r["sdk"]["chunks"] == 400
    assert r["paddock_log_off"]["chunks"] == 400 and r["paddock_log_on"]["chunks"] == 400
    assert doc["summary"]["throughput_ratio_log_off"] > 0


def test_peer_claude_shape_or_says_why(capsys):
    doc = bench(capsys, "peer-claude", "--turns", "2", "--warmup", "0", "--starts", "0")
    assert "skipped" in doc or "results" in doc
    if "skipped" in doc:
        assert doc["skipped"]
        return
    r = doc["results"]
    for side in ("paddock", "sdk"):
        assert r[side]["turn"]["n"] == 2 and r[side]["first_text"]["n"] == 2
        assert r[side]["session_start"]["n"] == 1
    assert r["ratio_paddock_over_sdk"]["turn_median"] > 0
    assert doc["survivors"] == []


@pytest.mark.timeout(300)
def test_peer_opencode_shape_or_says_why(capsys):
    doc = bench(capsys, "peer-opencode", "--turns", "1", "--warmup", "0", "--long", "1", "--chunks", "50")
    assert "skipped" in doc or "results" in doc
    if "skipped" in doc:
        assert doc["skipped"]
        return
    r = doc["results"]
    for side in ("paddock", "client"):
        assert r[side]["long_deltas"] == [50] and r[side]["turn_ms"]["median"] > 0
    assert r["ratio"]["events_per_s_paddock_over_client"] > 0
    assert doc["survivors"] == []


def test_hub_shape(capsys):
    doc = bench(capsys, "hub", "--events", "2000", "--paced-rate", "4000", "--paced-seconds", "0.2")
    assert len(doc["results"]) == 8
    assert all(r["events"] > 0 for r in doc["results"])


def test_floor_shape(capsys):
    doc = bench(capsys, "floor", "--sessions", "3", "--chunks", "500", "--rounds", "1")
    [r] = doc["per_round"]
    assert r["content_deltas"] == 3 * 500  # every chunk became one content.delta at the subscriber
    assert r["events"] == 3 * 500 + 3  # and each message one item.started
    assert set(r["stages_us_per_event"]) == {"split", "decode_route_translate_hub", "subscriber"}
    assert doc["events_per_s_median"] == r["events_per_s"] > 0


def test_peer_codex_shape_or_says_why(capsys):
    doc = bench(capsys, "peer-codex", "--turns", "2", "--warmup", "0", "--streams", "1", "--chunks", "200",
                "--chars", "400")
    assert "skipped" in doc or "results" in doc
    if "skipped" in doc:
        assert doc["skipped"]
        return
    r = doc["results"]
    for side in ("paddock", "sdk"):
        assert r[side]["turn"]["n"] == 2 and r[side]["events_per_turn"] == 200
    assert r["ratio_paddock_over_sdk"]["turn_median"] > 0
    assert set(doc["meets_targets"]) == {"turn_median", "events_per_s", "cpu_per_event"}
    assert doc["survivors"] == []


@pytest.mark.timeout(180)
def test_serve_shape(capsys):
    doc = bench(capsys, "serve", "--sessions", "2", "--chunks", "200", "--chunks-50", "20", "--clients", "5", "--rounds", "1",
                "--paced-chunks", "20", "--paced-delay", "0.001")
    [r] = doc["per_round"]
    assert r["in_process"]["events"] == r["sse_1"]["events"] and r["sse_1"]["completed"]
    assert r["sse_5"]["clients"] == 5 and r["sse_5"]["every_client_got_every_event"]
    for key in ("in_process", "sse_1", "sse_5"):
        assert 0 <= doc["summary"][key]["p50_ms"] <= doc["summary"][key]["p99_ms"]
    assert r["paced"]["sse_5"]["every_client_got_every_event"] and doc["every_client_got_every_event"]
    assert doc["summary"]["paced_sse_1"]["p99_ms"] is not None
    assert set(doc["meets_targets"]) == {"sse_1_at_least_half_in_process"}


@pytest.mark.timeout(300)
def test_side_by_side_shape(capsys, tmp_path, monkeypatch):
    import subprocess

    from benchmarks._common import ROOT

    monkeypatch.setenv("PADDOCK_BENCH_TREES", str(tmp_path / "trees"))
    try:
        doc = bench(capsys, "side-by-side", "--rev", "HEAD", "--pairs", "1", "teardown", "--trees", "2", "--deadline", "0.5",
                    "--watch", "0")
    finally:
        for tree in (tmp_path / "trees").glob("*"):
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    assert doc["name"] == "teardown" and doc["before"] == doc["after"].removesuffix("+dirty")
    for side in ("before", "after"):
        [run] = doc["runs"][side]
        assert run["benchmark"] == "teardown" and run["trees"] == 2 and run["survivors"] == 0
    assert doc["compare"] == []  # teardown has no figures in side_by_side.FIGURES


@pytest.mark.timeout(30)
def test_side_by_side_flags_a_figure_worse_in_its_direction():
    from benchmarks.side_by_side import compare

    def run(on: float, cpu: float) -> dict:
        return {"summary": {"runtime_log_on": {"events_per_s_median": on, "host_cpu_per_100k_median": cpu}}}

    runs = {"before": [run(100.0, 0.50), run(110.0, 0.40), run(90.0, 0.60)],
            "after": [run(85.0, 0.56), run(88.0, 0.54), run(200.0, 0.20)]}
    rows = {r["figure"]: r for r in compare("throughput", runs, 0.10)}
    on = rows["log on events/s"]
    assert (on["before"], on["after"], on["ratio"], on["worse"]) == (100.0, 88.0, 0.88, True)
    cpu = rows["log on host CPU per 100k events (s)"]
    assert (cpu["before"], cpu["after"], cpu["ratio"], cpu["worse"]) == (0.5, 0.54, 1.08, False)
    assert rows["log off events/s"]["ratio"] is None and not rows["log off events/s"]["worse"]
    assert [r["worse"] for r in compare("throughput", runs, 0.05) if r["figure"].startswith("log on")] == [True, True]
