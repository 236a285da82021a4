"""Process leases: a record of every spawned process, so a crashed host's leftovers can be swept.

A lease is one small JSON file ``<state_dir>/leases/<host pid>-<pid>.json`` (0600, in a 0700
directory) written right after the spawn and removed when the process has been reaped. It holds the
birth identity of the process (pid + create_time) and of its host. :func:`sweep_leases` runs at
start-up; it never kills by name or pattern and never signals a recorded pid without first
checking, freshly, that the process living under that pid is the one that was recorded.

A lease also covers what the orphan-guard shim adopted: the shim keeps ``<host pid>-<pid>.tree``
beside the lease, one ``pid starttime`` line per descendant (``_shim.py``). Should the shim itself
be SIGKILLed, its descendants are re-parented out of the tree (to init or another subreaper) and
no walk from the leased pid finds them; :meth:`LeaseStore.reap_adopted` (right after the host
reaped the shim) and the sweep kill each one whose starttime still matches.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import psutil

if TYPE_CHECKING:
    from ._teardown import _Proc

__all__ = ["Lease", "LeaseStore", "SweepReport", "argv_hash", "sweep_leases"]

log = logging.getLogger("paddock.supervisors")


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """One spawned process. ``create_time`` values are psutil's (seconds since the epoch)."""

    pid: int
    create_time: float
    pgid: int
    owner: str
    argv_hash: str
    host_pid: int
    host_create_time: float


class SweepReport(msgspec.Struct, frozen=True, kw_only=True):
    """``killed``: leased pids whose identity matched and were killed with their tree;
    ``spared``: leased pids now used by another process (identity mismatch), left alone;
    ``live_host``: leases kept because their host is still running."""

    killed: tuple[int, ...] = ()
    spared: tuple[int, ...] = ()
    live_host: tuple[int, ...] = ()


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Lease)


def argv_hash(argv: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]


def _create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _same(pid: int, create_time: float) -> psutil.Process | None:
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE:
            return proc
    except psutil.Error:
        pass
    return None


class LeaseStore:
    """Writes and removes this host's leases under ``state_dir`` (thread-safe: one file each)."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.directory = Path(state_dir) / "leases"
        self._host_pid = os.getpid()
        self._host_create_time = _create_time(self._host_pid) or 0.0
        self._remembered: dict[int, _Proc] = {}
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError:
            pass  # record() reports it

    def _path(self, pid: int) -> Path:
        return self.directory / f"{self._host_pid}-{pid}.json"

    def reap_adopted(self, pid: int) -> int:
        """Wait until the shim ``pid`` (a child of this process) has exited, without reaping it,
        then kill what it adopted and left behind; reap it afterwards, then :meth:`release`.
        Returns how many processes of its tree file were killed (each only while its starttime
        still matches). Thread: any (it blocks).

        The shim's process group (its pgid is its pid) goes first: a descendant born after the
        shim last wrote its tree file (its report period is up to 1 s) is not in the file, but
        is in the group unless it called ``setsid``. The shim's zombie still holds the pid, so
        the group id names no one else."""
        _wait_unreaped(pid)
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass  # the group is empty (the shim ended its tree itself), or not ours
        return _kill_recorded(_tree_path(self._path(pid)))

    def record(self, pid: int, argv: Sequence[str], owner: str) -> Lease | None:
        """Record the process ``pid`` (just spawned, its own group leader). Returns None if it
        already vanished."""
        created = _create_time(pid)
        if created is None:
            return None
        lease = Lease(
            pid=pid,
            create_time=created,
            pgid=pid,
            owner=owner,
            argv_hash=argv_hash(argv),
            host_pid=self._host_pid,
            host_create_time=self._host_create_time,
        )
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._path(pid)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, _encoder.encode(lease))
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return lease

    def _alive(self) -> list[Lease]:
        """This host's leases whose process still lives (identity checked)."""
        from ._shim import LINUX

        alive: list[Lease] = []
        for path in sorted(self.directory.glob(f"{self._host_pid}-*.json")):
            try:
                lease = _decoder.decode(path.read_bytes())
            except (OSError, msgspec.DecodeError):
                continue
            if LINUX and not os.path.exists(f"/proc/{lease.pid}"):
                continue  # gone already: no psutil round trip
            if _same(lease.pid, lease.create_time) is not None:
                alive.append(lease)
        return alive

    def remember(self) -> int:
        """Note every live process the leases cover now (:meth:`recorded`): :meth:`kill_all`
        kills these too, even once re-parented out of every leased tree. Returns how many."""
        self._remembered.update(self.recorded())
        return len(self._remembered)

    def recorded(self) -> dict[int, _Proc]:
        """Every live process this host's leases cover, by birth identity: each leased process,
        its descendants (through the ``/proc`` children files: cost the trees' sizes, not the
        process table's) and what each shim recorded in its tree file (adopted processes that
        were re-parented away). Linux; elsewhere the leased processes and their psutil
        descendants. Thread: any."""
        return self._recorded(self._alive())

    def _recorded(self, alive: list[Lease]) -> dict[int, _Proc]:
        from ._shim import LINUX, tree_of
        from ._teardown import _Proc, _snapshot

        found: dict[int, _Proc] = {}
        for lease in alive:
            if not LINUX:
                found.update(_snapshot(lease.pid, 0.25))
                continue
            try:
                found[lease.pid] = _Proc(lease.pid)
            except psutil.Error:
                continue
            for pid, start in tree_of(lease.pid):
                found[pid] = _Proc(pid, start)
        for path in self.directory.glob(f"{self._host_pid}-*.tree"):
            for proc in _read_tree(path):
                found.setdefault(proc.pid, proc)
        return found

    def kill_all(self, *, until: float | None = None) -> tuple[int, ...]:
        """SIGKILL every process this host holds a lease for, with its tree and what its shim
        adopted, plus what :meth:`remember` noted, all at once, each after a fresh
        identity check: the last resort of a closing runtime (thread: any).

        With ``until`` (a ``time.monotonic()`` value) it then confirms: it waits until every one
        is gone (a zombie counts as gone), scanning
        the leases again for processes spawned meanwhile and killing those too, and returns by
        ``until`` the pids still alive (empty: nothing survived). Without it, it returns at once
        after the signals with the pids it signalled."""
        procs = list(self._remembered.values())
        while True:
            alive = self._alive()
            for pid, proc in self._recorded(alive).items():
                if pid not in self._remembered:
                    self._remembered[pid] = proc
                    procs.append(proc)
            for lease in alive:  # verified alive: the group is ours
                try:
                    os.killpg(lease.pgid, signal.SIGKILL)
                except OSError:
                    pass
            for proc in procs:
                proc.signal(signal.SIGKILL)  # re-checks the identity first
            if until is None:
                return tuple(p.pid for p in procs)
            # Wait until they are gone; each pass reads only until the first one still alive
            # (under load every /proc read may wait for the GIL).
            settle = min(until, time.monotonic() + 0.5)
            time.sleep(0.005)
            while procs:
                if procs[-1].gone():  # a zombie is gone: its parent reaps it
                    procs.pop()
                    continue
                now = time.monotonic()
                if now >= settle:
                    break
                time.sleep(min(0.01, settle - now))
            if time.monotonic() >= until:
                return tuple(sorted(p.pid for p in procs if not p.gone()))
            if not procs and not self._alive():
                return ()

    def release(self, pid: int) -> None:
        """Forget the lease of ``pid`` and its tree file (after it has been reaped)."""
        path = self._path(pid)
        for name in (path, _tree_path(path)):
            try:
                name.unlink()
            except FileNotFoundError:
                pass


