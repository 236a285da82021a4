"""``paddock bench serve``: events/s and latency through ``paddock serve``'s SSE stream, beside the
in-process subscriber, in one run.

The same workload each time: ``--sessions`` local-agent sessions (buffered output, event log on)
stream ``@chunks C`` at once. Measured, round by round:

- ``in_process``: a Runtime in this process and ONE subscriber of every event (as ``throughput``);
- ``sse_1``: a ``paddock serve`` process (unix socket) and ONE ``RemoteRuntime`` subscription in
  this process (HTTP, SSE frames, the contract's decoder);
- ``sse_50``: the same server and 50 subscriptions at once in this process (50 reader threads),
  with ``--chunks-50`` per session (every client decodes every event in this one process).

events/s = events one client received / seconds from the first ``send_turn`` to the last
``turn.completed`` it saw (``sse_50``: of the slowest client; aggregate = all clients' events over
the same span). Latency of an event = the moment a client holds it minus its ``created_at`` (wall
clock; the server and this process share it): under the flood it is mostly queueing, so each
round also runs the three paths ``paced`` (``@delay`` between chunks, well below saturation).
Target: ``sse_1`` at least half the in-process
rate. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, emit, local_config, median, ms, percentile, per_100k, self_cpu  # noqa: E402

TARGET_SSE_1_TO_IN_PROCESS = 0.5


def _count(sub, sessions: int, timeout: float) -> tuple[int, float, list[float], bool]:
    """Read until ``sessions`` turns completed: (events, time of the last one, latencies, ok)."""
    events = completed = 0
    latencies: list[float] = []
    clock = time.time
    record = latencies.append
    last = time.perf_counter()
    while completed < sessions:
        ev = sub.get(timeout=timeout)
        if ev is None:
            return events, last, latencies, False
        events += 1
        record(clock() - ev.created_at)
        if ev.type == "turn.completed":
            completed += 1
            last = time.perf_counter()
    return events, last, latencies, True


def _figures(events: int, seconds: float, latencies: list[float], ok: bool, cpu: float | None = None) -> dict:
    out = {
        "events": events,
        "completed": ok,
        "seconds": round(seconds, 3),
        "events_per_s": round(events / seconds) if seconds > 0 else None,
        "p50_ms": ms(percentile(latencies, 0.50)),
        "p99_ms": ms(percentile(latencies, 0.99)),
        "max_ms": ms(max(latencies) if latencies else None),
    }
    if cpu is not None:
        out["host_cpu_per_100k"] = per_100k(cpu, events)
    return out


def _prompt(chunks: int, delay: float | None) -> str:
    return f"@chunks {chunks}" + (f"\n@delay {delay}" if delay else "")


def run_in_process(sessions: int, chunks: int, tmp: str, delay: float | None = None) -> dict:
    from paddock import Runtime

    state = tempfile.mkdtemp(prefix="inproc-", dir=tmp)
    rt = Runtime.open(local_config(1, event_log=True), state_dir=state)
    try:
        threads = [f"t{n}" for n in range(sessions)]
        for tid in threads:
            rt.start_session(tid, instance="local0", cwd=tempfile.gettempdir())
        sub = rt.subscribe(max_buffered=sessions * (chunks + 16))
        cpu0 = self_cpu()
        started = time.perf_counter()
        for tid in threads:
            rt.send_turn(tid, _prompt(chunks, delay))
        events, last, latencies, ok = _count(sub, sessions, 60)
        cpu = self_cpu() - cpu0
        sub.close()
    finally:
        rt.close(timeout=20)
    return _figures(events, last - started, latencies, ok, cpu)


class _Server:
    """A ``paddock serve`` process on a unix socket in a short state dir."""

    def __init__(self, tmp: str) -> None:
        self.state = tempfile.mkdtemp(prefix="sv-", dir="/tmp")
        config = Path(self.state).parent / (Path(self.state).name + ".toml")
        cfg = local_config(1, event_log=True)
        lines = ["[runtime]", "event_log = true", "[instances.local0]", 'driver = "local"',
                 "env = " + "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in cfg["instances"]["local0"]["env"].items()) + " }"]
        config.write_text("\n".join(lines) + "\n")
        self.config = config
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("PADDOCK_STATE_DIR", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "paddock.cli", "serve", "--state-dir", self.state,
                                      "--config", str(config)], cwd=ROOT, stdout=subprocess.PIPE, env=env)
        line = self.proc.stdout.readline() if self.proc.stdout else b""
        if b"listening on" not in line:
            raise RuntimeError(f"paddock serve did not start: {line!r}")

    def cpu(self) -> float:
        import psutil

        t = psutil.Process(self.proc.pid).cpu_times()
        return t.user + t.system

    def close(self) -> None:
        import shutil

        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.state, ignore_errors=True)
        self.config.unlink(missing_ok=True)


def run_sse(server: _Server, clients: int, sessions: int, chunks: int, round_no: int, delay: float | None = None) -> dict:
    from paddock.client import RemoteRuntime

    rt = RemoteRuntime.connect(server.state)
    try:
        threads = [f"r{round_no}-{clients}-{delay}-{n}" for n in range(sessions)]
        cwd = tempfile.gettempdir()
        for tid in threads:
            rt.start_session(tid, instance="local0", cwd=cwd)
        subs = [rt.subscribe(types=None) for _ in range(clients)]
        results: list[tuple[int, float, list[float], bool] | None] = [None] * clients

        def read(i: int) -> None:
            results[i] = _count(subs[i], sessions, 60)

        readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(clients)]
        for t in readers:
            t.start()
        cpu0, server_cpu0 = self_cpu(), server.cpu()
        started = time.perf_counter()
        for tid in threads:
            rt.send_turn(tid, _prompt(chunks, delay))
        for t in readers:
            t.join(300)
        cpu, server_cpu = self_cpu() - cpu0, server.cpu() - server_cpu0
        for s in subs:
            s.close()
        for tid in threads:
            rt.stop_session(tid)
    finally:
        rt.close()
    done = [r for r in results if r is not None]
    slowest = max(done, key=lambda r: r[1])
    latencies = [x for r in done for x in r[2]]
    out = _figures(slowest[0], slowest[1] - started, latencies, all(r[3] for r in done))
    out["clients"] = clients
    out["every_client_got_every_event"] = len({r[0] for r in done}) == 1 and len(done) == clients
    out["aggregate_events_per_s"] = round(sum(r[0] for r in done) / (slowest[1] - started))
    out["client_cpu_per_100k"] = per_100k(cpu, sum(r[0] for r in done))
    out["server_cpu_per_100k"] = per_100k(server_cpu, slowest[0])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench serve", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=20_000, help="@chunks per session (in-process and 1 client)")
    parser.add_argument("--chunks-50", type=int, default=2_000, help="@chunks per session with 50 clients")
    parser.add_argument("--clients", type=int, default=50, help="clients of the many-clients run")
    parser.add_argument("--paced-chunks", type=int, default=1_000, help="@chunks per session of the paced runs")
    parser.add_argument("--paced-delay", type=float, default=0.002, help="@delay between chunks of the paced runs")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians reported)")
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    rounds: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="paddock-bench-serve-") as tmp:
        server = _Server(tmp)
        try:
            for n in range(args.rounds):
                r = {
                    "in_process": run_in_process(args.sessions, args.chunks, tmp),
                    "sse_1": run_sse(server, 1, args.sessions, args.chunks, n),
                    f"sse_{args.clients}": run_sse(server, args.clients, args.sessions, args.chunks_50, n),
                }
                # paced: the same three paths well below saturation, for latency without queueing
                r["paced"] = {
                    "in_process": run_in_process(args.sessions, args.paced_chunks, tmp, args.paced_delay),
                    "sse_1": run_sse(server, 1, args.sessions, args.paced_chunks, n, args.paced_delay),
                    f"sse_{args.clients}": run_sse(server, args.clients, args.sessions, args.paced_chunks, n, args.paced_delay),
                }
                ip, one = r["in_process"]["events_per_s"], r["sse_1"]["events_per_s"]
                r["ratio_sse_1_to_in_process"] = round(one / ip, 3) if ip and one else None
                r["load_average"] = [round(x, 2) for x in os.getloadavg()]
                rounds.append(r)
        finally:
            server.close()
    many = f"sse_{args.clients}"

    def med(key: str, field: str):
        values = [r[key][field] for r in rounds if r[key][field] is not None]
        return median(values) if values else None

    summary = {
        key: {field: med(key, field) for field in ("events_per_s", "p50_ms", "p99_ms", "max_ms")}
        for key in ("in_process", "sse_1", many)
    }
    summary[many]["aggregate_events_per_s"] = med(many, "aggregate_events_per_s")
    for key in ("in_process", "sse_1", many):
        lat = [r["paced"][key] for r in rounds]
        summary[f"paced_{key}"] = {
            field: median(x[field] for x in lat if x[field] is not None)
            for field in ("events_per_s", "p50_ms", "p99_ms", "max_ms")
        }
    ratio = median(r["ratio_sse_1_to_in_process"] for r in rounds if r["ratio_sse_1_to_in_process"] is not None)
    emit({
        "benchmark": "serve",
        "sessions": args.sessions,
        "chunks": args.chunks,
        "chunks_many": args.chunks_50,
        "clients_many": args.clients,
        "rounds": len(rounds),
        "summary": summary,
        "ratio_sse_1_to_in_process_median": ratio,
        "target_sse_1_to_in_process": TARGET_SSE_1_TO_IN_PROCESS,
        "meets_targets": {"sse_1_at_least_half_in_process": ratio is not None and ratio >= TARGET_SSE_1_TO_IN_PROCESS},
        "every_client_got_every_event": all(r[many]["every_client_got_every_event"]
                                            and r["paced"][many]["every_client_got_every_event"] for r in rounds),
        "paced": {"chunks": args.paced_chunks, "delay_s": args.paced_delay},
        "per_round": rounds,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
