"""Workspaces on the local agent: a worktree per thread, a checkpoint per turn, files that follow
rollback and fork, isolation between threads, deletion and the sweep after a host crash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from paddock import Runtime
from paddock.contract import SessionNotFoundError, ValidationError
from tests.workspaces.conftest import contents, git, make_repo, worktree_config, write_turn

pytestmark = pytest.mark.timeout(120)


def test_a_worktree_thread_runs_in_its_own_worktree_and_the_users_repo_is_untouched(rt, repo):
    (repo / "README.md").write_text("edited, not committed\n")
    (repo / "notes.txt").write_text("untracked\n")
    (repo / "debug.log").write_text("ignored\n")
    index_before = (repo / ".git" / "index").read_bytes()
    session = rt.start_session("t1", instance="local", cwd=str(repo))
    assert session.branch and session.branch.startswith("paddock/t1-")
    assert session.cwd != str(repo) and Path(session.cwd).is_dir()
    assert [s.cwd for s in rt.list_sessions()] == [session.cwd]
    assert [s.branch for s in rt.list_sessions()] == [session.branch]
    assert git(Path(session.cwd), "branch", "--show-current").strip() == session.branch
    # The user's uncommitted and untracked files are carried over; ignored ones are not.
    assert contents(session.cwd) == {".gitignore": b"*.log\nbuild/\n", "README.md": b"edited, not committed\n",
                                     "notes.txt": b"untracked\n"}
    diff = write_turn(rt, "t1", {"a.txt": "one"})
    assert "+++ b/a.txt" in diff.diff and "+one" in diff.diff
    assert not (repo / "a.txt").exists()
    assert (repo / ".git" / "index").read_bytes() == index_before  # the user's index, byte for byte
    assert git(repo, "stash", "list") == "" and git(repo, "branch", "--show-current").strip() == "main"
    assert git(repo, "status", "--porcelain") == " M README.md\n?? notes.txt\n"
    # The checkpoint is a commit on a hidden ref, the branch did not move.
    refs = git(repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/paddock/").split("\n")
    assert any(line.startswith(diff.checkpoint + " refs/paddock/t1-") for line in refs)
    assert git(repo, "rev-parse", session.branch).strip() == git(repo, "rev-parse", "main").strip()


def test_three_turns_then_rollback_two_leaves_turn_ones_files_and_conversation(rt, repo):
    session = rt.start_session("t1", instance="local", cwd=str(repo))
    first = write_turn(rt, "t1", {"a.txt": "alpha", "dir/b.txt": "beta"})
    after_one = contents(session.cwd)
    Path(session.cwd, "cache.log").write_text("ignored, kept")  # ignored files are never touched
    write_turn(rt, "t1", {"a.txt": "alpha changed", "c.txt": "gamma", "new/deep/d.txt": "delta"})
    os.remove(Path(session.cwd, "dir", "b.txt"))
    write_turn(rt, "t1", {"e.txt": "epsilon"})
    assert contents(session.cwd) != after_one

    snapshot = rt.rollback_thread("t1", 2)

    assert snapshot.files_restored_to == first.checkpoint
    assert [t.turn_id for t in snapshot.turns] == [first.turn_id]
    now = contents(session.cwd)
    assert now.pop("cache.log") == b"ignored, kept"
    assert now == after_one
    assert not Path(session.cwd, "new").exists()  # folders the dropped turns made are gone too
    assert [t.turn_id for t in rt.read_thread("t1").turns] == [first.turn_id]  # the conversation agrees
    assert rt.diff("t1", from_turn="base") == rt.diff("t1", to_turn=first.turn_id)
    # The thread goes on from there: the next turn is turn 2 again, and its diff is against turn 1.
    fourth = write_turn(rt, "t1", {"f.txt": "phi"})
    assert [t.turn_id for t in rt.read_thread("t1").turns] == [first.turn_id, fourth.turn_id]
    assert "c.txt" not in fourth.diff and "+++ b/f.txt" in fourth.diff


def test_restore_files_and_diff_between_checkpoints(rt, repo):
    session = rt.start_session("t1", instance="local", cwd=str(repo))
    one = write_turn(rt, "t1", {"a.txt": "1"})
    two = write_turn(rt, "t1", {"a.txt": "2"})
    assert "-1" in rt.diff("t1", to_turn=two.turn_id) and "+2" in rt.diff("t1", to_turn=two.turn_id)
    assert rt.diff("t1", from_turn=one.turn_id, to_turn=two.turn_id) == two.diff
    restored = rt.restore_files("t1", one.turn_id)
    assert restored.checkpoint == one.checkpoint
    assert Path(session.cwd, "a.txt").read_text() == "1"
    assert len(rt.read_thread("t1").turns) == 2  # files only: the conversation stays
    rt.restore_files("t1", "base")
    assert not Path(session.cwd, "a.txt").exists()
    with pytest.raises(ValidationError, match="no checkpoint"):
        rt.restore_files("t1", "turn-that-never-was")


def test_a_fork_at_turn_one_has_turn_ones_files_on_its_own_branch(rt, repo):
    source = rt.start_session("src", instance="local", cwd=str(repo))
    write_turn(rt, "src", {"a.txt": "one"})
    after_one = contents(source.cwd)
    write_turn(rt, "src", {"a.txt": "two", "b.txt": "two"})
    after_two = contents(source.cwd)

    fork = rt.fork_thread("src", "copy", at_turn=1)

    assert fork.cwd != source.cwd and fork.branch not in (None, source.branch)
    assert git(Path(fork.cwd), "branch", "--show-current").strip() == fork.branch
    assert contents(fork.cwd) == after_one
    assert contents(source.cwd) == after_two
    write_turn(rt, "copy", {"a.txt": "fork's own"})
    assert Path(source.cwd, "a.txt").read_text() == "two"


def test_two_threads_on_one_repo_never_see_each_others_edits(rt, repo):
    one = rt.start_session("one", instance="local", cwd=str(repo))
    two = rt.start_session("two", instance="local", cwd=str(repo))
    assert one.cwd != two.cwd and one.branch != two.branch
    write_turn(rt, "one", {"same.txt": "from one", "only-one.txt": "1"})
    write_turn(rt, "two", {"same.txt": "from two"})
    assert Path(one.cwd, "same.txt").read_text() == "from one"
    assert Path(two.cwd, "same.txt").read_text() == "from two"
    assert not Path(two.cwd, "only-one.txt").exists()
    assert not (repo / "same.txt").exists()
    two_diff = rt.diff("two", from_turn="base")
    assert "only-one" not in two_diff and "from one" not in two_diff


def test_delete_thread_removes_binding_worktree_refs_and_branch_unless_kept(rt, repo, tmp_path):
    for thread in ("gone", "kept"):
        rt.start_session(thread, instance="local", cwd=str(repo))
        write_turn(rt, thread, {"x.txt": thread})
    paths = {s.thread_id: (s.cwd, s.branch) for s in rt.list_sessions()}
    rt.delete_thread("gone")
    rt.delete_thread("kept", keep_branch=True)
    for thread, (cwd, branch) in paths.items():
        assert not Path(cwd).exists()
        assert thread not in [b.thread_id for b in rt.list_threads()]
    assert git(repo, "for-each-ref", "refs/paddock/") == ""
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    branches = git(repo, "branch", "--format=%(refname:short)").split()
    assert paths["kept"][1] in branches and paths["gone"][1] not in branches
    assert rt.list_sessions() == []
    with pytest.raises(SessionNotFoundError):
        rt.delete_thread("gone")


def test_checkpoints_beyond_the_configured_count_are_pruned(tmp_path, repo):
    with Runtime.open(worktree_config(checkpoints_kept=2), state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="local", cwd=str(repo))
        turns = [write_turn(rt, "t", {"n.txt": str(n)}) for n in range(4)]
        refs = git(repo, "for-each-ref", "--format=%(objectname)", "refs/paddock/").split()
        assert len(refs) == 3  # the base and the last two turns
        assert {turns[2].checkpoint, turns[3].checkpoint} <= set(refs)
        with pytest.raises(ValidationError, match="pruned"):
            rt.restore_files("t", turns[0].turn_id)


@pytest.mark.parametrize("case", ["not a repo", "no commit", "submodules", "lfs"])
def test_a_folder_a_worktree_cannot_hold_is_refused_naming_the_reason(rt, tmp_path, case):
    folder = tmp_path / "f"
    if case == "not a repo":
        folder.mkdir()
        reason = "not inside a git repository"
    elif case == "no commit":
        folder.mkdir()
        git(folder, "init", "-q")
        reason = "no commit yet"
    elif case == "submodules":
        make_repo(folder, {".gitmodules": "[submodule \"x\"]\n\tpath = x\n\turl = ../x\n"})
        reason = "submodules"
    else:
        make_repo(folder, {".gitattributes": "*.bin filter=lfs diff=lfs merge=lfs -text\n"})
        reason = "Git LFS"
    with pytest.raises(ValidationError, match=reason) as err:
        rt.start_session("t", instance="local", cwd=str(folder))
    assert err.value.thread_id == "t"
    assert rt.list_threads() == [] and rt.list_sessions() == []


def test_a_detached_head_and_a_subfolder_are_handled(rt, repo):
    (repo / "sub").mkdir()
    (repo / "sub" / "s.txt").write_text("s")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sub")
    git(repo, "checkout", "-q", "--detach", "HEAD~0")
    session = rt.start_session("t", instance="local", cwd=str(repo / "sub"))
    assert session.cwd.endswith("/sub") and Path(session.cwd, "s.txt").read_text() == "s"
    write_turn(rt, "t", {"w.txt": "in sub"})
    assert "+++ b/sub/w.txt" in rt.diff("t")


_HOST = textwrap.dedent("""
    import os, signal, sys
    from paddock import Runtime
    from paddock._workspaces._worktrees import Worktrees
    from tests.workspaces.conftest import worktree_config, write_turn
    rt = Runtime.open(worktree_config(), state_dir=sys.argv[1])
    session = rt.start_session("doomed", instance="local", cwd=sys.argv[2])
    write_turn(rt, "doomed", {"x.txt": "x"})
    rt.send_turn("doomed", "@spawn 60\\n@reply spawned")
    print(session.cwd, flush=True)
    # The host dies in the middle of delete_thread: the binding is gone, the worktree not yet.
    Worktrees.remove = lambda self, *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    rt.delete_thread("doomed")
