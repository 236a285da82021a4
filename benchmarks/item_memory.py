"""``paddock bench item-memory``: host RSS while one item streams 1M and 3M deltas, and after.

For each size in ``--deltas`` (default 1,000,000 and 3,000,000) a fresh child process opens a
Runtime with one local-agent instance (event log off unless ``--log``), sends one turn
``@chunks N`` whose answer is one character (so the item has N one-character deltas), drains
its events at one subscriber, and samples its own RSS every 50 ms. Reported per size: RSS
before the turn, peak during it, the growth and the growth per delta, the deltas seen, the
seconds. With ``--turns K`` the child sends K such turns on the same thread, one after the
other; ``rss_after_mb`` lists the RSS after each (what the items leave behind), and the figures
above are the first turn's, the peak the highest of all. Per-item state that kept every delta (the translator's parts, the grammar guard's
texts) showed up as ~50-95 bytes per delta; bounded state shows as a flat peak.
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, host_rss, local_config  # noqa: E402

TARGETS = {"growth_bytes_per_delta_at_3m": 10.0}


def _one(deltas: int, log: bool, turns: int = 1) -> dict:
    from paddock import Runtime

    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            peak[0] = max(peak[0], host_rss())

    with tempfile.TemporaryDirectory(prefix="paddock-bench-item-memory-") as state:
        rt = Runtime.open(local_config(1, event_log=log), state_dir=state)
        try:
            rt.start_session("t", instance="local0", cwd=tempfile.gettempdir())
            with rt.subscribe(thread_id="t") as sub:  # warm-up turn: imports, pools, caches
                turn = rt.send_turn("t", "@reply warm")
                for ev in sub:
                    if ev.type == "turn.completed" and ev.turn_id == turn.turn_id:
                        break
            before = host_rss()
            peak[0] = before
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            after: list[int] = []
            for n in range(turns):
                seen_now = 0
                t0 = time.perf_counter()
                with rt.subscribe(thread_id="t", max_buffered=1_000_000) as sub:
                    turn = rt.send_turn("t", f"@chunks {deltas}\n@reply x", timeout=120)
                    state_now = None
                    for ev in sub:
                        if ev.type == "content.delta":
                            seen_now += 1
                        elif ev.type == "turn.completed" and ev.turn_id == turn.turn_id:
                            state_now = ev.state
                            break
                after.append(host_rss())
                if n == 0:
                    seen, state_, seconds = seen_now, state_now, time.perf_counter() - t0
            stop.set()
            sampler.join(1)
            peak[0] = max(peak[0], host_rss())
        finally:
            rt.close()
    mb = 1024 * 1024
    growth = peak[0] - before
    return {
        "deltas": deltas,
        "deltas_seen": seen,
        "turn_state": state_,
        "seconds": round(seconds, 2),
        "rss_before_mb": round(before / mb, 1),
        "rss_peak_mb": round(peak[0] / mb, 1),
        "rss_growth_mb": round(growth / mb, 1),
        "growth_bytes_per_delta": round(growth / max(1, deltas), 1),
        "rss_after_mb": [round(rss / mb, 1) for rss in after],
        "rss_after_growth_mb": [round((rss - before) / mb, 1) for rss in after],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench item-memory", description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, nargs="+", default=[1_000_000, 3_000_000])
    parser.add_argument("--log", action="store_true", help="keep the event log on")
    parser.add_argument("--turns", type=int, default=1, help="turns of N deltas each, one after the other")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode: one size
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    if args.one is not None:
        json.dump(_one(args.one, args.log, args.turns), sys.stdout)
        return 0
    results = []
    for n in args.deltas:
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--turns", str(args.turns),
                              *(["--log"] if args.log else [])],
                             capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            results.append({"deltas": n, "error": out.stderr[-2000:]})
            continue
        results.append(json.loads(out.stdout))
    largest = max((r for r in results if "error" not in r), key=lambda r: r["deltas"], default=None)
    emit({
        "benchmark": "item-memory",
        "event_log": args.log,
        "turns": args.turns,
        "results": results,
        "targets": TARGETS,
        "meets_targets": {
            "growth_bytes_per_delta_at_3m": None if largest is None or largest["deltas"] < 3_000_000
            else largest["growth_bytes_per_delta"] <= TARGETS["growth_bytes_per_delta_at_3m"],
        },
    })
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
