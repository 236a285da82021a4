"""Measure the local agent's own output rate (not a test; no assertions).

    .venv/bin/python tests/local_agent/measure_write_rate.py [--sessions 8] [--chunks 20000] [--unbuffered]

Starts ``python -m paddock.drivers.local --buffered``, opens N sessions, sends ``@chunks C`` to all at once
and times from the first prompt to the last result while a reader thread only counts lines.
Prints one JSON document: lines, seconds, lines_per_s, MiB_per_s, startup_s (spawn → initialize).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    sessions, chunks, buffered = 8, 20000, True
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--sessions":
            sessions = int(args.pop(0))
        elif a == "--chunks":
            chunks = int(args.pop(0))
        elif a == "--unbuffered":
            buffered = False
    with tempfile.TemporaryDirectory() as state:
        env = dict(os.environ, PADDOCK_LOCAL_STATE_DIR=state)
        env.pop("PADDOCK_LOCAL_BUFFERED", None)
        t_spawn = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "paddock.drivers.local", *(["--buffered"] if buffered else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, env=env, bufsize=0,
        )
        out = proc.stdout
        try:
            def send(obj):
                proc.stdin.write((json.dumps(obj) + "\n").encode())
                proc.stdin.flush()

            reader = __import__("io").BufferedReader(out, 1 << 20)
            send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
            reader.readline()
            startup = time.perf_counter() - t_spawn
            sids = []
            for i in range(sessions):
                send({"jsonrpc": "2.0", "id": 10 + i, "method": "session/new", "params": {"cwd": state, "mcpServers": []}})
                while True:
                    msg = json.loads(reader.readline())
                    if msg.get("id") == 10 + i:
                        sids.append(msg["result"]["sessionId"])
                        break
            pending = set(range(100, 100 + sessions))
            counts = {"lines": 0, "bytes": 0}
            done = threading.Event()

            def count():
                # Raw blocks, not lines: the reader must not be the bottleneck being measured.
                left, tail = sessions, b""
                while left:
                    block = reader.read1(1 << 20)
                    if not block:
                        break
                    counts["lines"] += block.count(b"\n")
                    counts["bytes"] += len(block)
                    left -= (tail + block).count(b'"stopReason"') - tail.count(b'"stopReason"')
                    tail = block[-16:]
                done.set()

            t = threading.Thread(target=count, daemon=True)
            t0 = time.perf_counter()
            t.start()
            for i, sid in enumerate(sids):
                send({"jsonrpc": "2.0", "id": 100 + i, "method": "session/prompt",
                      "params": {"sessionId": sid, "prompt": [{"type": "text", "text": f"@chunks {chunks}"}]}})
            done.wait(600)
            dt = time.perf_counter() - t0
        finally:
            proc.stdin.close()
            proc.wait(10)
    print(json.dumps({
        "sessions": sessions, "chunks": chunks, "buffered": buffered,
        "lines": counts["lines"], "seconds": round(dt, 3),
        "lines_per_s": round(counts["lines"] / dt), "MiB_per_s": round(counts["bytes"] / dt / 2**20, 1),
        "startup_s": round(startup, 3),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
