"""``paddock bench throughput``: events/s from the local agent's stdout to one subscriber.

N local-agent sessions (one instance, one agent process, ``--buffered`` output) stream
``@chunks C`` at once. Measured in one run, interleaved round by round:

- ``runtime_log_on`` / ``runtime_log_off``: the full Paddock path (Runtime, ACP adapter, hub with
  the SQLite event log on or off) to ONE subscriber of every event; events/s = events delivered /
  seconds from the first ``send_turn`` to the last ``turn.completed``;
- ``raw``: the limit for the same bytes on this machine: one plain thread reads the agent's pipe
  and decodes every line with msgspec (no actors, no events);
- ``agent_write``: the agent's own write rate (the reader only counts lines);
- ``runtime_log_on_metrics`` (``--metrics``): ``runtime_log_on`` with the Prometheus collector of
  ``paddock serve`` reading its own subscription; ``ratio_metrics_to_log_on`` is its rate over
  ``runtime_log_on``'s in the same round.

CPU: ``host_cpu_per_100k`` is this process's CPU (every runtime thread, or the raw reader) per
100k events; the agent's CPU is reported apart. Ratios are runtime / raw of the same round.
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import (  # noqa: E402
    RawAcpClient,
    TreeCpu,
    emit,
    median,
    per_100k,
    run_runtime,
    self_cpu,
)

TARGETS = {"log_on_events_per_s": 100_000, "log_off_events_per_s": 200_000, "cpu_per_100k": 1.0}


def run_raw(sessions: int, chunks: int, *, decode: bool, tmp: str) -> dict:
    state = tempfile.mkdtemp(prefix="raw-", dir=tmp)
    with RawAcpClient(sessions, state, decode=decode) as client:
        tree = TreeCpu()
        tree.sample()
        cpu0 = self_cpu()
        lines, contents, seconds = client.stream(f"@chunks {chunks}")
        cpu = self_cpu() - cpu0
        tree.sample()
    return {
        "lines": lines,
        "content_lines": contents,
        "seconds": round(seconds, 3),
        "events_per_s": round(contents / seconds),
        "lines_per_s": round(lines / seconds),
        "host_cpu_s": round(cpu, 3),
        "host_cpu_per_100k": per_100k(cpu, contents),
        "agent_cpu_s": round(tree.delta(), 3),
    }


def _summary(rounds: list[dict], key: str) -> dict:
    runs = [r[key] for r in rounds]
    return {
        "events_per_s_median": round(median(r["events_per_s"] for r in runs)),
        "events_per_s_best": max(r["events_per_s"] for r in runs),
        "host_cpu_per_100k_median": median(r["host_cpu_per_100k"] for r in runs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench throughput", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=20_000, help="@chunks per session")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians reported)")
    parser.add_argument("--no-raw", action="store_true", help="skip the raw limit and the write rate")
    parser.add_argument("--metrics", action="store_true", help="also run log-on rounds with the /metrics collector")
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    rounds: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="paddock-bench-throughput-") as tmp:
        for _ in range(args.rounds):
            r: dict = {}
            if not args.no_raw:
                r["agent_write"] = run_raw(args.sessions, args.chunks, decode=False, tmp=tmp)
                r["raw"] = run_raw(args.sessions, args.chunks, decode=True, tmp=tmp)
            r["runtime_log_on"] = run_runtime(args.sessions, args.chunks, event_log=True, tmp=tmp)
            r["runtime_log_off"] = run_runtime(args.sessions, args.chunks, event_log=False, tmp=tmp)
            if args.metrics:
                r["runtime_log_on_metrics"] = run_runtime(args.sessions, args.chunks, event_log=True, tmp=tmp, metrics=True)
                r["ratio_metrics_to_log_on"] = round(
                    r["runtime_log_on_metrics"]["events_per_s"] / r["runtime_log_on"]["events_per_s"], 3)
            if not args.no_raw:
                raw = r["raw"]["events_per_s"]
                r["ratio_log_on_to_raw"] = round(r["runtime_log_on"]["events_per_s"] / raw, 3)
                r["ratio_log_off_to_raw"] = round(r["runtime_log_off"]["events_per_s"] / raw, 3)
            r["load_average"] = [round(x, 2) for x in os.getloadavg()]
            rounds.append(r)
    summary = {k: _summary(rounds, k) for k in rounds[0] if isinstance(rounds[0][k], dict)}
    if not args.no_raw:
        summary["ratio_log_on_to_raw_median"] = median(r["ratio_log_on_to_raw"] for r in rounds)
        summary["ratio_log_off_to_raw_median"] = median(r["ratio_log_off_to_raw"] for r in rounds)
    if args.metrics:
        summary["ratio_metrics_to_log_on_median"] = median(r["ratio_metrics_to_log_on"] for r in rounds)
    on, off = summary["runtime_log_on"], summary["runtime_log_off"]
    emit({
        "benchmark": "throughput",
        "sessions": args.sessions,
        "chunks": args.chunks,
        "rounds": len(rounds),
        "summary": summary,
        "targets": TARGETS,
        "meets_targets": {
            "log_on_events_per_s": on["events_per_s_median"] >= TARGETS["log_on_events_per_s"],
            "log_off_events_per_s": off["events_per_s_median"] >= TARGETS["log_off_events_per_s"],
            "cpu_per_100k_log_on": (on["host_cpu_per_100k_median"] or 99) <= TARGETS["cpu_per_100k"],
            "cpu_per_100k_log_off": (off["host_cpu_per_100k_median"] or 99) <= TARGETS["cpu_per_100k"],
        },
        "per_round": rounds,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
