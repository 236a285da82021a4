"""Replay: each ACP flavor's own driver against the replayer playing a transcript recorded
through that driver (``paddock record --driver KIND``), with the same host steps
(``paddock.testing.drive_flavor``). The replayer checks every frame the driver writes; its
verdict file says whether all matched. Runs everywhere: no agent needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paddock import Runtime
from paddock.testing import drive_flavor, load_transcript

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings" / "acp" / "driver"
ALL = sorted(RECORDINGS.glob("*.jsonl"))

# What the host saw per step when the transcript was recorded: text turn, multi-turn, accepted
# write, declined write, model HTTP 400.
DECLINE_STATE = {"codex-acp": "cancelled"}  # its only reject option is "abort": Codex ends the turn
HTTP400 = {
    "gemini": '{"error":{"code":400,"message":"mock bad request","status":"INVALID_ARGUMENT"}}',
    "qwen": "Internal error: 400 mock bad request",
    "claude-acp": "Internal error: API Error: 400 mock bad request",
    "copilot": "400 mock bad request",
}


def replay_flavor(path: Path, tmp_path: Path, kind: str | None = None, **extra: str):
    kind = kind or load_transcript(path).header["cli"]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    verdict = tmp_path / "verdict.txt"
    config = {"instances": {"agent": {
        "driver": kind, "endpoint": "http://127.0.0.1:9", "api_key": "sk-replay", "model": "replayed",
        "binary": sys.executable,
        "args": ["-m", "paddock.testing.replay", str(path), "--workspace", str(workspace), "--verdict", str(verdict)],
        **extra,
    }}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        turns = drive_flavor(rt, "agent", str(workspace), timeout=20)
    status, _, detail = verdict.read_text().partition("\n")
    return turns, int(status), detail


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_the_flavor_driver_writes_exactly_the_recorded_frames(path, tmp_path):
    kind = path.stem
    turns, status, detail = replay_flavor(path, tmp_path)
    assert status == 0, detail
    assert [t.state for t in turns] == ["completed", "completed", "completed", DECLINE_STATE.get(kind, "completed"),
                                        "failed"]
    assert turns[0].text.endswith("Hello from mock") and turns[1].text.endswith("Hello from mock")
    assert [t.requests for t in turns[2:4]] == [(("file_change", "accept"),), (("file_change", "decline"),)]
    assert "mock bad request" in (turns[4].error or "")
    if kind in HTTP400:
        assert turns[4].error == HTTP400[kind]


def test_there_is_a_driver_recording_for_every_pinned_flavor():
    from paddock.testing import FLAVOR_MODELS

    assert {p.stem for p in ALL} >= set(FLAVOR_MODELS)


def test_a_driver_that_writes_another_frame_fails_the_replay(tmp_path):
    from paddock.contract import PaddockError

    # The same transcript through a different flavor: copilot's recording has no authenticate,
    # gemini's driver sends one; the replayer refuses it and the session cannot start.
    with pytest.raises(PaddockError):
        replay_flavor(RECORDINGS / "copilot.jsonl", tmp_path, kind="gemini")
    verdict = (tmp_path / "verdict.txt").read_text()
    assert verdict.startswith("3\n") and '"method": "authenticate"' in verdict


def test_a_registry_agent_speaks_spec_only_acp(tmp_path):
    # acp-registry has no code of its own: the spec-only flavor writes the same frames as the
    # claude-acp flavor for claude-agent-acp's recorded session (no auth, no native modes used).
    turns, status, detail = replay_flavor(RECORDINGS / "claude-acp.jsonl", tmp_path, kind="acp-registry",
                                          agent="claude-code-acp")
    assert status == 0, detail
    assert [t.state for t in turns] == ["completed", "completed", "completed", "completed", "failed"]
