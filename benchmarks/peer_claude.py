"""``paddock bench peer-claude``: turn latency through Paddock's ``claude`` driver against the
official Claude Agent SDK for Python, on the same pinned Claude CLI and the scripted model server.

Workload: one ``ModelServer`` (paddock.testing) answering the built-in ``text`` scenario; each
side gets its own offline env from ``build_offline_env("claude", ...)`` (same builder, its own
config folder) and runs ONE session on the pinned CLI (``$PADDOCK_PEERS_DIR``, else
``~/.cache/paddock/peers`` when it holds the pin, else the repository's ``.paddock/peers``):

- ``paddock``: ``Runtime`` with one instance ``{"driver": "claude", "binary": <pinned CLI>,
  "env": <offline env>, "model": ...}``, full-access, event log off; a subscriber on the thread.
  Turn = ``send_turn`` -> ``turn.completed``; first text = the first ``content.delta``
  (``assistant_text``).
- ``sdk``: ``claude_agent_sdk.ClaudeSDKClient`` with ``cli_path`` = the same binary, ``env`` =
  the same offline env (the SDK merges it over this process's environment), the same model,
  ``permission_mode="bypassPermissions"`` (what full-access maps to), partial messages on.
  Turn = ``query`` -> ``ResultMessage``; first text = the first ``text_delta`` stream event.

Session start = ``start_session`` / ``connect()`` (both return once the CLI answered
``initialize``): ``--starts`` extra sessions per side started and stopped (interleaved, order
alternating) plus the measured session's own start. Then ``--warmup`` unmeasured turns each, then ``--turns`` measured turns each,
interleaved (Paddock turn k, SDK turn k, alternating which goes first). Medians, p90 and the
ratio Paddock / SDK. Every CLI process is stopped at the end; survivors are reported (and killed).
Without the pinned CLI, the driver or the SDK (``bench`` extra) it prints ``{"skipped": reason}``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, kill_survivors, median, ms, percentile, ratio_of  # noqa: E402

SDK_PACKAGE = "claude-agent-sdk"
PROMPT = "SCENARIO:text Say hello (turn {n})."
_HOME_PEERS = Path.home() / ".cache" / "paddock" / "peers"


def _peers_root():
    from paddock.testing import default_peers_dir

    if os.environ.get("PADDOCK_PEERS_DIR"):
        return default_peers_dir()
    return _HOME_PEERS if _HOME_PEERS.is_dir() else default_peers_dir()


def _cli() -> tuple[list[str] | None, list[str], str | None]:
    """(argv of the pinned CLI or None, what is missing, the pinned version)."""
    missing: list[str] = []
    argv = version = None
    try:
        from paddock.testing import load_pins, peer_argv

        pin = load_pins().get("claude")
        if pin is None:
            missing.append("paddock/drivers/peers.toml has no claude pin")
        else:
            version = pin.version
            root = _peers_root()
            argv = peer_argv(pin, root)
            if argv is None:
                missing.append(f"the pinned Claude CLI {pin.version} is not installed in {root} "
                               f"({pin.install_hint})")
    except Exception as exc:  # the peers helper itself is optional
        missing.append(f"the pinned CLIs cannot be located: {exc!r}")
    return argv, missing, version


def _missing(argv_missing: list[str]) -> list[str]:
    missing = list(argv_missing)
    from paddock.drivers import BUILT_IN_DRIVERS

    if "claude" not in BUILT_IN_DRIVERS:
        missing.append("Paddock has no `claude` driver (paddock.drivers.BUILT_IN_DRIVERS: "
                       f"{', '.join(sorted(BUILT_IN_DRIVERS))})")
    try:
        import claude_agent_sdk  # noqa: F401
    except ImportError:
        missing.append(f"the {SDK_PACKAGE} Python package is not installed "
                       "(install the bench extra: pip install -e '.[bench]')")
    return missing


def _sdk_version() -> str | None:
    try:
        from importlib.metadata import version

        return version(SDK_PACKAGE)
    except Exception:
        return None


# -- the two sides ----------------------------------------------------------------------------------


class PaddockSide:
    """One claude session through ``Runtime``; the calls block the caller (the main thread)."""

    def __init__(self, binary: str, offline, state: str, cwd: str) -> None:
        from paddock import Runtime

        self.cwd = cwd
        self.rt = Runtime.open({
            "runtime": {"event_log": False},
            "instances": {"claude": {"driver": "claude", "binary": binary, "env": dict(offline.env),
                                     "model": offline.model}},
        }, state_dir=state)
        self.sub = None

    def start(self, thread_id: str = "bench") -> float:
        started = time.perf_counter()
        self.rt.start_session(thread_id, instance="claude", cwd=self.cwd, resume="never", timeout=60.0)
        seconds = time.perf_counter() - started
        if thread_id == "bench":
            self.sub = self.rt.subscribe("bench", types=["content.delta", "turn.completed"])
        else:
            self.rt.stop_session(thread_id, timeout=30.0)
        return seconds

    def turn(self, text: str) -> tuple[float, float | None, str]:
        started = time.perf_counter()
        self.rt.send_turn("bench", text)
        first = None
        deadline = started + 60.0
        while True:
            ev = self.sub.get(timeout=max(0.1, deadline - time.perf_counter()))
            if ev is None:
                raise TimeoutError("paddock: no turn.completed within 60 s")
            if ev.type == "content.delta":
                if first is None and ev.stream == "assistant_text":
                    first = time.perf_counter() - started
            elif ev.type == "turn.completed":
                if ev.state != "completed":
                    raise RuntimeError(f"paddock turn ended {ev.state}: {ev.error}")
                return time.perf_counter() - started, first, ev.state

    def close(self) -> None:
        if self.sub is not None:
            self.sub.close()
        self.rt.close()


class SdkSide:
    """One ``ClaudeSDKClient`` session; the coroutines run on the benchmark's event loop."""

    def __init__(self, binary: str, offline, cwd: str) -> None:
        self.stderr: list[str] = []
        self._args = (binary, offline, cwd)
        self.client = self._client()

    def _client(self):
        from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

        binary, offline, cwd = self._args
        return ClaudeSDKClient(ClaudeAgentOptions(
            cli_path=binary, env=dict(offline.env), cwd=cwd, model=offline.model,
            permission_mode="bypassPermissions", include_partial_messages=True,
            stderr=self.stderr.append,
        ))

    async def start_once(self) -> float:
        """Start and stop a separate session; the seconds to ``connect()``."""
        client = self._client()
        started = time.perf_counter()
        try:
            await client.connect()
            return time.perf_counter() - started
        finally:
            await client.disconnect()

    async def start(self) -> float:
        started = time.perf_counter()
        await self.client.connect()
        return time.perf_counter() - started

    async def turn(self, text: str) -> tuple[float, float | None, str]:
        from claude_agent_sdk import ResultMessage, StreamEvent

        started = time.perf_counter()
        await self.client.query(text)
        first = None
        async for msg in self.client.receive_response():
            if isinstance(msg, StreamEvent):
                event = msg.event
                if (first is None and event.get("type") == "content_block_delta"
                        and event.get("delta", {}).get("type") == "text_delta"):
                    first = time.perf_counter() - started
            elif isinstance(msg, ResultMessage):
                if msg.is_error:
                    raise RuntimeError(f"sdk turn ended with an error: {msg.result} {msg.subtype}")
                return time.perf_counter() - started, first, msg.subtype
        raise RuntimeError("sdk: the response ended without a ResultMessage")

    async def close(self) -> None:
        await self.client.disconnect()


