"""The state directory: one owner at a time, private to the user.

A runtime owns its state directory from :meth:`StateDirLock.acquire` (in ``Runtime.open``, before
the binding store or the event log is opened) until :meth:`StateDirLock.release` (the end of
``Runtime.close``). Ownership is an OS lock, ``fcntl.flock`` on ``<state_dir>/lock``: the kernel
drops it when the owning process dies, SIGKILL included, so a crashed host never leaves a stale
lock behind. The file also holds the owner's pid, which a refused opener names in its error.
Readers (``paddock events``, another process's ``LogReader``) never take the lock.

Everything in the state directory is private: directories 0700, files 0600, whatever the umask
(``instances/<id>/`` is an agent's HOME, where CLIs keep credentials; the databases hold prompts,
outputs and stderr). :func:`tighten` brings a directory made by an older version in line.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from paddock.contract import StateDirLockedError

__all__ = ["DIR_MODE", "FILE_MODE", "StateDirLock", "private_dir", "private_file", "tighten"]

DIR_MODE = 0o700
FILE_MODE = 0o600
LOCK_NAME = "lock"
_DATABASES = ("paddock.db", "events.db")
_SQLITE_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make ``path`` itself 0700; returns it."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    _chmod(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty if missing, 0600 either way (SQLite gives its ``-wal``/``-shm``
    files the mode of the database file, so creating the database this way covers them)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def _chmod(path: Path, mode: int) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        return  # never follow a link out of the state dir
    if stat.S_IMODE(st.st_mode) & ~mode:
        os.chmod(path, stat.S_IMODE(st.st_mode) & mode)


def tighten(state_dir: Path) -> None:
    """Make an existing state directory private: the directory, ``leases/``, each
    ``instances/<id>/``, the two databases and their SQLite side files (group and other bits
    removed; nothing is loosened)."""
    _chmod(state_dir, DIR_MODE)
    for name in ("leases", "instances"):
        _chmod(state_dir / name, DIR_MODE)
    instances = state_dir / "instances"
    if instances.is_dir() and not instances.is_symlink():
        for home in instances.iterdir():
            if home.is_dir() and not home.is_symlink():
                _chmod(home, DIR_MODE)
                _chmod(home / "tmp", DIR_MODE)
    leases = state_dir / "leases"
    if leases.is_dir() and not leases.is_symlink():
        for lease in leases.iterdir():
            _chmod(lease, FILE_MODE)
    for db in _DATABASES:
        for suffix in _SQLITE_SIDE_FILES:
            _chmod(state_dir / f"{db}{suffix}", FILE_MODE)
    _chmod(state_dir / LOCK_NAME, FILE_MODE)


class StateDirLock:
    """The exclusive owner lock of one state directory (thread: the runtime's opener/closer)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = state_dir / LOCK_NAME
        self._fd: int | None = None

    @classmethod
    def acquire(cls, state_dir: Path) -> StateDirLock:
        """Take the lock without waiting; raise :class:`StateDirLockedError` naming the state
        dir and the owner's pid when another runtime (in this process or another) holds it."""
        lock = cls(state_dir)
        # O_CLOEXEC: an agent must never inherit (and so prolong) the host's ownership.
        fd = os.open(lock.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StateDirLockedError(str(state_dir), _read_pid(fd)) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        lock._fd = fd
        return lock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give ownership up (idempotent). The file stays; its content is only a hint."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            os.close(fd)  # closing the last descriptor of the open file drops the flock


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
