"""Shared helpers of the benchmark suite: machine facts, CPU clocks, percentiles, the local-agent
runtime config, and a raw ACP client (pipes + msgspec, no actors) used as the limit to compare
against. Not a benchmark itself (``paddock bench list`` skips ``_`` modules)."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec
import psutil

ROOT = Path(__file__).resolve().parents[1]


# -- reporting ------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """Facts about the machine a figure came from (load average sampled now)."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


_STARTED = machine()  # sampled when the benchmark module is loaded, before it runs


def emit(doc: dict[str, Any]) -> None:
    """Print ``doc`` as the benchmark's one JSON document: the machine (with the load average
    when the benchmark started) and ``load_average_end``."""
    doc.setdefault("machine", _STARTED)
    doc["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.stdout.flush()


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 3)


def ratio_of(a: float | None, b: float | None) -> float | None:
    """``a / b`` to three places; None when either is missing (or ``b`` is zero)."""
    return None if a is None or not b else round(a / b, 3)


def kill_survivors() -> list[dict[str, Any]]:
    """Kill every descendant of this process still alive and name each (pid, first three argv
    words): what a peer benchmark left behind, reported rather than leaked."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            found.append({"pid": proc.pid, "cmd": " ".join(proc.cmdline()[:3])})
            proc.kill()
        except psutil.Error:
            pass
    return found


def median(values: Iterable[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def per_100k(cpu_seconds: float, events: int) -> float | None:
    return None if not events else round(cpu_seconds / events * 100_000, 3)


# -- CPU clocks -----------------------------------------------------------------------------------


def self_cpu() -> float:
    """User + system CPU seconds of this process (every thread)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class TreeCpu:
    """CPU seconds of this process's live descendants (agents, shims), sampled with psutil.

    ``sample()`` remembers every descendant's total so far; ``delta()`` is the CPU they used since
    the first sample (a process that exited in between counts up to its last sample)."""

    def __init__(self) -> None:
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}

    def sample(self) -> None:
        for proc in psutil.Process().children(recursive=True):
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            total = times.user + times.system
            self._first.setdefault(proc.pid, total)
            self._last[proc.pid] = total

    def delta(self) -> float:
        return sum(self._last[pid] - self._first[pid] for pid in self._last)


def host_rss() -> int:
    return psutil.Process().memory_info().rss


def tree_rss() -> int:
    total = 0
    for proc in psutil.Process().children(recursive=True):
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


# -- runtime configs ------------------------------------------------------------------------------


def local_config(instances: int = 1, *, event_log: bool, prefix: str = "local",
                 confinement: str | None = None) -> dict[str, Any]:
    """A Runtime config with ``instances`` local-agent instances writing buffered output
    (``confinement``: the instances' key, else its default)."""
    extra = {"confinement": confinement} if confinement else {}
    return {
        "runtime": {"event_log": event_log},
        "instances": {
            f"{prefix}{n}": {"driver": "local", "env": {"PADDOCK_LOCAL_BUFFERED": "1"}, **extra}
            for n in range(instances)
        },
    }


def local_agent_argv() -> list[str]:
    return [sys.executable, "-m", "paddock.drivers.local", "--buffered"]


