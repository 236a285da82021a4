"""Live, against the pinned CLIs and the scripted model server: a worktree thread's files follow
its conversation. Three turns whose model writes a file through the CLI's own shell tool (a
relative path: the agent's cwd is the thread's worktree); a fork at turn 1 has turn 1's files on
a branch of its own; ``rollback_thread(2)`` leaves the worktree equal to the checkpoint after
turn 1 byte for byte, and the conversation (``read_thread`` and the next model request) agrees:
natively on Codex, by the runtime's rewind on Claude Code and OpenCode."""

from __future__ import annotations

import json

import pytest

from paddock import Runtime
from paddock.testing import ModelServer

from tests.workspaces.conftest import contents, git, make_repo
from .conftest import turn_text
from .test_host_handoff import _instance, proxied  # noqa: F401  (fixture)

pytestmark = [pytest.mark.live, pytest.mark.timeout(420)]

_T = 120.0
SCRIPT = {"default": "text", "scenarios": {
    f"w{n}": [{"type": "shell", "command": f"printf 'written in turn {n}' > turn{n}.txt"},
              {"type": "text", "text": f"wrote turn{n}.txt"}] for n in (1, 2, 3)}}


def _checkpointed(rt, thread_id: str, prompt: str):
    """Run a turn, then wait for the runtime's ``turn.diff.updated`` of it: that event."""
    with rt.subscribe(thread_id=thread_id, types=["turn.diff.updated"]) as sub:
        _, done = turn_text(rt, thread_id, prompt, timeout=_T)
        assert done.state == "completed", done.error
        while True:
            event = sub.get(timeout=_T)
            assert event is not None, "no checkpoint"
            if event.turn_id == done.turn_id and event.checkpoint:
                return event


@pytest.mark.parametrize("driver", ["codex", "claude", "opencode"])
def test_files_follow_rollback_and_fork(driver, tmp_path, proxied):  # noqa: F811
    repo = make_repo(tmp_path / "repo")
    with ModelServer(script=SCRIPT, workspace=repo, log_path=tmp_path / "model-requests.jsonl") as server:
        agent = {**_instance(driver, tmp_path, server, proxied), "workspace": "worktree"}
        with Runtime.open({"instances": {"agent": agent}}, state_dir=tmp_path / "state") as rt:
            session = rt.start_session("t", instance="agent", cwd=str(repo), runtime_mode="full-access", timeout=_T)
            assert session.branch and session.cwd != str(repo)
            first = _checkpointed(rt, "t", "ONE write it SCENARIO:w1")
            after_one = contents(session.cwd)
            assert after_one["turn1.txt"] == b"written in turn 1" and "+++ b/turn1.txt" in first.diff
            _checkpointed(rt, "t", "TWO write it SCENARIO:w2")
            _checkpointed(rt, "t", "THREE write it SCENARIO:w3")
            assert {"turn2.txt", "turn3.txt"} <= set(contents(session.cwd))
            assert not (repo / "turn1.txt").exists()

            fork = rt.fork_thread("t", "early", at_turn=1, timeout=_T)
            assert fork.branch not in (None, session.branch) and contents(fork.cwd) == after_one

            snapshot = rt.rollback_thread("t", 2, timeout=_T)
            assert snapshot.files_restored_to == first.checkpoint
            assert contents(session.cwd) == after_one
            assert [t.user_text for t in rt.read_thread("t").turns] == ["ONE write it SCENARIO:w1"]
            n = len(server.model_calls())
            _, done = turn_text(rt, "t", "FOUR what now SCENARIO:text", timeout=_T)
            assert done.state == "completed"
            body = next(json.dumps(r.body) for r in server.model_calls()[n:] if "FOUR" in json.dumps(r.body))
            assert "ONE write it" in body and "TWO write it" not in body and "THREE write it" not in body
            assert contents(fork.cwd) == after_one  # the threads never see each other's edits
        assert git(repo, "status", "--porcelain") == "" and git(repo, "stash", "list") == ""
