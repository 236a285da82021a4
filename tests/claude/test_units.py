"""Pure pieces of the claude driver: registry record, config, cursor, tool kinds, probe."""

from __future__ import annotations

import msgspec
import pytest

from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext
from paddock.drivers.claude import CLAUDE_CAPABILITIES, ClaudeConfig, build_argv, item_kind_of_tool
from paddock.drivers.claude._cursor import cursor_for, session_id_of
from paddock.contract import ResumeCursor, TokenUsage, ValidationError


def test_registry_record():
    spec = BUILT_IN_DRIVERS["claude"]
    assert spec.kind == "claude" and spec.config_type is ClaudeConfig and spec.capabilities is CLAUDE_CAPABILITIES
    caps = spec.capabilities
    assert caps.sessions.resume and not caps.sessions.shared_process and caps.turns.interrupt
    assert not caps.turns.steer and caps.identity.thread == "strong"


def test_config_defaults_and_typos():
    cfg = msgspec.convert({"driver": "claude"}, ClaudeConfig)
    assert cfg.binary is None and cfg.permission_modes == {}  # None: the pinned peer, else PATH
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"driver": "claude", "max_turn": 3}, ClaudeConfig)


def _ctx(tmp_path, **config):
    cfg = msgspec.convert({"driver": "claude", **config}, ClaudeConfig)
    return InstanceContext(instance_id="c", driver="claude", config=cfg, home=str(tmp_path), env={"PATH": str(tmp_path)},
                           state_dir=str(tmp_path), hub=None)


def test_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("PADDOCK_PEERS_DIR", str(tmp_path / "no-peers"))
    probe = BUILT_IN_DRIVERS["claude"].probe
    assert "nor on PATH" in probe(_ctx(tmp_path)) and "paddock peers install --only claude" in probe(_ctx(tmp_path))
    exe = tmp_path / "claude"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert probe(_ctx(tmp_path)) is None
    assert probe(_ctx(tmp_path, binary=str(exe))) is None


def test_argv_shapes():
    cfg = msgspec.convert({"driver": "claude", "args": ["--x"], "system_prompt": ""}, ClaudeConfig)
    argv = build_argv("/bin/claude", cfg, permission_mode="bypassPermissions", model=None, session_id="s1", resume=True)
    assert argv[:2] == ["/bin/claude", "--x"]
    assert "--allow-dangerously-skip-permissions" in argv and "--resume=s1" in argv
    assert argv[-2:] == ["--system-prompt", ""] and not any(a.startswith("--model") for a in argv)


def test_cursor_round_trip_and_rejects():
    usage = TokenUsage(input_tokens=5, output_tokens=1, total_tokens=6)
    cursor = cursor_for("claude", "abc", usage)
    assert session_id_of(ResumeCursor.decode(cursor.encode()), "claude") == ("abc", usage)
    with pytest.raises(ValidationError):
        session_id_of(ResumeCursor(driver="acp", version=1, payload='{"session_id":"x"}'), "claude")
    with pytest.raises(ValidationError):
        session_id_of(ResumeCursor(driver="claude", version=1, payload="not json"), "claude")
    with pytest.raises(ValidationError):
        session_id_of(ResumeCursor(driver="claude", version=1, payload='{"session_id":""}'), "claude")


@pytest.mark.parametrize(("tool", "kind"), [
    ("Bash", "command"), ("Write", "file_change"), ("Edit", "file_change"), ("MultiEdit", "file_change"),
    ("Read", "file_read"), ("Grep", "search"), ("WebSearch", "web_search"), ("mcp__srv__tool", "mcp_tool_call"),
    ("Task", "tool_call"),
])
def test_tool_kinds(tool, kind):
    assert item_kind_of_tool(tool) == kind
