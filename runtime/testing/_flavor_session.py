"""One host session through an ACP flavor's driver, for recording and replaying it: the same
steps drive the real agent (``record_flavor``, behind ``paddock record --driver``) and the
replayer (the flavor replay tests), so a replay checks every frame the driver writes.

Steps, in one session in ``approval-required`` mode: a text turn, a second text turn
(multi-turn), a file write the host accepts, one it declines, and a model HTTP 400.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from ._scenario import Patch, Script, Text
from ._transcript import Recorder

__all__ = ["FLAVOR_MODELS", "FLAVOR_SCRIPT", "FlavorTurn", "drive_flavor", "record_flavor"]

FLAVOR_MODELS = {
    "gemini": "gemini-2.5-flash",
    "qwen": "qwen3-coder",
    "claude-acp": "claude-sonnet-4-5",
    "copilot": "gpt-4.1",
    # codex-acp's bundled Codex core has metadata for this one (no "not found" warning text).
    "codex-acp": "gpt-5.4-mini",
}
"""The model each pinned flavor is configured with against the scripted model server."""

FLAVOR_SCRIPT = Script(scenarios={
    # apply_patch where the agent offers it (codex-acp), else its write-file tool.
    "write_accept": (Patch(path="accepted.txt", content="accepted by the host\n"),),
    "write_decline": (Patch(path="declined.txt", content="must not exist\n"),),
    "stream": (Text(text="".join(f"tick{i} " for i in range(200)), chunks=200, delay=0.1),),
})

STEPS: tuple[tuple[str, str | None], ...] = (
    ("say hi SCENARIO:text", None),
    ("remember the word OSPREY SCENARIO:text", None),
    ("write the file SCENARIO:write_accept", "accept"),
    ("write the file SCENARIO:write_decline", "decline"),
    ("this fails SCENARIO:http400", None),
)


class FlavorTurn(msgspec.Struct, frozen=True, kw_only=True):
    """What one step's turn did, as the host saw it."""

    state: str
    text: str
    error: str | None = None
    requests: tuple[tuple[str, str], ...] = ()
    """(request kind, decision) per request the host answered."""


def drive_flavor(rt: Any, instance: str, workspace: str, *, timeout: float = 60.0) -> list[FlavorTurn]:
    """Run :data:`STEPS` on thread ``flavor`` of ``instance`` (a ``paddock.Runtime``)."""
    rt.start_session("flavor", instance=instance, cwd=workspace, runtime_mode="approval-required", timeout=timeout)
    out: list[FlavorTurn] = []
    for text, decision in STEPS:
        requests: list[tuple[str, str]] = []
        parts: list[str] = []
        end = None
        with rt.subscribe(thread_id="flavor") as events:
            turn = rt.send_turn("flavor", text)
            deadline = time.monotonic() + timeout
            while end is None and time.monotonic() < deadline:
                event = events.get(timeout=max(0.0, deadline - time.monotonic()))
                if event is None:
                    break
                if event.type == "content.delta" and event.stream == "assistant_text":
                    parts.append(event.delta)
                elif event.type == "request.opened" and event.turn_id == turn.turn_id:
                    answer = decision or "decline"
                    requests.append((event.kind, answer))
                    rt.respond_to_request("flavor", event.request_id, answer)
                elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                    end = event
        if end is None:
            raise TimeoutError(f"step {text!r}: no turn.completed within {timeout} s")
        out.append(FlavorTurn(state=end.state, text="".join(parts), error=end.error, requests=tuple(requests)))
    rt.stop_session("flavor")
    return out


def record_flavor(kind: str, out: str | Path, *, timeout: float = 60.0) -> tuple[Path, list[FlavorTurn]]:
    """Record :func:`drive_flavor` through the ``kind`` flavor's driver against its pinned agent
    and the scripted model server, configured only with driver/endpoint/api_key/model. Raises
    ``LookupError`` when the agent is not installed."""
    from paddock import Runtime
    from paddock.drivers._peers import default_peers_dir, load_pins

    from .model_server import ModelServer

    pin = load_pins().get(kind)
    if pin is None or kind not in FLAVOR_MODELS:
        raise ValueError(f"no pinned ACP flavor {kind!r}; known: {', '.join(FLAVOR_MODELS)}")
    with tempfile.TemporaryDirectory(prefix="paddock-record-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        with ModelServer(FLAVOR_SCRIPT, workspace=workspace) as server:
            config = {"instances": {"agent": {"driver": kind, "endpoint": server.url, "api_key": "sk-paddock-record",
                                              "model": FLAVOR_MODELS[kind]}}}
            state = Path(tmp) / "state"
            with Runtime.open(config, state_dir=state) as rt:
                [info] = rt.instances()
                if info.status != "available":
                    raise LookupError(info.reason or f"{kind} is unavailable")
                home = str((state / "instances" / "agent").resolve())
                recorder = Recorder(cli=kind, version=pin.version, scenario="flavor", protocol="acp",
                                    workspace=str(workspace), replacements=[(home, "<home>"), (tmp, "<tmp>"),
                                                                          (str(default_peers_dir()), "<peers>")])
                rt._adapter("agent").tap = recorder
                turns = drive_flavor(rt, "agent", str(workspace), timeout=timeout)
    return recorder.write(out), turns
