"""Process-tree teardown: snapshot, graceful step, SIGTERM, SIGKILL at the deadline, reap."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable

import msgspec
import psutil

__all__ = ["TeardownReport", "snapshot_tree", "teardown"]

log = logging.getLogger("paddock.supervisors")

# Past the deadline many trees are usually killed at once; they may share one process-table scan.
_BATCH_AGE = 0.05


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


_LINUX = sys.platform.startswith("linux")
_table_lock = threading.Lock()
_table: tuple[float, dict[int, list[int]]] = (-1.0, {})


def _scan_children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        name = entry.name
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split(None, 2)
        children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _children_table(max_age: float) -> dict[int, list[int]]:
    global _table
    with _table_lock:
        taken, table = _table
        now = time.monotonic()
        if now - taken > max_age:
            table = _scan_children()
            _table = (time.monotonic(), table)
        return table


def snapshot_tree(pid: int, *, max_age: float = 0.0) -> dict[int, psutil.Process]:
    """``pid`` and all its descendants as psutil handles (identity = pid + create_time).

    One scan of the process table serves the whole tree; with ``max_age`` > 0 a scan at most
    that old is reused (used when many trees are killed at once past their deadline).
    """
    found: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return found
    found[pid] = root
    if not _LINUX:
        try:
            for child in root.children(recursive=True):
                found[child.pid] = child
        except psutil.Error:
            pass
        return found
    table = _children_table(max_age)
    todo = [pid]
    while todo:
        for child in table.get(todo.pop(), ()):
            if child in found:
                continue
            try:
                found[child] = psutil.Process(child)
            except psutil.Error:
                continue
            todo.append(child)
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
    With ``timeout <= 0`` (a deadline already passed) the SIGTERM step is skipped.
    Vanished pids are tolerated; a pid is never signalled without psutil's identity check. The
    root must be the leader of its own process group (``process_group=0``).
    """
    started = time.monotonic()
    deadline = started + max(0.0, timeout)
    expired = timeout <= 0
    popen = process if isinstance(process, subprocess.Popen) else None
    pid = popen.pid if popen is not None else int(process)
    procs = snapshot_tree(pid, max_age=_BATCH_AGE if expired else 0.0)
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
            if grace > 0 and not expired:
                root_only = {pid: procs[pid]} if pid in procs else {}
                _wait(popen, pid, root_only, min(deadline, time.monotonic() + grace))
                procs.update(snapshot_tree(pid))
        if not expired:
            _signal_all(procs.values(), pid, signal.SIGTERM)
        if expired or not _wait(popen, pid, procs, deadline):
            if not expired:
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
