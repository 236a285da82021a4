"""``paddock bench peer-codex``: Paddock's ``codex`` driver against the official Codex Python SDK
(``openai-codex``) on the same pinned Codex app-server and the same scripted model server.

Workload: one scripted model server in a child process (``_model_proc.py``, so this process's
CPU clock counts only the client under test), answering ``text`` ("Hello from mock", 3 deltas)
and ``long`` (``--chars`` characters in ``--chunks`` deltas, no delay). Each side gets its own
offline env (``build_offline_env("codex", ...)``, its own CODEX_HOME) and ONE thread on its own
app-server process of the pinned binary:

- ``paddock``: ``Runtime`` with one instance ``{"driver": "codex", "endpoint": <server>, ...}``,
  full-access, event log off; a subscriber on the thread. Turn = ``send_turn`` ->
  ``turn.completed``; events = ``content.delta`` (assistant text) delivered to the subscriber.
- ``sdk``: ``openai_codex.Codex(CodexConfig(codex_bin=<the same binary>, env=<offline env>))``,
  ``thread_start(approval_mode=deny_all)`` (approvalPolicy never, as full-access), ``turn()`` ->
  ``stream()`` until ``turn/completed``; events = ``item/agentMessage/delta`` notifications.

``--turns`` warm ``text`` turns per side, interleaved (order alternating): median and p90 of
send -> completed. Then ``--streams`` ``long`` turns per side, interleaved: events/s from the
first delta to the turn's end, and this process's CPU seconds per 100k events over the turn
(every thread; the app-server's own CPU is the same binary on both sides and is not counted).
Targets (issue 15): latency median <= the SDK's, events/s >= 2x, CPU per event <= 1/2.

A third side, ``raw``, is a plain JSON-lines client (subprocess, one thread, msgspec down to
each line's method, nothing else) on its own app-server: the ceiling both clients are held to,
since the app-server writes one line per delta and cannot stream faster than it produces.
Without the pinned binary or the SDK (``bench`` extra) it prints ``{"skipped": reason}``.
"""

from __future__ import annotations

import argparse
import json

import msgspec
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import (  # noqa: E402
    emit, kill_survivors, median, ms, per_100k, percentile, ratio_of, self_cpu,
)

SDK_PACKAGE = "openai-codex"
PROMPT = "SCENARIO:{scenario} turn {n}"


def _pinned() -> tuple[list[str] | None, str | None, list[str]]:
    missing: list[str] = []
    try:
        from paddock.testing import load_pins, peer_argv

        pin = load_pins()["codex"]
        argv = peer_argv(pin)
        if argv is None:
            missing.append(f"the pinned Codex {pin.version} is not installed ({pin.install_hint})")
        return argv, pin.version, missing
    except Exception as exc:
        return None, None, [f"the pinned CLIs cannot be located: {exc!r}"]


def _sdk_version() -> str | None:
    try:
        from importlib.metadata import version

        return version(SDK_PACKAGE)
    except Exception:
        return None


class ModelProc:
    """The scripted model server in a child process."""

    def __init__(self, chars: int, chunks: int, workspace: Path) -> None:
        script = {"scenarios": {"long": [{"type": "text", "text": "x" * chars, "chunks": chunks}]}}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("_model_proc.py")), json.dumps(script), str(workspace)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the model server did not start: {self.url!r}")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def _codex_config(url: str) -> dict:
    from paddock.testing import MOCK_KEY
    import paddock.testing

    catalog = Path(paddock.testing.__file__).with_name("codex_model_catalog.json")
    return {
        "driver": "codex", "endpoint": url, "api_key": MOCK_KEY, "model": "mock-model",
        "config": {"model_catalog_json": str(catalog),
                   "model_providers": {"paddock": {"request_max_retries": 0, "stream_max_retries": 0}},
                   "history": {"persistence": "none"}, "features": {"shell_snapshot": False}},
    }


class PaddockSide:
    """One codex thread through ``Runtime``; calls block the caller (the main thread)."""

    def __init__(self, url: str, state: str, cwd: str, env: dict[str, str]) -> None:
        from paddock import Runtime

        table = _codex_config(url)
        table["env"] = {k: v for k, v in env.items() if k in ("PATH", "LANG", "RUST_LOG")}
        self.rt = Runtime.open({"runtime": {"event_log": False}, "instances": {"codex": table}}, state_dir=state)
        started = time.perf_counter()
        self.rt.start_session("bench", instance="codex", cwd=cwd, runtime_mode="full-access", resume="never",
                              timeout=60.0)
        self.start_seconds = time.perf_counter() - started
        self.sub = self.rt.subscribe("bench", types=["content.delta", "turn.completed"], max_buffered=1_000_000)

    def turn(self, text: str) -> tuple[float, int, float | None]:
        started = time.perf_counter()
        self.rt.send_turn("bench", text)
        events = 0
        first = None
        deadline = started + 120.0
        while True:
            ev = self.sub.get(timeout=max(0.1, deadline - time.perf_counter()))
            if ev is None:
                raise TimeoutError("paddock: no turn.completed within 120 s")
            if ev.type == "content.delta":
                events += 1
                if first is None:
                    first = time.perf_counter()
            elif ev.type == "turn.completed":
                if ev.state != "completed":
                    raise RuntimeError(f"paddock turn ended {ev.state}: {ev.error}")
                end = time.perf_counter()
                return end - started, events, (end - first) if first is not None else None

    def close(self) -> None:
        self.sub.close()
        self.rt.close()


