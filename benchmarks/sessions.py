"""``paddock bench sessions``: 1,000 concurrent sessions across 10 local instances, one turn each.

Opens a Runtime with ``--instances`` local-agent instances (event log on), starts ``--sessions``
sessions spread round-robin over them from ``--workers`` threads (``start_session`` seconds per
session: p50/p99/max), sends one short turn to each, waits for every ``turn.completed`` at one
subscriber, then calls ``close()``. A sampler thread records, every 50 ms, the host's RSS and
thread count and the agents' RSS; peaks are reported. ``survivors`` counts the processes that
were descendants before ``close()`` and are still alive after it (must be 0).
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, host_rss, local_config, ms, percentile, tree_rss  # noqa: E402

TARGETS = {"host_rss_mb": 400, "close_seconds": 5.0, "survivors": 0}


class _Peaks:
    def __init__(self) -> None:
        self.host_rss = 0
        self.tree_rss = 0
        self.threads = 0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.05):
            self.sample(me)

    def sample(self, me: psutil.Process | None = None) -> None:
        me = me or psutil.Process()
        self.host_rss = max(self.host_rss, host_rss())
        self.threads = max(self.threads, me.num_threads())
        if not self._stop.is_set():
            self.tree_rss = max(self.tree_rss, tree_rss())
            self.processes = max(self.processes, len(me.children(recursive=True)))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def main(argv: list[str] | None = None) -> int:
    from paddock import Runtime

    parser = argparse.ArgumentParser(prog="paddock bench sessions", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--workers", type=int, default=20, help="threads calling start_session/send_turn")
    parser.add_argument("--close-timeout", type=float, default=10.0)
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    peaks = _Peaks()
    rss_before = host_rss()
    threads_before = psutil.Process().num_threads()
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="paddock-bench-sessions-") as state:
        rt = Runtime.open(local_config(args.instances, event_log=True), state_dir=state)
        peaks.start()
        try:
            threads = [(f"t{n}", f"local{n % args.instances}") for n in range(args.sessions)]

            def start(item: tuple[str, str]) -> float:
                t0 = time.perf_counter()
                rt.start_session(item[0], instance=item[1], cwd=state, timeout=120)
                return time.perf_counter() - t0

            t0 = time.perf_counter()
            start_times: list[float] = []
            with ThreadPoolExecutor(args.workers) as pool:
                for fut in [pool.submit(start, item) for item in threads]:
                    try:
                        start_times.append(fut.result())
                    except Exception as exc:  # report, do not crash the benchmark
                        errors.append(f"start_session: {exc}")
            start_all = time.perf_counter() - t0
            live = rt.list_sessions()
            sub = rt.subscribe(types=("turn.completed",))
            t1 = time.perf_counter()
            with ThreadPoolExecutor(args.workers) as pool:
                futures = [pool.submit(rt.send_turn, tid, "@reply ok", timeout=120) for tid, _ in threads]
                sent = 0
                for fut in futures:
                    try:
                        fut.result()
                        sent += 1
                    except Exception as exc:
                        errors.append(f"send_turn: {exc}")
            completed = 0
            deadline = time.monotonic() + 120
            while completed < sent and time.monotonic() < deadline:
                if sub.get(timeout=max(0.01, deadline - time.monotonic())) is not None:
                    completed += 1
            turns_seconds = time.perf_counter() - t1
            sub.close()
            peaks.sample()
            before_close = [p for p in psutil.Process().children(recursive=True)]
        finally:
            peaks.stop()
            peaks.sample()
            c0 = time.perf_counter()
            rt.close(timeout=args.close_timeout)
            close_seconds = time.perf_counter() - c0
        survivors = [p.pid for p in before_close if _alive(p)]
        for pid in survivors:
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
    mb = 1024 * 1024
    emit({
        "benchmark": "sessions",
        "sessions": args.sessions,
        "instances": args.instances,
        "workers": args.workers,
        "live_sessions": len(live),
        "start_all_seconds": round(start_all, 3),
        "session_start_p50_ms": ms(percentile(start_times, 0.50)),
        "session_start_p99_ms": ms(percentile(start_times, 0.99)),
        "session_start_max_ms": ms(max(start_times) if start_times else None),
        "turns_sent": sent,
        "turns_completed": completed,
        "turns_seconds": round(turns_seconds, 3),
        "host_rss_before_mb": round(rss_before / mb, 1),
        "host_rss_peak_mb": round(peaks.host_rss / mb, 1),
        "agents_rss_peak_mb": round(peaks.tree_rss / mb, 1),
        "host_threads_before": threads_before,
        "host_threads_peak": peaks.threads,
        "processes_peak": peaks.processes,
        "processes_before_close": len(before_close),
        "close_seconds": round(close_seconds, 3),
        "survivors": len(survivors),
        "errors": errors[:10],
        "error_count": len(errors),
        "targets": TARGETS,
        "meets_targets": {
            "host_rss_mb": peaks.host_rss / mb <= TARGETS["host_rss_mb"],
            "close_seconds": close_seconds <= TARGETS["close_seconds"],
            "survivors": not survivors,
        },
    })
    return 0 if not survivors else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
