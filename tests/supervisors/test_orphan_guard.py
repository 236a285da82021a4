"""A host killed with SIGKILL leaves nothing behind: the orphan guard, and the lease sweep when
the guard is off."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import msgspec
import psutil

from paddock.supervisors import Lease, sweep_leases
from tests.helpers import SLEEP, helper


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def start_host(state_dir: Path, guard: bool) -> tuple[subprocess.Popen, list[dict[str, int]]]:
    host = subprocess.Popen(
        [*helper("host", str(state_dir), "1" if guard else "0", "5", "777")],
        stdout=subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "")},
    )
    line = host.stdout.readline()  # type: ignore[union-attr]
    host.stdout.close()  # type: ignore[union-attr]
    assert line, "host did not report its trees"
    return host, json.loads(line)["trees"]


def wait_until_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        alive = [pid for pid in pids if not gone(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


def test_killing_the_host_kills_every_descendant_within_2_s(tmp_path):
    host, trees = start_host(tmp_path, guard=True)
    descendants = [p.pid for p in psutil.Process(host.pid).children(recursive=True)]
    tree_pids = [pid for tree in trees for pid in tree.values()]
    assert len(tree_pids) == 25 and set(tree_pids) <= set(descendants)
    # The double-forked daemons were re-parented to their tree's shim (the subreaper).
    shims = {p.pid for p in psutil.Process(host.pid).children()}
    assert {psutil.Process(tree["daemon"]).ppid() for tree in trees} == shims
    host.kill()
    host.wait()
    survivors = wait_until_gone(descendants, 2.0)
    assert survivors == [], [psutil.Process(p).cmdline() for p in survivors if not gone(p)]


def test_with_the_guard_off_the_next_sweep_kills_leftovers_and_spares_a_reused_pid(tmp_path):
    host, trees = start_host(tmp_path, guard=False)
    tree_pids = [pid for tree in trees for pid in tree.values()]
    host.kill()
    host.wait()
    bystander = subprocess.Popen([SLEEP, "888"])
    try:
        leases = sorted((tmp_path / "leases").glob("*.json"))
        assert len(leases) == 5
        template = msgspec.json.decode(leases[0].read_bytes(), type=Lease)
        # A lease whose pid now belongs to an unrelated process (create_time does not match).
        reused = msgspec.structs.replace(
            template, pid=bystander.pid, pgid=bystander.pid, create_time=template.create_time - 1000
        )
        (tmp_path / "leases" / f"{template.host_pid}-{bystander.pid}.json").write_bytes(
            msgspec.json.encode(reused)
        )
        # An absence cannot be awaited: with a guard the trees would be gone within milliseconds
        # of the host's death, so 0.2 s is ample for this check to fail if one were active.
        time.sleep(0.2)
        assert not any(gone(pid) for pid in tree_pids)  # nothing cleaned up without the guard

        report = sweep_leases(tmp_path)

        assert sorted(report.killed) == sorted(tree["root"] for tree in trees)
        assert report.spared == (bystander.pid,)
        assert wait_until_gone(tree_pids, 2.0) == []
        assert bystander.poll() is None and not gone(bystander.pid)
        assert list((tmp_path / "leases").glob("*.json")) == []
    finally:
        bystander.send_signal(signal.SIGKILL)
        bystander.wait()


def test_sweep_leaves_leases_of_a_live_host_alone(tmp_path):
    sleeper = subprocess.Popen([SLEEP, "777"])
    try:
        me = psutil.Process()
        lease = Lease(
            pid=sleeper.pid,
            create_time=psutil.Process(sleeper.pid).create_time(),
            pgid=sleeper.pid,
            owner="x",
            argv_hash="0",
            host_pid=me.pid,
            host_create_time=me.create_time(),
        )
        (tmp_path / "leases").mkdir()
        (tmp_path / "leases" / "a.json").write_bytes(msgspec.json.encode(lease))
        report = sweep_leases(tmp_path)
        assert report.live_host == (sleeper.pid,) and report.killed == ()
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()