""")


def test_after_a_host_sigkill_mid_delete_open_sweeps_the_worktree_refs_and_processes(tmp_path, repo):
    state = tmp_path / "state"
    host = subprocess.run([sys.executable, "-c", _HOST, str(state), str(repo)], capture_output=True, text=True,
                          timeout=90, cwd=Path(__file__).parents[2])
    assert host.returncode == -signal.SIGKILL, host.stderr
    worktree = host.stdout.split()[0]
    assert Path(worktree).is_dir() and git(repo, "for-each-ref", "refs/paddock/")  # left by the crash
    with Runtime.open(worktree_config(), state_dir=state) as rt:
        assert rt.list_threads() == []
        assert not Path(worktree).exists()
        assert git(repo, "for-each-ref", "refs/paddock/") == ""
        assert "paddock/" not in git(repo, "branch")
        assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    for proc in psutil.process_iter():
        try:
            assert not (proc.cwd() or "").startswith(worktree), proc.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue


def test_a_worktree_removed_by_hand_is_refused_by_name_and_delete_thread_still_cleans_up(rt, repo):
    import shutil

    session = rt.start_session("t", instance="local", cwd=str(repo))
    rt.stop_session("t")
    shutil.rmtree(session.cwd)
    with pytest.raises(ValidationError, match="worktree .* is gone"):
        rt.start_session("t", instance="local", cwd=str(repo))
    rt.delete_thread("t")
    assert git(repo, "for-each-ref", "refs/paddock/") == "" and "paddock/" not in git(repo, "branch")
    again = rt.start_session("t", instance="local", cwd=str(repo))  # the id is free again
    assert Path(again.cwd).is_dir()
