"""Process-tree teardown: snapshot, graceful step, SIGTERM, SIGKILL at the deadline, reap."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable

import msgspec
import psutil

__all__ = ["TeardownReport", "snapshot_tree", "teardown"]

log = logging.getLogger("paddock.supervisors")


class TeardownReport(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`teardown` did. ``survivors`` lists pids still alive after SIGKILL (should be
    empty; non-empty means an unkillable process, e.g. in uninterruptible sleep)."""

    pid: int
    returncode: int | None
    killed: bool
    seconds: float
    past_deadline: float
    snapshot: tuple[int, ...]
    survivors: tuple[int, ...]


def snapshot_tree(pid: int) -> dict[int, psutil.Process]:
    """``pid`` and all its living descendants as psutil handles (identity = pid + create_time)."""
    found: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
        found[pid] = root
        for child in root.children(recursive=True):
            found[child.pid] = child
    except psutil.Error:
        pass
    return found


def _gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _signal_all(procs: Iterable[psutil.Process], pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass
    for proc in procs:
        try:
            # psutil re-checks the birth identity (create_time) before signalling.
            proc.send_signal(sig)
        except psutil.Error:
            pass


def _reap_orphans(procs: Iterable[psutil.Process], root: int) -> None:
    me = os.getpid()
    for proc in procs:
        if proc.pid == root:
            continue
        try:
            if proc.ppid() == me and proc.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(proc.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            pass


def _wait(
    popen: subprocess.Popen | None, root: int, procs: dict[int, psutil.Process], until: float
) -> bool:
    """Wait until every process in ``procs`` is gone or ``until``; return True if all gone."""
    delay = 0.002
    while True:
        if popen is not None:
            popen.poll()
        _reap_orphans(procs.values(), root)
        if all(_gone(p) for p in procs.values()):
            return True
        now = time.monotonic()
        if now >= until:
            return False
        time.sleep(min(delay, until - now))
        delay = min(delay * 2, 0.025)


def teardown(
    process: subprocess.Popen | int,
    *,
    timeout: float,
    graceful: Callable[[], None] | None = None,
    graceful_timeout: float | None = None,
) -> TeardownReport:
    """Stop a process and every descendant; return when all are gone (thread: any caller).

    1. snapshot the whole descendant tree (psutil) before any signal;
    2. run ``graceful`` (the protocol's polite step, e.g. close stdin) and wait up to
       ``graceful_timeout`` (default: half of ``timeout``, at most 1 s) for the root to exit;
    3. SIGTERM the root's process group and every snapshotted process;
    4. at the deadline (``timeout`` seconds after the call) SIGKILL the group, every snapshotted
       process and anything new found under the root, then reap.
    Vanished pids are tolerated; a pid is never signalled without psutil's identity check. The
    root must be the leader of its own process group (``process_group=0``).
    """
    started = time.monotonic()
    deadline = started + max(0.0, timeout)
    popen = process if isinstance(process, subprocess.Popen) else None
    pid = popen.pid if popen is not None else int(process)
    procs = snapshot_tree(pid)
    if popen is not None and popen.poll() is not None:
        procs.pop(pid, None)
    killed = False
    if procs:
        if graceful is not None:
            try:
                graceful()
            except Exception:  # a failed polite step only skips to SIGTERM
                log.debug("graceful step for pid %s failed", pid, exc_info=True)
            grace = min(timeout / 2, 1.0) if graceful_timeout is None else graceful_timeout
            root_only = {pid: procs[pid]} if pid in procs else {}
            _wait(popen, pid, root_only, min(deadline, time.monotonic() + grace))
        procs.update(snapshot_tree(pid))
        _signal_all(procs.values(), pid, signal.SIGTERM)
        if not _wait(popen, pid, procs, deadline):
            procs.update(snapshot_tree(pid))
            _signal_all(procs.values(), pid, signal.SIGKILL)
            killed = True
            _wait(popen, pid, procs, time.monotonic() + 2.0)
    returncode = None
    if popen is not None:
        try:
            returncode = popen.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            returncode = None
    survivors = tuple(p.pid for p in procs.values() if not _gone(p))
    finished = time.monotonic()
    return TeardownReport(
        pid=pid,
        returncode=returncode,
        killed=killed,
        seconds=finished - started,
        past_deadline=max(0.0, finished - deadline),
        snapshot=tuple(sorted(procs)),
        survivors=survivors,
    )
