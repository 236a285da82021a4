"""Process-tree teardown with real trees: SIGTERM-ignoring child, two levels of grandchildren,
one of which ignores SIGTERM and escaped with setsid."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import psutil

from paddock.actors import ProcessActor, ProcessSpec
from paddock.supervisors import ChildSpec, Scope, SpawnRequest, spawn, teardown
from tests.helpers import helper

ROLES = {"root", "mid", "stubborn", "plain"}


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def read_tree(lines: list[bytes]) -> dict[str, int]:
    return {d["role"]: d["pid"] for d in map(json.loads, lines)}


class Ready:
    def __init__(self, count: int) -> None:
        self.count = count
        self.lines: list[bytes] = []
        self.cond = threading.Condition()

    def __call__(self, lines: list[bytes]) -> None:
        with self.cond:
            self.lines += lines
            self.cond.notify_all()

    def wait(self) -> dict[str, int]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.lines) >= self.count, 10.0), self.lines
        return read_tree(self.lines)


def test_scope_close_kills_the_whole_stubborn_tree_by_the_deadline():
    # Root ignores SIGTERM; grandchildren: one setsid + ignores SIGTERM, one double-forked daemon.
    ready = Ready(5)

    def start(ctx):
        spec = ProcessSpec(argv=helper("tree", "root", "daemon"), name="tree", graceful_timeout=0.1)
        return ProcessActor.open(spec, on_lines=ready, context=ctx).actor_ref

    scope = Scope([ChildSpec("tree", start, shutdown=1.0)]).start()
    pids = ready.wait()
    assert set(pids) == ROLES | {"daemon"}
    assert psutil.Process(pids["stubborn"]).as_dict(["pid"])  # alive before the close
    deadline = time.monotonic() + 1.0
    scope.close(deadline)
    past = time.monotonic() - deadline
    assert all(gone(pid) for pid in pids.values()), {r: gone(p) for r, p in pids.items()}
    assert past <= 0.5, f"teardown finished {past:.3f} s after the deadline"


def test_teardown_without_the_shim_still_finds_the_setsid_grandchild():
    proc = spawn(
        SpawnRequest(helper("tree", "root"), env={}, orphan_guard=False, stdin=subprocess.DEVNULL)
    )
    try:
        lines: list[bytes] = []
        while len(lines) < 4:
            lines.append(proc.stdout.readline().rstrip(b"\n"))  # type: ignore[union-attr]
        pids = read_tree(lines)
        assert psutil.Process(pids["stubborn"]).ppid() == pids["mid"]
        report = teardown(proc, timeout=0.5, graceful=None)
    finally:
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert report.killed and report.survivors == ()
    assert report.returncode == -9
    assert set(pids.values()) <= set(report.snapshot)
    assert all(gone(pid) for pid in pids.values())
    assert report.past_deadline <= 0.5


def test_graceful_step_lets_a_cooperative_child_exit_cleanly():
    handle = ProcessActor.open(ProcessSpec(argv=helper("lines"), shutdown_timeout=5.0), on_lines=print)
    started = time.monotonic()
    handle.terminate()
    info = handle.exit_info
    assert info is not None and info.returncode == 0 and info.requested
    assert time.monotonic() - started < 5.0  # it never reached SIGKILL


def test_teardown_of_a_process_that_already_exited_is_a_no_op():
    proc = spawn(SpawnRequest(helper("die_at_start"), env={}, stdin=subprocess.DEVNULL))
    proc.wait(10)
    report = teardown(proc, timeout=1.0)
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert report.returncode == 2 and not report.killed and report.survivors == ()
