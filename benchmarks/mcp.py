"""MCP relay benchmark: what the relay costs per tool call.

One client (raw pipes or one keep-alive HTTP connection, msgspec, no actors) calls the test MCP
server's ``echo`` tool back to back, sequentially, in three ways, round by round (interleaved, the
order rotating each round: the machine is shared and noisy):

- ``direct``: the client starts ``python -m paddock.testing.mcp_server`` and speaks stdio to it,
  as an agent does without the relay;
- ``relay``: the client starts the relay command a session hands its agent (``McpRelays.handed``),
  which starts the same server, passes every line through and reports each call to the session's
  listener (the reports are drained and counted: every call must be reported);
- ``relay_http``: the HTTP-serving relay a session starts for an agent that takes only HTTP MCP
  (``McpRelays.served``; copilot), called over streamable HTTP (JSON answers).

Per way: calls/s and per-call latency (p50, p90, p99, mean); per relay way: the added latency per
call (its p50 and mean minus ``direct``'s, medians over rounds). Target: the stdio relay adds at
most 1 ms per call at the median.

``paddock bench mcp [--calls 500] [--rounds 3] [--warmup 20]``
"""

from __future__ import annotations

import argparse
import http.client
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, ms, percentile  # noqa: E402
from paddock.contract import McpHttpServer, McpStdioServer  # noqa: E402
from paddock.drivers.mcp_relay import McpRelays  # noqa: E402

IDENTITY = {"driver": "bench", "instance_id": "bench", "thread_id": "bench"}
_INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}


class _Stdio:
    """A sequential MCP client over a child's pipes."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._next = 0
        self._decode = msgspec.json.Decoder().decode

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(msgspec.json.encode(message) + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> object:
        self._next += 1
        self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            msg = self._decode(self.proc.stdout.readline())
            if isinstance(msg, dict) and msg.get("id") == self._next:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class _Http:
    """A sequential MCP client over one keep-alive HTTP connection (JSON answers)."""

    def __init__(self, server: McpHttpServer) -> None:
        parts = urlsplit(server.url)
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self._path = parts.path
        self._headers = {**server.headers, "Content-Type": "application/json",
                         "Accept": "application/json, text/event-stream"}
        self._next = 0

    def send(self, message: dict) -> bytes:
        self._conn.request("POST", self._path, body=msgspec.json.encode(message), headers=self._headers)
        response = self._conn.getresponse()
        body = response.read()
        if response.status >= 400:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
        session = response.getheader("Mcp-Session-Id")
        if session:
            self._headers["Mcp-Session-Id"] = session
        return body

    def request(self, method: str, params: dict) -> object:
        self._next += 1
        msg = msgspec.json.decode(self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}))
        if "error" in msg:
            raise RuntimeError(msg["error"])
        return msg["result"]

    def close(self) -> None:
        self._conn.close()


def _calls(client: _Stdio | _Http, calls: int, warmup: int) -> list[float]:
    client.request("initialize", _INIT)
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    client.request("tools/list", {})
    for i in range(warmup):
        client.request("tools/call", {"name": "echo", "arguments": {"text": f"warm {i}"}})
    out = []
    for i in range(calls):
        start = time.perf_counter()
        result = client.request("tools/call", {"name": "echo", "arguments": {"text": f"call {i}"}})
        out.append(time.perf_counter() - start)
        assert isinstance(result, dict) and not result.get("isError"), result
    return out


def _summary(latencies: list[float], reported: int | None = None) -> dict:
    total = sum(latencies)
    doc = {"calls": len(latencies), "calls_per_s": round(len(latencies) / total, 1) if total else None,
           "p50_ms": ms(percentile(latencies, 0.5)), "p90_ms": ms(percentile(latencies, 0.9)),
           "p99_ms": ms(percentile(latencies, 0.99)), "mean_ms": ms(statistics.fmean(latencies))}
    if reported is not None:
        doc["calls_reported"] = reported
    return doc


def _drain(inbox: queue.Queue, relays: McpRelays, want: int, timeout: float = 10.0) -> int:
    """Fold the relay's reports into events until ``want`` calls were reported; the count."""
    done = 0
    deadline = time.monotonic() + timeout
    while done < want and time.monotonic() < deadline:
        try:
            batch = inbox.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        done += sum(1 for e in relays.handle(batch, "turn") if getattr(e, "type", "") == "item.completed")
    return done


def _round(server: McpStdioServer, folder: Path, calls: int, warmup: int, order: tuple[str, ...]) -> dict:
    results: dict[str, dict] = {}
    for way in order:
        if way == "direct":
            direct = _Stdio([server.command, *server.args])
            try:
                results["direct"] = _summary(_calls(direct, calls, warmup))
            finally:
                direct.close()
            continue
        inbox: queue.Queue = queue.Queue()
        relays = McpRelays((server,), str(folder), IDENTITY, inbox.put)  # type: ignore[arg-type]
        try:
            if way == "relay":
                [handed] = relays.handed()
                client: _Stdio | _Http = _Stdio([handed.command, *handed.args])
            else:
                [front] = relays.served(dict(os.environ), timeout=30)
                client = _Http(front)
            try:
                latencies = _calls(client, calls, warmup)
            finally:
                client.close()
            results[way] = _summary(latencies, _drain(inbox, relays, calls + warmup))
        finally:
            relays.close()
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench mcp", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="timed tool calls per way and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls first")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="paddock-bench-mcp-") as tmp:
        folder = Path(tmp)
        server = McpStdioServer(name="tools", command=sys.executable,
                                args=("-m", "paddock.testing.mcp_server", "--record", str(folder / "calls.jsonl")))
        ways = ("direct", "relay", "relay_http")
        # each round turns the order around, so no way always runs first (or last)
        rounds = [_round(server, folder, args.calls, args.warmup, ways[i % 3:] + ways[:i % 3])
                  for i in range(args.rounds)]
    added: dict[str, dict[str, float | None]] = {}
    for way in ("relay", "relay_http"):
        added[way] = {
            "added_p50_ms": round(statistics.median(r[way]["p50_ms"] - r["direct"]["p50_ms"] for r in rounds), 3),
            "added_mean_ms": round(statistics.median(r[way]["mean_ms"] - r["direct"]["mean_ms"] for r in rounds), 3),
            "calls_per_s_ratio_to_direct": round(statistics.median(
                r[way]["calls_per_s"] / r["direct"]["calls_per_s"] for r in rounds), 3),
        }
    medians = {way: {"calls_per_s": statistics.median(r[way]["calls_per_s"] for r in rounds),
                     "p50_ms": statistics.median(r[way]["p50_ms"] for r in rounds)}
               for way in ("direct", "relay", "relay_http")}
    every_call_reported = all(r[w]["calls_reported"] == args.calls + args.warmup
                              for r in rounds for w in ("relay", "relay_http"))
    emit({
        "benchmark": "mcp",
        "calls": args.calls, "rounds": args.rounds, "warmup": args.warmup,
        "medians": medians,
        "added": added,
        "per_round": rounds,
        "targets": {"relay_added_p50_ms": 1.0, "every_call_reported": True},
        "meets_targets": {"relay_added_p50_ms": added["relay"]["added_p50_ms"] <= 1.0,
                          "every_call_reported": every_call_reported},
    })
    return 0