# -- the run ------------------------------------------------------------------------------------------


def _stats(values: list[float | None]) -> dict:
    xs = [v for v in values if v is not None]
    return {"median_ms": ms(median(xs)), "p90_ms": ms(percentile(xs, 0.9)), "min_ms": ms(min(xs) if xs else None),
            "max_ms": ms(max(xs) if xs else None), "n": len(xs)}


async def _run(binary: str, turns: int, warmup: int, starts_n: int, tmp: str) -> dict:
    from paddock.testing import ModelServer, build_offline_env

    root = Path(tmp)
    workspace = root / "workspace"
    workspace.mkdir()
    paddock = sdk = None
    times: dict[str, list] = {"paddock_turn": [], "paddock_first_text": [], "sdk_turn": [], "sdk_first_text": []}
    starts: dict[str, list[float]] = {"paddock": [], "sdk": []}
    with ModelServer(workspace=workspace, log_path=root / "model-requests.jsonl") as server:
        try:
            p_env = build_offline_env("claude", root / "env-paddock", model_url=server.url)
            s_env = build_offline_env("claude", root / "env-sdk", model_url=server.url)
            (root / "state").mkdir()
            paddock = PaddockSide(binary, p_env, str(root / "state"), str(workspace))
            sdk = SdkSide(binary, s_env, str(workspace))
            for k in range(starts_n):
                for side in (("paddock", "sdk") if k % 2 == 0 else ("sdk", "paddock")):
                    if side == "paddock":
                        starts["paddock"].append(paddock.start(f"start-{k}"))
                    else:
                        starts["sdk"].append(await sdk.start_once())
            starts["paddock"].append(paddock.start())
            starts["sdk"].append(await sdk.start())
            n = 0
            for k in range(warmup + turns):
                order = ("paddock", "sdk") if k % 2 == 0 else ("sdk", "paddock")
                for side in order:
                    n += 1
                    text = PROMPT.format(n=n)
                    if side == "paddock":
                        total, first, _ = paddock.turn(text)
                    else:
                        total, first, _ = await sdk.turn(text)
                    if k >= warmup:
                        times[f"{side}_turn"].append(total)
                        times[f"{side}_first_text"].append(first)
        finally:
            if sdk is not None:
                try:
                    await sdk.close()
                except Exception:
                    pass
            if paddock is not None:
                paddock.close()
    return {"starts": starts, "times": times, "sdk_stderr_tail": (sdk.stderr[-5:] if sdk else [])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench peer-claude", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="measured warm turns per side, one session each")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured turns per side before those")
    parser.add_argument("--starts", type=int, default=3,
                        help="extra session starts per side (started and stopped, interleaved) before the measured session")
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    cli_argv, missing, cli_version = _cli()
    missing = _missing(missing)
    if missing:
        emit({"benchmark": "peer-claude", "skipped": "not applicable: " + "; ".join(missing), "missing": missing})
        return 0
    if len(cli_argv) != 1:
        emit({"benchmark": "peer-claude", "skipped": f"the pinned CLI needs a runner ({cli_argv}); "
              "both sides need one executable path"})
        return 0
    binary = cli_argv[0]
    with tempfile.TemporaryDirectory(prefix="paddock-bench-peer-claude-") as tmp:
        try:
            result = asyncio.run(_run(binary, args.turns, args.warmup, args.starts, tmp))
        finally:
            survivors = kill_survivors()
    t = result["times"]
    st = result["starts"]
    sides = {side: {"session_start": _stats(st[side]), "turn": _stats(t[f"{side}_turn"]),
                    "first_text": _stats(t[f"{side}_first_text"])}
             for side in ("paddock", "sdk")}
    ratio = {
        "session_start_median": ratio_of(median(st["paddock"]), median(st["sdk"])),
        "turn_median": ratio_of(median(t["paddock_turn"]), median(t["sdk_turn"])),
        "turn_p90": ratio_of(percentile(t["paddock_turn"], 0.9), percentile(t["sdk_turn"], 0.9)),
        "first_text_median": ratio_of(median([x for x in t["paddock_first_text"] if x is not None]),
                                    median([x for x in t["sdk_first_text"] if x is not None])),
    }
    emit({
        "benchmark": "peer-claude",
        "sdk": f"{SDK_PACKAGE} {_sdk_version()}",
        "cli": f"claude {cli_version} ({binary})",
        "scenario": "text",
        "turns": args.turns,
        "warmup": args.warmup,
        "results": {"paddock": sides["paddock"], "sdk": sides["sdk"], "ratio_paddock_over_sdk": ratio},
        "survivors": survivors,
        "per_turn_ms": {k: [ms(x) for x in v] for k, v in t.items()},
        "session_start_ms": {k: [ms(x) for x in v] for k, v in st.items()},
        "sdk_stderr_tail": result["sdk_stderr_tail"],
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
