"""``paddock bench peer-acp``: the same ACP workload through Paddock and through the official ACP
Python SDK client (``agent-client-protocol``, asyncio), in one run.

Workload: the local agent (``--buffered``), N sessions on one agent process, each streaming
``@chunks M`` at once; the client counts every ``agent_message_chunk`` it is handed.

- ``sdk``: ``acp.spawn_agent_process`` + ``ClientSideConnection`` (``initialize``, N
  ``new_session``, N concurrent ``prompt`` calls); the Client's ``session_update`` counts chunks;
- ``paddock_log_off`` / ``paddock_log_on``: ``Runtime`` with one local instance; one subscriber
  counts every event (``content.delta`` are the chunks).

Events/s = chunks / seconds from the first prompt to the last answer (Paddock: the last
``turn.completed``). CPU = this process's CPU in that window per 100k chunks (the agent's CPU is
reported apart). Ratios are Paddock / SDK of the same round. Needs the ``bench`` extra
(``pip install -e '.[bench]'``); without it, prints ``{"skipped": reason}``.
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import (  # noqa: E402
    TreeCpu,
    emit,
    local_agent_argv,
    local_agent_env,
    median,
    per_100k,
    run_runtime,
    self_cpu,
)

SDK_PACKAGE = "agent-client-protocol"
SDK_VERSION = "0.12.1"
TARGETS = {"throughput_ratio": 6.0, "cpu_ratio": 1 / 6}


def _sdk_version() -> str | None:
    try:
        from importlib.metadata import version

        return version(SDK_PACKAGE)
    except Exception:
        return None


def run_sdk(sessions: int, chunks: int, tmp: str) -> dict:
    import acp
    from acp.schema import AgentMessageChunk

    state = tempfile.mkdtemp(prefix="sdk-", dir=tmp)
    counts = {"chunks": 0, "updates": 0}

    class CountingClient:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            counts["updates"] += 1
            if isinstance(update, AgentMessageChunk):
                counts["chunks"] += 1

        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            raise acp.RequestError.method_not_found("session/request_permission")

    async def body() -> dict:
        argv = local_agent_argv()
        tree = TreeCpu()
        async with acp.spawn_agent_process(CountingClient(), argv[0], *argv[1:], env=local_agent_env(state),
                                           cwd=state) as (conn, _process):
            await conn.initialize(protocol_version=1)
            ids = [(await conn.new_session(cwd=state, mcp_servers=[])).session_id for _ in range(sessions)]
            tree.sample()
            cpu0 = self_cpu()
            started = time.perf_counter()
            results = await asyncio.gather(*(
                conn.prompt(session_id=sid, prompt=[acp.text_block(f"@chunks {chunks}")]) for sid in ids
            ))
            seconds = time.perf_counter() - started
            cpu = self_cpu() - cpu0
            tree.sample()
        return {
            "chunks": counts["chunks"],
            "updates": counts["updates"],
            "stop_reasons": sorted({str(r.stop_reason) for r in results}),
            "seconds": round(seconds, 3),
            "events_per_s": round(counts["chunks"] / seconds),
            "host_cpu_s": round(cpu, 3),
            "host_cpu_per_100k": per_100k(cpu, counts["chunks"]),
            "agent_cpu_s": round(tree.delta(), 3),
        }

    return asyncio.run(body())


def run_paddock(sessions: int, chunks: int, *, event_log: bool, tmp: str) -> dict:
    r = run_runtime(sessions, chunks, event_log=event_log, tmp=tmp)
    deltas, seconds = r["content_deltas"], r["seconds"]
    return {
        "chunks": deltas,
        "events": r["events"],
        "seconds": seconds,
        "events_per_s": round(deltas / seconds),
        "host_cpu_s": r["host_cpu_s"],
        "host_cpu_per_100k": per_100k(r["host_cpu_s"], deltas),
        "agent_cpu_s": r["agent_cpu_s"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench peer-acp", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=10_000, help="@chunks per session")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    version = _sdk_version()
    if version is None:
        emit({"benchmark": "peer-acp", "skipped": (
            f"the official ACP Python SDK ({SDK_PACKAGE}) is not installed; "
            f"install the bench extra: pip install -e '.[bench]'")})
        return 0
    rounds = []
    with tempfile.TemporaryDirectory(prefix="paddock-bench-peer-acp-") as tmp:
        for _ in range(args.rounds):
            r: dict = {
                "sdk": run_sdk(args.sessions, args.chunks, tmp),
                "paddock_log_off": run_paddock(args.sessions, args.chunks, event_log=False, tmp=tmp),
                "paddock_log_on": run_paddock(args.sessions, args.chunks, event_log=True, tmp=tmp),
            }
            sdk = r["sdk"]
            for key in ("paddock_log_off", "paddock_log_on"):
                mine = r[key]
                r[f"throughput_ratio_{key[8:]}"] = round(mine["events_per_s"] / sdk["events_per_s"], 2)
                r[f"cpu_ratio_{key[8:]}"] = round(mine["host_cpu_per_100k"] / sdk["host_cpu_per_100k"], 3)
            r["load_average"] = [round(x, 2) for x in os.getloadavg()]
            rounds.append(r)
    summary = {
        key: median(r[key] for r in rounds)
        for key in ("throughput_ratio_log_off", "throughput_ratio_log_on", "cpu_ratio_log_off", "cpu_ratio_log_on")
    }
    for side in ("sdk", "paddock_log_off", "paddock_log_on"):
        summary[f"{side}_events_per_s"] = median(r[side]["events_per_s"] for r in rounds)
        summary[f"{side}_cpu_per_100k"] = median(r[side]["host_cpu_per_100k"] for r in rounds)
    emit({
        "benchmark": "peer-acp",
        "sdk": f"{SDK_PACKAGE} {version}",
        "sessions": args.sessions,
        "chunks": args.chunks,
        "summary": summary,
        "targets": {"throughput_ratio_at_least": TARGETS["throughput_ratio"],
                    "cpu_ratio_at_most": round(TARGETS["cpu_ratio"], 3)},
        "meets_targets": {
            "throughput_log_off": summary["throughput_ratio_log_off"] >= TARGETS["throughput_ratio"],
            "throughput_log_on": summary["throughput_ratio_log_on"] >= TARGETS["throughput_ratio"],
            "cpu_log_off": summary["cpu_ratio_log_off"] <= TARGETS["cpu_ratio"],
            "cpu_log_on": summary["cpu_ratio_log_on"] <= TARGETS["cpu_ratio"],
        },
        "per_round": rounds,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
