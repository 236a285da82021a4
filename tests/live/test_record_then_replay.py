"""Live: a recording made now with the real CLI replays through the replayer, byte for byte."""

from __future__ import annotations

import subprocess
import sys

import pytest

from paddock.testing import record
from tests.replay.test_replay import _channels, replay

from .conftest import require_peer


@pytest.mark.live
@pytest.mark.parametrize("cli,scenario", [("codex", "tool_shell"), ("claude", "text"), ("claude-acp", "text")])
def test_record_now_and_replay(cli, scenario, tmp_path):
    require_peer(cli)
    out = tmp_path / f"{cli}-{scenario}.jsonl"
    result = record(cli, scenario, out, timeout=40)
    assert result.frames > 4 and result.model_calls >= 1
    ws = tmp_path / "ws"
    ws.mkdir()
    _, recorder, replayed = replay(out, ws)
    assert replayed.returncode == 0, replayed.stderr_tail
    original = out.read_text().splitlines()
    again = recorder.dumps().decode().splitlines()
    assert again[0] == original[0] and _channels(again[1:]) == _channels(original[1:])


def test_paddock_record_rejects_unknown_clis(tmp_path):
    done = subprocess.run([sys.executable, "-m", "paddock.cli", "record", "--cli", "nope", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "unknown CLI 'nope'" in done.stderr
    assert not (tmp_path / "x").exists()
