"""``paddock diff THREAD [TURN]`` as a person runs it: real ``paddock`` processes on the local
agent with ``workspace = "worktree"``."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import cli
from tests.workspaces.conftest import make_repo

pytestmark = pytest.mark.timeout(120)

TOML = """
[instances.local]
driver = "local"
workspace = "worktree"
"""


def test_paddock_diff_prints_a_turns_diff_and_the_whole_threads(tmp_path):
    repo = make_repo(tmp_path / "repo")
    config = tmp_path / "paddock.toml"
    config.write_text(TOML)
    base = ("--config", str(config), "--state-dir", str(tmp_path / "state"))
    for prompt in ("@write first.txt one", "@write second.txt two"):
        turn = cli("run", *base, "--thread", "t1", "--cwd", str(repo), "--mode", "full-access", prompt)
        assert turn.returncode == 0, turn.stderr
    assert not (repo / "first.txt").exists()  # written in the thread's worktree, not the repository

    second = cli("diff", *base, "t1", "2")
    assert second.returncode == 0, second.stderr
    assert "+++ b/second.txt" in second.stdout and "first.txt" not in second.stdout
    whole = cli("diff", *base, "t1", "--json")
    assert whole.returncode == 0, whole.stderr
    doc = json.loads(whole.stdout)
    assert doc["thread_id"] == "t1" and "+one" in doc["diff"] and "+two" in doc["diff"]
    missing = cli("diff", *base, "t1", "9")
    assert missing.returncode == 1 and "the thread has 2 turn(s)" in missing.stderr
