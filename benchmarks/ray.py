"""``paddock bench ray``: a placed instance against a local one, in one run.

Starts its own one-node Ray cluster on 127.0.0.1 (usage stats off), and one Runtime with two
local-agent instances: ``local`` (in this process) and ``placed`` (``placement = { ray = ... }``,
its adapter in a Ray actor). For each round and each instance, 8 sessions stream ``@chunks C`` at
once to one subscriber; rounds alternate local/placed. Per instance: events/s (events delivered
/ seconds from the first ``send_turn`` to the last ``turn.completed``), CPU per 100k events (this
host process; for ``placed`` also the node actor's worker, the whole cost of placement) and the
p99 of ``send_turn``'s latency (a control call's round trip). Target: placed >= half the local
rate. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# This file is named ray.py: never let it shadow the ray package when run as a script.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # keep 127.0.0.1 as given

import psutil  # noqa: E402

from benchmarks._common import emit, median, ms, per_100k, percentile, self_cpu  # noqa: E402

SESSIONS = 8


def _round(rt, instance: str, chunks: int, worker: psutil.Process | None) -> dict:
    threads = [f"{instance}-{n}" for n in range(SESSIONS)]
    sub = rt.subscribe(instance_id=instance, max_buffered=SESSIONS * (chunks + 16))
    node0 = _cpu(worker)
    cpu0 = self_cpu()
    started = time.perf_counter()
    latencies = []
    for tid in threads:
        t0 = time.perf_counter()
        rt.send_turn(tid, f"@chunks {chunks}")
        latencies.append(time.perf_counter() - t0)
    events = completed = 0
    while completed < SESSIONS:
        ev = sub.get(timeout=60)
        if ev is None:
            raise RuntimeError(f"{instance}: no event for 60 s ({completed}/{SESSIONS} turns completed)")
        events += 1
        if ev.type == "turn.completed":
            completed += 1
    seconds = time.perf_counter() - started
    cpu = self_cpu() - cpu0 + (_cpu(worker) - node0)
    sub.close()
    return {"events": events, "seconds": seconds, "cpu": cpu, "latencies": latencies}


def _cpu(proc: psutil.Process | None) -> float:
    if proc is None:
        return 0.0
    times = proc.cpu_times()
    return times.user + times.system


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench ray")
    parser.add_argument("--chunks", type=int, default=8000, help="content events per session and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--address", help="an existing cluster to place on (default: start a one-node "
                                              "cluster on 127.0.0.1 for the run, and stop it after)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from paddock.drivers.ray import ray_missing

    missing = ray_missing()
    if missing is not None:
        print(f"paddock bench ray: {missing}", file=sys.stderr)
        return 2
    from ray.cluster_utils import Cluster

    from paddock import Runtime

    tmp = tempfile.mkdtemp(prefix="paddock-bench-ray-")
    cluster = None
    if args.address is None:
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False})
    env = {"PADDOCK_LOCAL_BUFFERED": "1"}
    config = {"runtime": {"event_log": True}, "instances": {
        "local": {"driver": "local", "env": env},
        "placed": {"driver": "local", "env": env, "placement": {"ray": {
            "address": args.address or cluster.address, "node_ip_address": "127.0.0.1",
            "state_dir": os.path.join(tmp, "nodes")}}},
    }}
    results: dict[str, list[dict]] = {"local": [], "placed": []}
    try:
        with Runtime.open(config, state_dir=os.path.join(tmp, "state")) as rt:
            for instance in results:
                for n in range(SESSIONS):
                    rt.start_session(f"{instance}-{n}", instance=instance, cwd=tmp)
            info = next(i for i in rt.instances() if i.id == "placed")
            try:  # the node actor's worker, when the node is this machine (it is, without --address)
                worker: psutil.Process | None = psutil.Process(int(info.node.rsplit("pid ", 1)[1].rstrip(")")))
            except psutil.Error:
                worker = None
            for _ in range(args.rounds):
                for instance in results:
                    results[instance].append(_round(rt, instance, args.chunks, worker if instance == "placed" else None))
    finally:
        if cluster is not None:
            import ray

            ray.shutdown()
            cluster.shutdown()

    doc: dict = {"benchmark": "ray", "sessions": SESSIONS, "chunks": args.chunks, "rounds": args.rounds}
    for instance, rounds in results.items():
        latencies = [x for r in rounds for x in r["latencies"]]
        doc[instance] = {
            "events_per_s": round(median(r["events"] / r["seconds"] for r in rounds) or 0),
            "cpu_per_100k": median(per_100k(r["cpu"], r["events"]) or 0.0 for r in rounds),
            "send_turn_p50_ms": ms(percentile(latencies, 0.5)),
            "send_turn_p99_ms": ms(percentile(latencies, 0.99)),
            "events_per_round": rounds[0]["events"],
        }
    ratio = doc["placed"]["events_per_s"] / max(1, doc["local"]["events_per_s"])
    doc["placed_over_local"] = round(ratio, 3)
    doc["meets_targets"] = ratio >= 0.5
    emit(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