def local_agent_env(state_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env.update(PADDOCK_LOCAL_STATE_DIR=state_dir, PYTHONPATH=str(ROOT))
    return env


# -- the raw limit: one agent process read straight from its pipe ----------------------------------


class _Content(msgspec.Struct):
    type: str = ""
    text: str = ""


class _Update(msgspec.Struct):
    sessionUpdate: str
    content: _Content | None = None


class _Params(msgspec.Struct):
    sessionId: str = ""
    update: _Update | None = None


class _Line(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None
    params: _Params | None = None
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class RawAcpClient:
    """The limit Paddock is measured against: the local agent spawned by the supervision core's
    spawner (orphan guard, no actors), its stdout read by one plain thread in 256 KiB reads,
    split into lines and — unless ``decode=False`` — each line fully decoded with one msgspec
    Decoder into typed Structs. Nothing else: no routing, no events, no hub.

    Use as a context manager; ``stream(prompts)`` sends one prompt per session and returns
    ``(lines, content_lines, seconds)`` from the first prompt to the last response."""

    def __init__(self, sessions: int, state_dir: str, *, decode: bool = True) -> None:
        from paddock.supervisors import SpawnRequest, spawn

        self.sessions = sessions
        self.decode = decode
        self.cpu_reader = 0.0
        self._proc = spawn(
            SpawnRequest(local_agent_argv(), env=local_agent_env(state_dir), cwd=state_dir,
                         stderr=subprocess.DEVNULL)
        )
        self._out = self._proc.stdout
        self._in = self._proc.stdin
        self._enc = msgspec.json.Encoder()
        self._pending = b""
        self._call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        self.session_ids = [
            msgspec.json.decode(self._call(10 + n, "session/new", {"cwd": state_dir, "mcpServers": []}))["sessionId"]
            for n in range(sessions)
        ]

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _send(self, request_id: int, method: str, params: Any) -> None:
        self._in.write(self._enc.encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + b"\n")
        self._in.flush()

    def _call(self, request_id: int, method: str, params: Any) -> bytes:
        self._send(request_id, method, params)
        decoder = msgspec.json.Decoder(_Line)
        while True:
            while b"\n" not in self._pending:
                chunk = os.read(self._out.fileno(), 1 << 16)
                if not chunk:
                    raise RuntimeError(f"the local agent exited before answering {method}")
                self._pending += chunk
            line, self._pending = self._pending.split(b"\n", 1)
            msg = decoder.decode(line)
            if msg.id == request_id and msg.method is None:
                return b"null" if msg.result is msgspec.UNSET else bytes(msg.result)

    def stream(self, text: str) -> tuple[int, int, float]:
        """Send ``text`` to every session at once; read until every prompt is answered."""
        fd = self._out.fileno()
        first = 1000
        counts = [0, 0]
        done = threading.Event()
        decode = msgspec.json.Decoder(_Line).decode

        def reader() -> None:
            cpu0 = time.thread_time()
            left = set(range(first, first + self.sessions))
            tail = self._pending
            self._pending = b""
            lines = contents = 0
            while left:
                chunk = os.read(fd, 1 << 18)
                if not chunk:
                    break
                parts = (tail + chunk).split(b"\n") if tail else chunk.split(b"\n")
                tail = parts.pop()
                lines += len(parts)
                if self.decode:
                    for part in parts:
                        msg = decode(part)
                        if msg.method is None:
                            left.discard(msg.id)
                        elif msg.params is not None and msg.params.update is not None and msg.params.update.content is not None:
                            contents += 1
                else:
                    for part in parts:
                        if part.startswith(b'{"jsonrpc":"2.0","id":') or b'"stopReason"' in part:
                            msg = decode(part)
                            if msg.method is None:
                                left.discard(msg.id)
                    contents = lines
            self._pending = tail
            counts[0], counts[1] = lines, contents
            self.cpu_reader = time.thread_time() - cpu0
            done.set()

        thread = threading.Thread(target=reader, name="raw-reader", daemon=True)
        thread.start()
        started = time.perf_counter()
        for n, sid in enumerate(self.session_ids):
            self._send(first + n, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
        done.wait(600)
        seconds = time.perf_counter() - started
        thread.join(5)
        return counts[0], counts[1], seconds

    def close(self) -> None:
        from paddock.supervisors import teardown

        try:
            self._in.close()
        except OSError:
            pass
        teardown(self._proc, timeout=2.0, graceful=lambda: None, graceful_timeout=2.0)
        try:
            self._out.close()
        except OSError:
            pass

    def __enter__(self) -> RawAcpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_runtime(sessions: int, chunks: int, *, event_log: bool, tmp: str, stall_timeout: float = 30.0,
                metrics: bool = False) -> dict:
    """One Paddock round on the local agent: open, start ``sessions``, send each ``@chunks N``,
    count at one subscriber until every turn completed, close (shared by throughput and peer-acp).
    ``metrics`` runs the Prometheus collector of ``paddock serve`` on the runtime as well."""
    from paddock import Runtime

    state = tempfile.mkdtemp(prefix=f"rt-{'log' if event_log else 'nolog'}-", dir=tmp)
    rt = Runtime.open(local_config(1, event_log=event_log), state_dir=state)
    collector = None
    if metrics:
        from paddock.server._metrics import TYPES, MetricsCollector

        hub = rt._hub
        collector = MetricsCollector(lambda: rt.subscribe(types=TYPES), last_seq=lambda: hub.last_seq,
                                     log_path=hub.log_path)
        collector.start()
    try:
        threads = [f"t{n}" for n in range(sessions)]
        for tid in threads:
            rt.start_session(tid, instance="local0", cwd=tempfile.gettempdir())
        tree = TreeCpu()
        # room for every event of the round: the figure is the pipeline's rate to a subscriber that
        # keeps everything (with the default bound a lagging one reads the log, or with the log
        # off loses events, possibly the turn ends this loop waits for)
        sub = rt.subscribe(max_buffered=sessions * (chunks + 16))
        tree.sample()
        cpu0 = self_cpu()
        started = time.perf_counter()
        for tid in threads:
            rt.send_turn(tid, f"@chunks {chunks}")
        events = deltas = gaps = completed = 0
        while True:
            ev = sub.get(timeout=stall_timeout)
            if ev is None:
                # with the log off a subscriber that falls behind loses events, possibly the
                # last turn.completed: report instead of waiting forever
                raise RuntimeError(
                    f"no event for {stall_timeout:.0f} s: {completed}/{sessions} turns completed, "
                    f"{events} events seen, {gaps} dropped for the subscriber"
                )
            events += 1
            kind = ev.type
            if kind == "content.delta":
                deltas += 1
            elif kind == "turn.completed":
                completed += 1
                if completed == sessions:
                    break
            elif kind == "runtime.warning" and ev.code == "subscription.gap":
                gaps += ev.detail.get("count") or 0
        seconds = time.perf_counter() - started
        cpu = self_cpu() - cpu0
        tree.sample()
        sub.close()
    finally:
        rt.close()
        if collector is not None:
            collector.close()
    return {
        "events": events,
        "content_deltas": deltas,
        "dropped_for_subscriber": gaps,
        "seconds": round(seconds, 3),
        "events_per_s": round(events / seconds),
        "host_cpu_s": round(cpu, 3),
        "host_cpu_per_100k": per_100k(cpu, events),
        "agent_cpu_s": round(tree.delta(), 3),
    }
