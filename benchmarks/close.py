"""``paddock bench close``: does ``Runtime.close(timeout)`` keep its promise at 200 instances?

Each run (``--runs``, default 5), in a fresh process (``--one``): a Runtime with ``--instances``
local-agent instances (event log on) and one session on each; every session runs one turn that
leaves a SIGTERM-ignoring grandchild (``@spawn``, so closing pays the SIGKILL step), and one agent
is SIGSTOPped (a hung agent answers no shutdown request and no SIGTERM). Then ``close(timeout)``
is timed; ``survivors`` counts the processes that were descendants before ``close()``, or are
descendants after it (a restart during close), and are still alive right after it returns.

Target (issue 25, ``meets_targets``): every run closes within ``timeout`` + 1 s, with 0
survivors. ``paddock bench close [--runs 5] [--instances 200] [--timeout 10] [--spawn 60]``.
Prints one JSON document: each run's close seconds, seconds over the timeout, processes and
survivors, and the worst run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, local_config  # noqa: E402

BUDGET_EXTRA_S = 1.0


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _agent_of(shim: psutil.Process) -> psutil.Process | None:
    try:
        children = shim.children()
    except psutil.Error:
        return None
    return children[0] if children else None


def run_one(instances: int, timeout: float, spawn: float, stop: bool) -> dict:
    """One run, in this process."""
    from paddock import Runtime

    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="paddock-bench-close-") as state:
        rt = Runtime.open(local_config(instances, event_log=True), state_dir=state)
        stopped: int | None = None
        try:
            threads = [(f"t{n}", f"local{n}") for n in range(instances)]
            t0 = time.perf_counter()
            with ThreadPoolExecutor(16) as pool:
                for fut in [pool.submit(rt.start_session, tid, instance=inst, cwd=tempfile.gettempdir(), timeout=180)
                            for tid, inst in threads]:
                    try:
                        fut.result()
                    except Exception as exc:
                        errors.append(f"start_session: {exc}")
            start_seconds = time.perf_counter() - t0
            sub = rt.subscribe(types=("turn.completed",))
            sent = 0
            with ThreadPoolExecutor(16) as pool:
                for fut in [pool.submit(rt.send_turn, tid, f"@spawn {spawn:g}", timeout=120) for tid, _ in threads]:
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
            sub.close()
            before = psutil.Process().children(recursive=True)
            if stop:
                shims = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
                agent = _agent_of(shims[0]) if shims else None
                if agent is not None:
                    os.kill(agent.pid, signal.SIGSTOP)
                    stopped = agent.pid
        finally:
            c0 = time.perf_counter()
            report = rt.close(timeout=timeout)
            close_seconds = time.perf_counter() - c0
        after = [p for p in psutil.Process().children(recursive=True) if _alive(p)]  # started during close too
        survivors = [p for p in before if _alive(p)]
        survivors += [p for p in after if p not in survivors]
        for proc in survivors:
            try:
                proc.kill()
            except psutil.Error:
                pass
    return {
        "instances": instances,
        "timeout": timeout,
        "start_seconds": round(start_seconds, 2),
        "turns_sent": sent,
        "turns_completed": completed,
        "processes_before_close": len(before),
        "stopped_agent": stopped is not None,
        "close_seconds": round(close_seconds, 3),
        "close_over_timeout_seconds": round(close_seconds - timeout, 3),
        "survivors": len(survivors),
        "events_given_up": getattr(report, "events_given_up", None),
        "reported_survivors": len(getattr(report, "survivors", ())),
        "close_instances_seconds": round(getattr(report, "instances_seconds", 0.0), 3),
        "close_log_seconds": round(getattr(report, "log_seconds", 0.0), 3),
        "survivor_commands": [" ".join(p.cmdline())[:80] for p in survivors[:5] if _alive(p)],
        "errors": errors[:5],
        "error_count": len(errors),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench close", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--spawn", type=float, default=60.0, help="seconds each @spawn grandchild sleeps")
    parser.add_argument("--no-stop", action="store_true", help="stop no agent before closing")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print only the JSON document (the default)")
    args = parser.parse_args(argv)
    if args.one:
        json.dump(run_one(args.instances, args.timeout, args.spawn, not args.no_stop), sys.stdout)
        return 0
    runs = []
    for _ in range(args.runs):
        proc = subprocess.run(
            [sys.executable, __file__, "--one", "--instances", str(args.instances), "--timeout", str(args.timeout),
             "--spawn", str(args.spawn), *(["--no-stop"] if args.no_stop else [])],
            capture_output=True, text=True, timeout=900,
        )
        try:
            runs.append(json.loads(proc.stdout))
        except json.JSONDecodeError:
            runs.append({"failed": f"exit code {proc.returncode}", "stderr": proc.stderr[-400:]})
    ok = [r for r in runs if "failed" not in r]
    worst = max((r["close_seconds"] for r in ok), default=None)
    within = sum(1 for r in ok if r["close_seconds"] <= r["timeout"] + BUDGET_EXTRA_S and r["survivors"] == 0)
    emit({
        "benchmark": "close",
        "runs": runs,
        "close_seconds": [r["close_seconds"] for r in ok],
        "worst_close_seconds": worst,
        "runs_within_budget": f"{within}/{len(runs)}",
        "targets": {"close_budget_extra_s": BUDGET_EXTRA_S, "survivors": 0},
        "meets_targets": len(ok) == len(runs) and within == len(runs),
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
