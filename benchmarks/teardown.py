"""Teardown benchmark: start N process trees under one Scope, close it with a deadline.

Each tree: orphan-guard shim -> sh (ignores SIGTERM) -> subshell -> ``sleep 777`` and
``setsid sleep 888``, both inheriting the ignored SIGTERM, so every tree needs the SIGKILL step and
one grandchild has left the process group. Prints one JSON document: start seconds, close
seconds, seconds past the deadline, processes snapshotted and survivors (must be 0).

With ``--watch S`` (default 10; 0 skips it) it then measures what the shims' tree watch costs:
the same trees, with a lease dir (so each shim keeps its tree report, as in the runtime), idle
for S seconds without limits, with ``memory_mb`` and ``processes``, with ``cpu_percent``, and with
all three (the shim walks the tree and reads every process's statm and stat); the shims' own
user+system CPU, as CPU seconds per agent per minute (``watch_cpu_s_per_agent_min``).

``paddock bench teardown [--trees 100] [--deadline 1.0] [--watch 10]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from paddock.actors import ProcessActor, ProcessSpec
from paddock.supervisors import ChildSpec, ResourceLimits, Scope

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit  # noqa: E402

SCRIPT = """trap '' TERM
( sleep 777 & setsid sleep 888 & sleep 0.05; echo ready; wait ) &
wait
"""


def _gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench teardown")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--deadline", type=float, default=1.0, help="seconds given to close()")
    parser.add_argument("--watch", type=float, default=10.0, help="seconds per tree-watch mode (0: skip)")
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    watch = {} if args.watch <= 0 else {
        "watch_seconds": args.watch,
        "watch_cpu_s_per_agent_min": {
            "report_only": _watch_cost(args.trees, args.watch, ResourceLimits()),
            "memory_processes": _watch_cost(args.trees, args.watch, ResourceLimits(memory_mb=512, processes=100)),
            "cpu": _watch_cost(args.trees, args.watch, ResourceLimits(cpu_percent=50)),
            "all": _watch_cost(args.trees, args.watch,
                               ResourceLimits(memory_mb=512, processes=100, cpu_percent=50)),
        },
    }
    sh = shutil.which("sh") or "/bin/sh"
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
    ready = threading.Semaphore(0)

    def child(n: int) -> ChildSpec:
        def start(ctx):
            spec = ProcessSpec(
                argv=(sh, "-c", SCRIPT), env=env, name=f"tree{n}", graceful_timeout=0.0
            )
            return ProcessActor.open(
                spec, on_lines=lambda lines: ready.release(), context=ctx
            ).actor_ref

        return ChildSpec(f"tree{n}", start, shutdown=args.deadline)

    started = time.monotonic()
    scope = Scope([child(n) for n in range(args.trees)], name="bench").start()
    for _ in range(args.trees):
        if not ready.acquire(timeout=60):
            break
    start_seconds = time.monotonic() - started
    procs = psutil.Process().children(recursive=True)
    me = psutil.Process()
    cpu_before = sum(me.cpu_times()[:2])
    closing = time.monotonic()
    deadline = closing + args.deadline
    scope.close(deadline)
    closed = time.monotonic()
    close_cpu = sum(me.cpu_times()[:2]) - cpu_before
    survivors = [p.pid for p in procs if not _gone(p)]
    for pid in survivors:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    emit(
        {
            "benchmark": "teardown",
            "trees": args.trees,
            "processes": len(procs),
            "start_seconds": round(start_seconds, 3),
            "deadline_seconds": args.deadline,
            "close_seconds": round(closed - closing, 3),
            "seconds_past_deadline": round(max(0.0, closed - deadline), 3),
            "close_cpu_seconds": round(close_cpu, 3),
            "survivors": len(survivors),
            **watch,
        }
    )
    return 0 if not survivors else 1


def _watch_cost(trees: int, seconds: float, limits: ResourceLimits) -> float:
    """The shims' CPU seconds per tree per minute while ``trees`` idle trees sit ``seconds``."""
    sh = shutil.which("sh") or "/bin/sh"
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", **limits.environment()}
    ready = threading.Semaphore(0)
    with tempfile.TemporaryDirectory(prefix="paddock-bench-watch-") as leases:
        def child(n: int) -> ChildSpec:
            def start(ctx):
                spec = ProcessSpec(argv=(sh, "-c", SCRIPT), env=env, name=f"watch{n}", graceful_timeout=0.0,
                                   lease_dir=leases)
                return ProcessActor.open(spec, on_lines=lambda lines: ready.release(), context=ctx).actor_ref

            return ChildSpec(f"watch{n}", start, shutdown=2.0)

        scope = Scope([child(n) for n in range(trees)], name="bench-watch").start()
        try:
            for _ in range(trees):
                if not ready.acquire(timeout=60):
                    break
            time.sleep(1.0)  # past the shims' start-up and the report period's first doublings
            shims = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
            before = {p.pid: sum(p.cpu_times()[:2]) for p in shims}
            time.sleep(seconds)
            used = sum(sum(p.cpu_times()[:2]) - before[p.pid] for p in shims if p.is_running())
        finally:
            scope.close(time.monotonic() + 5.0)
    return round(used / max(1, len(shims)) * 60 / seconds, 5)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
