"""Fixtures for workspace tests: a real git repository, runtimes whose instance runs threads in
worktrees, and readers of a folder's exact contents."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from paddock import Runtime

GIT_ENV = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(cwd: Path, *args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, timeout=30)
    if check and out.returncode:
        raise AssertionError(f"git {' '.join(args)}: {out.stderr}")
    return out.stdout


def make_repo(folder: Path, files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "hello\n", ".gitignore": "*.log\nbuild/\n"}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "init")
    return folder


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo")


def worktree_config(**runtime: object) -> dict:
    config: dict = {"instances": {"local": {"driver": "local", "workspace": "worktree"}}}
    if runtime:
        config["runtime"] = runtime
    return config


@pytest.fixture
def rt(tmp_path):
    runtime = Runtime.open(worktree_config(), state_dir=tmp_path / "state")
    yield runtime
    runtime.close()


def contents(folder: str | Path) -> dict[str, bytes]:
    """Every file under ``folder`` (but ``.git``) -> its bytes: what "byte for byte" compares."""
    root = Path(folder)
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or not path.is_file():
            continue
        out[str(rel)] = path.read_bytes()
    return out


def write_turn(rt, thread_id: str, writes: dict[str, str], *, timeout: float = 30.0):
    """One turn of the local agent writing ``writes`` (path relative to the session's cwd -> text);
    waits for its turn.completed and the runtime's turn.diff.updated, and returns the latter."""
    cwd = next(s.cwd for s in rt.list_sessions() if s.thread_id == thread_id)
    prompt = "\n".join(f"@write {cwd}/{name} {text}" for name, text in writes.items()) + "\n@reply done"
    with rt.subscribe(thread_id=thread_id, types=("turn.completed", "turn.diff.updated", "runtime.warning")) as sub:
        turn = rt.send_turn(thread_id, prompt)
        completed = None
        while True:
            event = sub.get(timeout=timeout)
            assert event is not None, "no turn.diff.updated from the checkpoint"
            assert event.type != "runtime.warning" or not event.code.startswith("workspace."), event.message
            if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                completed = event
            if event.type == "turn.diff.updated" and event.turn_id == turn.turn_id and event.checkpoint:
                assert completed is not None and completed.state == "completed"
                return event