class SdkSide:
    """One thread through ``openai_codex.Codex`` (synchronous client, its own reader thread)."""

    def __init__(self, binary: str, env: dict[str, str], cwd: str) -> None:
        from openai_codex import Codex, CodexConfig
        from openai_codex._approval_mode import ApprovalMode

        started = time.perf_counter()
        self.codex = Codex(CodexConfig(codex_bin=binary, env=env, cwd=cwd))
        self.thread = self.codex.thread_start(approval_mode=ApprovalMode.deny_all, cwd=cwd)
        self.start_seconds = time.perf_counter() - started

    def turn(self, text: str) -> tuple[float, int, float | None]:
        started = time.perf_counter()
        handle = self.thread.turn(text)
        events = 0
        first = None
        status = None
        for note in handle.stream():
            if note.method == "item/agentMessage/delta":
                events += 1
                if first is None:
                    first = time.perf_counter()
            elif note.method == "turn/completed":
                status = str(getattr(note.payload.turn.status, "value", note.payload.turn.status))
        end = time.perf_counter()
        if status != "completed":
            raise RuntimeError(f"sdk turn ended {status}")
        return end - started, events, (end - first) if first is not None else None

    def close(self) -> None:
        self.codex.close()


class _RawLine(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None


class RawSide:
    """The ceiling: a plain JSON-lines client with no actors, no events and no threads. The
    app-server is spawned with subprocess, its stdout read on the caller's thread in 256 KiB
    reads, and each line decoded with one msgspec Decoder down to its ``method``. What it
    measures is how fast the pinned app-server itself streams to a reader that does nothing."""

    def __init__(self, binary: str, env: dict[str, str], cwd: str) -> None:
        started = time.perf_counter()
        self.proc = subprocess.Popen([binary, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=cwd, bufsize=0)
        self._fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._buf = b""
        self._decode = msgspec.json.Decoder(_RawLine).decode
        self._ids = iter(range(1, 1 << 30))
        self._call("initialize", {"clientInfo": {"name": "raw", "title": "raw", "version": "0"},
                                  "capabilities": {"experimentalApi": True}})
        self._send({"method": "initialized"})
        result = self._call("thread/start", {"cwd": cwd, "approvalPolicy": "never", "sandbox": "danger-full-access"})
        self.thread_id = msgspec.json.decode(result)["result"]["thread"]["id"]
        self.start_seconds = time.perf_counter() - started

    def _send(self, msg: dict) -> None:
        self.proc.stdin.write(msgspec.json.encode(msg) + b"\n")  # type: ignore[union-attr]

    def _lines(self):
        while True:
            chunk = os.read(self._fd, 262_144)
            if not chunk:
                raise RuntimeError("raw: the app-server closed its stdout")
            lines = (self._buf + chunk).split(b"\n")
            self._buf = lines.pop()
            yield from lines

    def _call(self, method: str, params: dict) -> bytes:
        rid = next(self._ids)
        self._send({"id": rid, "method": method, "params": params})
        for line in self._lines():
            msg = self._decode(line)
            if msg.method is None and msg.id == rid:
                return line
        raise AssertionError("unreachable")

    def turn(self, text: str) -> tuple[float, int, float | None]:
        started = time.perf_counter()
        self._send({"id": next(self._ids), "method": "turn/start",
                    "params": {"threadId": self.thread_id, "input": [{"type": "text", "text": text, "text_elements": []}]}})
        events = 0
        first = None
        for line in self._lines():
            method = self._decode(line).method
            if method == "item/agentMessage/delta":
                events += 1
                if first is None:
                    first = time.perf_counter()
            elif method == "turn/completed":
                end = time.perf_counter()
                return end - started, events, (end - first) if first is not None else None
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


SIDES = ("paddock", "sdk", "raw")


def _stats(xs: list[float]) -> dict:
    return {"median_ms": ms(median(xs)), "p90_ms": ms(percentile(xs, 0.9)), "n": len(xs)}


def _run(binary: str, args: argparse.Namespace, tmp: Path) -> dict:
    from paddock.testing import build_offline_env

    workspace = tmp / "workspace"
    workspace.mkdir()
    model = ModelProc(args.chars, args.chunks, workspace)
    clients: dict = {}
    out: dict = {"turn": {s: [] for s in SIDES}, "stream": {s: [] for s in SIDES}}
    try:
        envs = {s: build_offline_env("codex", tmp / f"env-{s}", model_url=model.url).env for s in SIDES}
        (tmp / "state").mkdir()
        clients["paddock"] = PaddockSide(model.url, str(tmp / "state"), str(workspace), envs["paddock"])
        clients["sdk"] = SdkSide(binary, envs["sdk"], str(workspace))
        clients["raw"] = RawSide(binary, envs["raw"], str(workspace))
        out["start_ms"] = {s: ms(c.start_seconds) for s, c in clients.items()}
        n = 0
        for k in range(args.warmup + args.turns):
            for side in SIDES[k % 3:] + SIDES[:k % 3]:
                n += 1
                total, _, _ = clients[side].turn(PROMPT.format(scenario="text", n=n))
                if k >= args.warmup:
                    out["turn"][side].append(total)
        for k in range(args.streams):
            for side in SIDES[k % 3:] + SIDES[:k % 3]:
                n += 1
                client = clients[side]
                cpu0 = self_cpu()
                total, events, streaming = client.turn(PROMPT.format(scenario="long", n=n))
                cpu = self_cpu() - cpu0
                out["stream"][side].append({"events": events, "seconds": streaming, "turn_seconds": total, "cpu": cpu})
    finally:
        for client in clients.values():
            try:
                client.close()
            except Exception:
                pass
        model.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench peer-codex", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="measured text turns per side")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured text turns per side first")
    parser.add_argument("--streams", type=int, default=5, help="long streamed turns per side")
    parser.add_argument("--chars", type=int, default=40_000, help="characters of the long reply")
    parser.add_argument("--chunks", type=int, default=20_000, help="deltas of the long reply")
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    argv_bin, version, missing = _pinned()
    try:
        import openai_codex  # noqa: F401
    except ImportError:
        missing.append(f"the {SDK_PACKAGE} Python package is not installed (pip install -e '.[bench]')")
    if missing or argv_bin is None:
        emit({"benchmark": "peer-codex", "skipped": "not applicable: " + "; ".join(missing), "missing": missing})
        return 0
    binary = argv_bin[0]
    with tempfile.TemporaryDirectory(prefix="paddock-bench-peer-codex-") as tmp:
        try:
            result = _run(binary, args, Path(tmp))
        finally:
            survivors = kill_survivors()
    sides: dict = {}
    for side in SIDES:
        streams = result["stream"][side]
        rates = [s["events"] / s["seconds"] for s in streams if s["seconds"]]
        cpu = [per_100k(s["cpu"], s["events"]) for s in streams]
        sides[side] = {
            "turn": _stats(result["turn"][side]),
            "events_per_turn": streams[0]["events"] if streams else None,
            "events_per_s_median": round(median(rates) or 0.0),
            "cpu_s_per_100k_median": median([c for c in cpu if c is not None]),
            "session_start_ms": result["start_ms"][side],
        }
    p, s, raw = sides["paddock"], sides["sdk"], sides["raw"]
    ratio = {
        "turn_median": ratio_of(median(result["turn"]["paddock"]), median(result["turn"]["sdk"])),
        "turn_p90": ratio_of(percentile(result["turn"]["paddock"], 0.9), percentile(result["turn"]["sdk"], 0.9)),
        "events_per_s": ratio_of(p["events_per_s_median"], s["events_per_s_median"]),
        "cpu_per_event": ratio_of(p["cpu_s_per_100k_median"], s["cpu_s_per_100k_median"]),
    }
    ceiling = {  # how close each client comes to the app-server's own streaming rate
        "paddock_events_per_s_over_raw": ratio_of(p["events_per_s_median"], raw["events_per_s_median"]),
        "sdk_events_per_s_over_raw": ratio_of(s["events_per_s_median"], raw["events_per_s_median"]),
    }
    targets = {"turn_median": "<= 1.0", "events_per_s": ">= 2.0", "cpu_per_event": "<= 0.5"}
    meets = {
        "turn_median": ratio["turn_median"] is not None and ratio["turn_median"] <= 1.0,
        "events_per_s": ratio["events_per_s"] is not None and ratio["events_per_s"] >= 2.0,
        "cpu_per_event": ratio["cpu_per_event"] is not None and ratio["cpu_per_event"] <= 0.5,
    }
    emit({
        "benchmark": "peer-codex",
        "sdk": f"{SDK_PACKAGE} {_sdk_version()}",
        "cli": f"codex {version} ({binary})",
        "turns": args.turns, "streams": args.streams, "chunks": args.chunks, "chars": args.chars,
        "results": {"paddock": p, "sdk": s, "raw": raw, "ratio_paddock_over_sdk": ratio, "ceiling": ceiling},
        "targets": targets, "meets_targets": meets,
        "survivors": survivors,
        "per_turn_ms": {k: [ms(x) for x in v] for k, v in result["turn"].items()},
        "streams_raw": result["stream"],
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
