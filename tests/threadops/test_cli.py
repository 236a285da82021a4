"""``paddock fork``, ``paddock compact`` and chat's ``/fork`` and ``/compact``, as a person runs
them: real ``paddock`` processes on the built-in local agent (which has no native fork and no
compaction: fork is a hand-off, compaction is refused before any process is touched)."""

from __future__ import annotations

import json

from tests.cli.conftest import cli
from tests.host.conftest import local_history

TOML = """
[instances.local]
driver = "local"

[instances.other]
driver = "local"
"""



def test_fork_and_compact_from_the_command_line_and_the_chat(tmp_path):
    config = tmp_path / "paddock.toml"
    config.write_text(TOML)
    state, ws = tmp_path / "state", tmp_path / "ws"
    ws.mkdir()
    base = ("--config", str(config), "--state-dir", str(state))
    chat = cli("chat", *base, "--thread", "t1", "--cwd", str(ws),
               input="remember PLOVER\n/fork t2\n/fork\n/compact\n/quit\n")
    assert chat.returncode == 0, chat.stderr
    assert "thread t2 forked from t1 on instance local (local): its transcript rides" in chat.stdout
    assert "continue it with: paddock chat" in chat.stdout and "--thread t2" in chat.stdout
    assert "/fork takes a new thread id" in chat.stdout
    assert "context.compaction" in chat.stdout  # refused, the chat goes on

    forked = cli("fork", *base, "t1", "t3", "--instance", "other", "--json")
    assert forked.returncode == 0, forked.stderr
    assert json.loads(forked.stdout) == {"thread_id": "t3", "instance_id": "other", "driver": "local", "from": "t1"}
    again = cli("fork", *base, "t1", "t3")
    assert again.returncode == 1 and "already bound" in again.stderr

    compact = cli("compact", *base, "t1")
    assert compact.returncode == 1 and "context.compaction" in compact.stderr

    turn = cli("run", *base, "--thread", "t3", "what did I say?")
    assert turn.returncode == 0, turn.stderr
    [first] = local_history(state, "other")
    assert "remember PLOVER" in first and first.endswith("what did I say?")