def _wait_unreaped(pid: int) -> None:
    """Block until the child ``pid`` has exited, without reaping it (its zombie keeps the pid and
    the group id from being reused). Returns at once if it was reaped already."""
    while True:
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            return
        except InterruptedError:
            continue
        except ChildProcessError:
            return


def _tree_path(lease_path: Path) -> Path:
    return lease_path.with_suffix(".tree")


def _read_tree(tree: Path) -> list[_Proc]:
    """The live processes a shim's tree file lists (``pid starttime`` lines), by identity."""
    try:
        lines = tree.read_bytes().splitlines()
    except OSError:
        return []
    from ._teardown import _Proc

    procs = []
    for line in lines:
        try:
            pid_text, start = line.split()
            proc = _Proc(int(pid_text), start)
        except (ValueError, psutil.Error):
            continue
        if not proc.gone():
            procs.append(proc)
    return procs


def _kill_recorded(tree: Path) -> int:
    """SIGKILL each ``pid starttime`` of ``tree`` whose starttime still matches, then wait (at
    most 2 s) until they are gone. Linux only (elsewhere the shim writes no tree file)."""
    procs = _read_tree(tree)
    killed = len(procs)
    for proc in procs:
        proc.signal(signal.SIGKILL)  # re-checks the starttime right before the signal
    me = os.getpid()
    deadline = time.monotonic() + 2.0
    while procs and time.monotonic() < deadline:
        for proc in procs:
            if proc.zombie_child_of(me):  # re-parented to this host (a subreaper)
                try:
                    os.waitpid(proc.pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        procs = [p for p in procs if not p.gone()]
        if procs:
            time.sleep(0.005)
    return killed


def _kill_tree(root: psutil.Process, lease: Lease) -> None:
    procs = [root]
    try:
        procs += root.children(recursive=True)
    except psutil.Error:
        pass
    # The group is signalled only through its verified leader (pgid == leased pid).
    try:
        if root.is_running() and os.getpgid(root.pid) == lease.pgid == lease.pid:
            os.killpg(lease.pgid, signal.SIGKILL)
    except OSError:
        pass
    for proc in procs:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    me = os.getpid()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        alive = []
        for proc in procs:
            try:
                if proc.ppid() == me:
                    os.waitpid(proc.pid, os.WNOHANG)
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except (psutil.Error, ChildProcessError):
                pass
        if not alive:
            return
        time.sleep(0.01)


def sweep_leases(state_dir: str | os.PathLike[str]) -> SweepReport:
    """Kill the leftovers of dead hosts recorded under ``state_dir`` (thread: caller; start-up).

    For each lease whose host is no longer running (host pid + create_time no longer match), the
    leased pid is looked up afresh: only if its create_time still matches is it killed, with its
    descendants and its process group. Leases of dead hosts are deleted either way; leases of
    hosts still running (another runtime on the same state dir) are left untouched.
    """
    directory = Path(state_dir) / "leases"
    killed: list[int] = []
    spared: list[int] = []
    live: list[int] = []
    if not directory.is_dir():
        return SweepReport()
    for path in sorted(directory.glob("*.json")):
        try:
            lease = _decoder.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError):
            log.warning("ignoring unreadable lease %s", path)
            continue
        if _same(lease.host_pid, lease.host_create_time) is not None:
            live.append(lease.pid)
            continue
        proc = _same(lease.pid, lease.create_time)
        if proc is None:
            spared.append(lease.pid)
        else:
            _kill_tree(proc, lease)
            killed.append(lease.pid)
        _kill_recorded(_tree_path(path))  # what the shim adopted, by recorded identity
        for name in (path, _tree_path(path)):
            try:
                name.unlink()
            except FileNotFoundError:
                pass
    return SweepReport(killed=tuple(killed), spared=tuple(spared), live_host=tuple(live))
