"""``paddock bench peer-opencode``: turn latency and events/s of a long streamed reply through
Paddock's ``opencode`` driver against the official ``opencode-ai`` Python client, side by side
on the same pinned ``opencode serve`` and the same scripted model server.

Workload: one ``ModelServer`` (paddock.testing) with a ``long`` scenario (``--chunks`` text
pieces streamed without delay) and the built-in ``text`` scenario; ONE ``opencode serve`` (the
pinned binary, offline env from ``build_offline_env("opencode", ...)``, a server password, cwd =
the workspace), started by the benchmark. Both sides talk to that server:

- ``paddock``: ``Runtime`` with one instance ``{"driver": "opencode", "server_url": <it>,
  "password": ...}`` (external mode), full-access, event log off, a subscriber on the thread.
  Turn = ``send_turn`` -> ``turn.completed``; events = the ``content.delta`` events it delivered.
- ``client``: ``opencode_ai.Opencode`` (``opencode-ai`` from PyPI) with the same password as a
  Basic auth header. Session = ``session.create`` (with a title, as the driver does, else the
  server makes a title-generation model call); events = ``event.list()`` (the SSE stream at
  ``/event``, kept open on a thread, decoded by the client into its models). The client predates
  ``prompt_async``, so a turn is ``client.post("/session/{id}/prompt_async")`` (its own generic
  request method) -> the ``session.idle`` of that session; events = its ``message.part.delta``.

Turns are interleaved (Paddock turn k, client turn k, alternating which goes first) after
``--warmup`` unmeasured turns each: ``--turns`` short (``text``) turns for latency, then
``--long`` long turns for events/s (deltas / seconds from the first delta to the turn's end) and
this process's CPU seconds per 1,000 deltas (both sides run in this process, one at a time).
Prints ``{"skipped": reason}`` without the pinned binary, httpx or ``opencode-ai`` (``bench``
extra). The server is stopped at the end; survivors are reported (and killed).
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, kill_survivors, median, ms, percentile  # noqa: E402

CLIENT_PACKAGE = "opencode-ai"
PASSWORD = "bench-password"
SHORT = "SCENARIO:text Say hello (turn {n})."
LONG = "SCENARIO:long Stream a long reply (turn {n})."


def _missing() -> tuple[list[str], list[str] | None, str | None]:
    missing: list[str] = []
    argv = version = None
    try:
        from paddock.drivers import BUILT_IN_DRIVERS, find_binary
        from paddock.testing import load_pins

        if "opencode" not in BUILT_IN_DRIVERS:
            missing.append("Paddock has no `opencode` driver")
        pin = load_pins()["opencode"]
        version = pin.version
        found = find_binary(None, peer="opencode", env=dict(os.environ))
        if isinstance(found, str):
            missing.append(found)
        elif found.pinned != pin.version:
            missing.append(f"the pinned opencode {pin.version} is not installed ({pin.install_hint})")
        else:
            argv = list(found.argv)
    except Exception as exc:
        missing.append(f"the pinned opencode cannot be located: {exc!r}")
    from paddock.actors import http_available

    if http_available() is not None:
        missing.append(str(http_available()))
    try:
        import opencode_ai  # noqa: F401
    except ImportError:
        missing.append(f"the {CLIENT_PACKAGE} Python package is not installed (pip install -e '.[bench]')")
    return missing, argv, version


def _client_version() -> str | None:
    try:
        from importlib.metadata import version

        return version(CLIENT_PACKAGE)
    except Exception:
        return None


def _serve(argv: list[str], env: dict[str, str], cwd: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([*argv, "serve", "--hostname", "127.0.0.1", "--port", str(port)],
                            env={**env, "OPENCODE_SERVER_PASSWORD": PASSWORD}, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 90
    for line in proc.stdout:
        m = re.search(rb"opencode server listening on (http://\S+)", line)
        if m:
            return proc, m.group(1).decode()
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError("opencode serve printed no readiness line")


class PaddockSide:
    def __init__(self, url: str, state: str, cwd: str) -> None:
        from paddock import Runtime

        self.rt = Runtime.open({
            "runtime": {"event_log": False},
            "instances": {"oc": {"driver": "opencode", "server_url": url, "password": PASSWORD}},
        }, state_dir=state)
        self.rt.start_session("bench", instance="oc", cwd=cwd, resume="never", timeout=60.0)
        self.sub = self.rt.subscribe("bench", types=["content.delta", "turn.completed"], max_buffered=1_000_000)

    def turn(self, text: str) -> dict:
        cpu0 = time.process_time()
        started = time.perf_counter()
        self.rt.send_turn("bench", text)
        first = None
        deltas = 0
        deadline = started + 120.0
        while True:
            ev = self.sub.get(timeout=max(0.1, deadline - time.perf_counter()))
            if ev is None:
                raise TimeoutError("paddock: no turn.completed within 120 s")
            if ev.type == "content.delta":
                deltas += 1
                if first is None:
                    first = time.perf_counter()
            elif ev.type == "turn.completed":
                end = time.perf_counter()
                if ev.state != "completed":
                    raise RuntimeError(f"paddock turn ended {ev.state}: {ev.error}")
                return _turn_figures(started, first, end, deltas, time.process_time() - cpu0)

    def close(self) -> None:
        self.sub.close()
        self.rt.close()


class ClientSide:
    """The official client; its event stream runs on a thread and hands events over a condition."""

    def __init__(self, url: str) -> None:
        from opencode_ai import Opencode

        auth = "Basic " + base64.b64encode(f"opencode:{PASSWORD}".encode()).decode()
        self.client = Opencode(base_url=url, default_headers={"Authorization": auth}, max_retries=0, timeout=120.0)
        self.session = self.client.session.create(extra_body={"title": "bench client"}).id
        self.cond = threading.Condition()
        self.deltas = 0
        self.first: float | None = None
        self.idle = 0
        self.error: str | None = None
        self.stream = self.client.event.list()
        self.thread = threading.Thread(target=self._read, name="opencode-ai-events", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for event in self.stream:
                etype = getattr(event, "type", None)
                props = getattr(event, "properties", None)
                sid = getattr(props, "session_id", None) or (props.get("sessionID") if isinstance(props, dict) else None)
                if sid is None and props is not None:
                    sid = getattr(props, "sessionID", None) or (getattr(props, "model_extra", None) or {}).get("sessionID")
                if sid != self.session:
                    continue
                with self.cond:
                    if etype == "message.part.delta":
                        self.deltas += 1
                        if self.first is None:
                            self.first = time.perf_counter()
                    elif etype == "session.idle":
                        self.idle += 1
                        self.cond.notify_all()
        except Exception as exc:  # the stream ends when the benchmark closes it
            with self.cond:
                self.error = repr(exc)
                self.cond.notify_all()

    def turn(self, text: str) -> dict:
        with self.cond:
            self.deltas, self.first, idle = 0, None, self.idle
        cpu0 = time.process_time()
        started = time.perf_counter()
        self.client.post(f"/session/{self.session}/prompt_async", body={"parts": [{"type": "text", "text": text}]},
                         cast_to=type(None))
        with self.cond:
            if not self.cond.wait_for(lambda: self.idle > idle or self.error is not None, 120.0):
                raise TimeoutError("client: no session.idle within 120 s")
            if self.error is not None:
                raise RuntimeError(f"client event stream failed: {self.error}")
            end = time.perf_counter()
            deltas, first = self.deltas, self.first
        return _turn_figures(started, first, end, deltas, time.process_time() - cpu0)

    def close(self) -> None:
        try:
            self.stream.close()
        except Exception:
            pass
        self.client.close()


def _turn_figures(started: float, first: float | None, end: float, deltas: int, cpu: float) -> dict:
    stream_s = (end - first) if first is not None else None
    return {"turn_s": end - started, "first_delta_s": None if first is None else first - started, "deltas": deltas,
            "events_per_s": (deltas / stream_s) if stream_s else None,
            "cpu_per_1k_deltas_s": (cpu / deltas * 1000) if deltas else None}


def _stats(values: list) -> dict:
    xs = [v for v in values if v is not None]
    return {"median": median(xs), "p90": percentile(xs, 0.9), "n": len(xs)}


def _run(argv: list[str], args: argparse.Namespace, tmp: str) -> dict:
    from paddock.testing import ModelServer, build_offline_env

    root = Path(tmp)
    ws = root / "workspace"
    ws.mkdir()
    words = "".join(f"w{i} " for i in range(args.chunks))
    script = {"scenarios": {"long": [{"type": "text", "text": words, "chunks": args.chunks}]}}
    out: dict[str, dict[str, list]] = {"paddock": {"short": [], "long": []}, "client": {"short": [], "long": []}}
    with ModelServer(script, workspace=ws) as model:
        offline = build_offline_env("opencode", root / "env", model_url=model.url)
        proc, url = _serve(argv, offline.env, str(ws))
        paddock = client = None
        try:
            (root / "state").mkdir()
            paddock = PaddockSide(url, str(root / "state"), str(ws))
            client = ClientSide(url)
            n = 0
            plan = [("short", k) for k in range(args.warmup + args.turns)] + [("long", k) for k in range(args.long)]
            for kind, k in plan:
                order = ("paddock", "client") if k % 2 == 0 else ("client", "paddock")
                for side in order:
                    n += 1
                    text = (SHORT if kind == "short" else LONG).format(n=n)
                    figures = (paddock if side == "paddock" else client).turn(text)
                    if kind == "long" or k >= args.warmup:
                        out[side][kind].append(figures)
        finally:
            for s in (client, paddock):
                if s is not None:
                    try:
                        s.close()
                    except Exception:
                        pass
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench peer-opencode", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10, help="measured short turns per side")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured short turns per side first")
    parser.add_argument("--long", type=int, default=3, help="long streamed turns per side (events/s)")
    parser.add_argument("--chunks", type=int, default=2000, help="text pieces of the long reply")
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    missing, binary_argv, version = _missing()
    if missing:
        emit({"benchmark": "peer-opencode", "skipped": "not applicable: " + "; ".join(missing), "missing": missing})
        return 0
    assert binary_argv is not None
    with tempfile.TemporaryDirectory(prefix="paddock-bench-peer-opencode-") as tmp:
        try:
            out = _run(binary_argv, args, tmp)
        finally:
            survivors = kill_survivors()
    sides = {}
    for side, kinds in out.items():
        short, long = kinds["short"], kinds["long"]
        sides[side] = {
            "turn_ms": {k: ms(v) for k, v in _stats([t["turn_s"] for t in short]).items() if k != "n"},
            "first_delta_ms": ms(_stats([t["first_delta_s"] for t in short])["median"]),
            "long_turn_ms": ms(_stats([t["turn_s"] for t in long])["median"]),
            "long_deltas": [t["deltas"] for t in long],
            "events_per_s": _round(_stats([t["events_per_s"] for t in long])["median"]),
            "cpu_ms_per_1k_deltas": ms(_stats([t["cpu_per_1k_deltas_s"] for t in long])["median"]),
        }
    p, c = sides["paddock"], sides["client"]
    ratio = {
        "turn_median_paddock_over_client": _div(p["turn_ms"]["median"], c["turn_ms"]["median"]),
        "events_per_s_paddock_over_client": _div(p["events_per_s"], c["events_per_s"]),
        "cpu_per_delta_paddock_over_client": _div(p["cpu_ms_per_1k_deltas"], c["cpu_ms_per_1k_deltas"]),
    }
    emit({
        "benchmark": "peer-opencode",
        "client": f"{CLIENT_PACKAGE} {_client_version()}",
        "server": f"opencode {version}",
        "turns": args.turns, "warmup": args.warmup, "long_turns": args.long, "chunks": args.chunks,
        "results": {"paddock": p, "client": c, "ratio": ratio},
        "meets_target": {"latency_at_least_equal": ratio["turn_median_paddock_over_client"] is not None
                         and ratio["turn_median_paddock_over_client"] <= 1.0,
                         "events_per_s_at_least_2x": ratio["events_per_s_paddock_over_client"] is not None
                         and ratio["events_per_s_paddock_over_client"] >= 2.0},
        "survivors": survivors,
    })
    return 0


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 3)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
