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

from ._shim import children_table, read_stat

__all__ = ["TeardownReport", "kill_tree", "snapshot_tree", "teardown"]

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


class _Proc:
    """A process by birth identity: pid + start time (Linux: the raw /proc starttime field;
    elsewhere psutil's create_time). Signals are sent only after a fresh identity check."""

    __slots__ = ("_ps", "ident", "pid")

    def __init__(self, pid: int, ident: bytes | None = None) -> None:
        self.pid = pid
        self._ps: psutil.Process | None = None
        if _LINUX:
            if ident is None:
                stat = read_stat(pid)
                if stat is None:
                    raise psutil.NoSuchProcess(pid)
                ident = stat[2]
            self.ident = ident
        else:
            self._ps = psutil.Process(pid)
            self.ident = b""

    def _stat(self) -> tuple[bytes, int, bytes] | None:
        stat = read_stat(self.pid)
        return stat if stat is not None and stat[2] == self.ident else None

    def gone(self) -> bool:
        if self._ps is not None:
            try:
                return not self._ps.is_running() or self._ps.status() == psutil.STATUS_ZOMBIE
            except psutil.Error:
                return True
        stat = self._stat()
        return stat is None or stat[0] in (b"Z", b"X")

    def zombie_child_of(self, parent: int) -> bool:
        if self._ps is not None:
            try:
                return self._ps.ppid() == parent and self._ps.status() == psutil.STATUS_ZOMBIE
            except psutil.Error:
                return False
        stat = self._stat()
        return stat is not None and stat[0] == b"Z" and stat[1] == parent

    def signal(self, sig: int) -> None:
        if self._ps is not None:
            try:
                self._ps.send_signal(sig)
            except psutil.Error:
                pass
            return
        stat = self._stat()
        if stat is not None and stat[0] not in (b"Z", b"X"):
            try:
                os.kill(self.pid, sig)
            except OSError:
                pass


def _children_table(max_age: float) -> dict[int, list[int]]:
    global _table
    with _table_lock:
        taken, table = _table
        if time.monotonic() - taken > max_age:
            table = children_table(zombies=True)
            _table = (time.monotonic(), table)
        return table


def _snapshot(pid: int, max_age: float = 0.0) -> dict[int, _Proc]:
    found: dict[int, _Proc] = {}
    try:
        found[pid] = _Proc(pid)
    except psutil.Error:
        return found
    if not _LINUX:
        try:
            for child in psutil.Process(pid).children(recursive=True):
                found[child.pid] = _Proc(child.pid)
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
                found[child] = _Proc(child)
            except psutil.Error:
                continue
            todo.append(child)
    return found


def snapshot_tree(pid: int, *, max_age: float = 0.0) -> dict[int, psutil.Process]:
    """``pid`` and all its descendants as psutil handles (identity = pid + create_time).

    One scan of the process table serves the whole tree; with ``max_age`` > 0 a scan at most
    that old is reused (used when many trees are killed at once past their deadline).
    """
    found: dict[int, psutil.Process] = {}
    for child in _snapshot(pid, max_age):
        try:
            found[child] = psutil.Process(child)
        except psutil.Error:
            pass
    return found


def kill_tree(pid: int, *, max_age: float = 0.0) -> int:
    """SIGKILL ``pid``'s process group and every descendant at once, without waiting (thread:
    any). Returns how many processes were signalled. ``max_age`` as for :func:`snapshot_tree`."""
    procs = _snapshot(pid, max_age)
    _signal_all(procs.values(), pid, signal.SIGKILL)
    return len(procs)


def _signal_all(procs: Iterable[_Proc], pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass
    for proc in procs:
        proc.signal(sig)


def _reap_orphans(procs: Iterable[_Proc], root: int) -> None:
    # Orphans re-parented to this process (when it is a subreaper) are ours to reap.
    me = os.getpid()
    for proc in procs:
        if proc.pid != root and proc.zombie_child_of(me):
            try:
                os.waitpid(proc.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _wait(popen: subprocess.Popen | None, root: int, procs: dict[int, _Proc], until: float) -> bool:
    """Wait until every process in ``procs`` is gone or ``until``; return True if all gone."""
    delay = 0.002
    while True:
        if popen is not None:
            popen.poll()
        _reap_orphans(procs.values(), root)
        if all(p.gone() for p in procs.values()):
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
    popen: subprocess.Popen | None
    if isinstance(process, subprocess.Popen):
        popen, pid = process, process.pid
    else:
        popen, pid = None, int(process)
    procs = _snapshot(pid, _BATCH_AGE if expired else 0.0)
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
                procs.update(_snapshot(pid))
        if not expired:
            _signal_all(procs.values(), pid, signal.SIGTERM)
        if expired or not _wait(popen, pid, procs, deadline):
            if not expired:
                procs.update(_snapshot(pid))
            _signal_all(procs.values(), pid, signal.SIGKILL)
            killed = True
            _wait(popen, pid, procs, time.monotonic() + 2.0)
    returncode = None
    if popen is not None:
        try:
            returncode = popen.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            returncode = None
    survivors = tuple(p.pid for p in procs.values() if not p.gone())
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
