"""Replay: the opencode driver against recorded HTTP + SSE exchanges of the real server
(tests/opencode/recordings, made by ``python -m tests.opencode.record_driver``).

The "server" is ``python -m paddock.testing.replay FILE`` started by the driver exactly as it
starts ``opencode serve`` (readiness line, ``--port``): it checks every request the driver makes
against the recording and plays the recorded answers and events. No opencode binary needed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="the opencode driver needs agent-paddock[opencode]")

import msgspec

from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext, ModelAccess
from paddock.testing import MOCK_KEY

from tests.adapter_harness import AdapterHarness, etype, hub  # noqa: F401  (hub is a fixture)

from .conftest import of_type, text_of
from .replay_sessions import SCENARIOS

RECORDINGS = Path(__file__).with_name("recordings")


class ReplayHarness(AdapterHarness):
    event_timeout = 30.0

    def __init__(self, tmp_path: Path, hub, recording: Path) -> None:
        super().__init__()
        self.hub = hub
        self.cwd = tmp_path / "workspace"
        self.cwd.mkdir()
        home = tmp_path / "home"
        home.mkdir()
        spec = BUILT_IN_DRIVERS["opencode"]
        cfg = msgspec.convert({"driver": "opencode", "binary": sys.executable,
                               "args": ["-m", "paddock.testing.replay", str(recording), "--workspace", str(self.cwd)]},
                              spec.config_type)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
        self.ctx = InstanceContext(instance_id="oc-replay", driver="opencode", config=cfg, home=str(home), env=env,
                                   state_dir=str(tmp_path), hub=hub,
                                   access=ModelAccess(endpoint="http://127.0.0.1:9", api_key=MOCK_KEY, model="mock-model"))
        self.adapter = spec.create(self.ctx)


def _run(tmp_path, hub, name: str):
    h = ReplayHarness(tmp_path, hub, RECORDINGS / f"{name}.jsonl")
    try:
        evs = SCENARIOS[name](h)
        handle = h.adapter._link.handle
    finally:
        h.close()
    info = handle.wait(10)
    assert info is not None
    # 0: the driver made exactly the recorded requests (3 and a diff on stderr otherwise).
    assert info.returncode == 0, info.stderr_tail
    return evs


def test_recordings_exist_and_are_ours():
    for name in SCENARIOS:
        header = json.loads((RECORDINGS / f"{name}.jsonl").read_text().splitlines()[0])
        assert header["cli"] == "opencode" and header["protocol"] == "opencode-server"


def test_replayed_text_turn(tmp_path, hub):
    evs = _run(tmp_path, hub, "text")
    [done] = of_type(evs, "turn.completed")
    assert done.state == "completed" and text_of(evs) == "Hello from mock"
    [item] = [e for e in of_type(evs, "item.completed") if e.kind == "assistant_message"]
    assert item.text == "Hello from mock"


def test_replayed_tool_turn_with_an_approval(tmp_path, hub):
    evs = _run(tmp_path, hub, "tool_shell")
    [opened] = of_type(evs, "request.opened")
    assert opened.kind == "command" and opened.detail == "touch hello.txt"
    [resolved] = of_type(evs, "request.resolved")
    assert resolved.decision == "accept"
    [tool] = [e for e in of_type(evs, "item.completed") if e.item_id == opened.item_id]
    assert tool.status == "completed" and tool.kind == "command"
    assert of_type(evs, "turn.completed")[-1].state == "completed"


def test_a_different_request_fails_the_replay_with_a_diff(tmp_path, hub):
    lines = (RECORDINGS / "text.jsonl").read_text().splitlines()
    edited = []
    for line in lines:
        frame = json.loads(line)
        msg = frame.get("msg") or {}
        if frame["type"] == "expect_outbound" and "/prompt_async" in msg.get("path", ""):
            msg["body"]["parts"][0]["text"] = "a different prompt"
        edited.append(json.dumps(frame))
    path = tmp_path / "edited.jsonl"
    path.write_text("\n".join(edited) + "\n")
    h = ReplayHarness(tmp_path, hub, path)
    try:
        h.start()
        handle = h.adapter._link.handle
        with pytest.raises(Exception):
            h.turn("Paddock recording. SCENARIO:text")
    finally:
        h.close()
    info = handle.wait(10)
    assert info is not None and info.returncode == 3 and "a different prompt" in info.stderr_tail
