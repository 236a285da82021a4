"""``fs/read_text_file`` and ``fs/write_text_file``, confined to a session's workspace roots.

A path is served only if its fully resolved form lies inside one of the (resolved) roots and it
names a regular file. The check is not check-then-open: after resolving, the path is opened one
component at a time below the root's directory descriptor with ``O_NOFOLLOW``, so a component
swapped for a symlink after the check fails instead of escaping; the final file is opened with
``O_NONBLOCK`` (a FIFO cannot hang us) and must ``fstat`` as a regular file. ``/proc``, ``/sys``
and ``/dev`` are refused even when a root contains them. Refusals raise :class:`FsError` carrying
the JSON-RPC error to answer with.

Hardlinks: ``realpath`` cannot see them, so a regular file with more than one link is served (read
or written) only when all of its links are found inside the same root: the root is walked (not
following symlinks, at most :data:`MAX_LINK_SCAN` entries) for names of the same inode. A file
with a link elsewhere (or one the walk cannot account for) is refused.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence

from paddock.actors import INTERNAL_ERROR, INVALID_PARAMS

__all__ = ["FsError", "MAX_READ_BYTES", "RESOURCE_NOT_FOUND", "read_text_file", "write_text_file"]

MAX_READ_BYTES = 16 * 1024 * 1024
RESOURCE_NOT_FOUND = -32002  # ACP's "Resource not found" (not a JSON-RPC 2.0 code)
_FORBIDDEN_TREES = ("/proc", "/sys", "/dev")
MAX_LINK_SCAN = 50_000


class FsError(Exception):
    """A refused or failed file request; ``code`` and ``message`` form the JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _denied(path: str, why: str) -> FsError:
    return FsError(INVALID_PARAMS, f"Access denied: {path!r} {why}")


def _locate(roots: Sequence[str], cwd: str, path: str) -> tuple[str, list[str]]:
    """Return (resolved root, components below it) for ``path``; raise FsError if outside."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise _denied(str(path), "is not a valid path")
    joined = path if os.path.isabs(path) else os.path.join(cwd, path)
    resolved = os.path.realpath(joined)
    for tree in _FORBIDDEN_TREES:
        if resolved == tree or resolved.startswith(tree + "/"):
            raise _denied(path, "is a system file")
    for root in roots:
        real_root = os.path.realpath(root)
        if resolved == real_root:
            raise _denied(path, "is a directory")
        prefix = real_root.rstrip("/") + "/"
        if resolved.startswith(prefix):
            return real_root, resolved[len(prefix):].split("/")
    raise _denied(path, "is outside the session's workspace roots")


def _open_below(root: str, parts: list[str], flags: int, *, create_dirs: bool, path: str, mode: int = 0o644) -> int:
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except FileNotFoundError:
                if not create_dirs:
                    raise
                os.mkdir(part, 0o755, dir_fd=dir_fd)
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _links_inside(root: str, st: os.stat_result) -> bool:
    """Whether every one of the ``st_nlink`` names of the file ``st`` lies below ``root``."""
    found = 0
    seen = 0
    for folder, dirs, files in os.walk(root):
        for name in files:
            seen += 1
            if seen > MAX_LINK_SCAN:
                return False
            try:
                other = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if other.st_ino == st.st_ino and other.st_dev == st.st_dev:
                found += 1
                if found >= st.st_nlink:
                    return True
        seen += len(dirs)
    return False


def _check_links(root: str, fd: int, path: str) -> os.stat_result:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise _denied(path, "is not a regular file")
    if st.st_nlink > 1 and not _links_inside(root, st):
        raise _denied(path, "is a hardlink to a file outside the session's workspace roots")
    return st


def _map_os_error(exc: OSError, path: str) -> FsError:
    if exc.errno == errno.ENOENT:
        return FsError(RESOURCE_NOT_FOUND, f"Resource not found: {path}")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return _denied(path, "changed into a symlink or non-directory while being opened")
    if exc.errno in (errno.ENXIO, errno.EISDIR):
        return _denied(path, "is not a regular file")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return _denied(path, "is not accessible")
    return FsError(INTERNAL_ERROR, f"Could not access {path!r}: {exc.strerror or exc}")


def read_text_file(
    roots: Sequence[str], cwd: str, path: str, line: int | None = None, limit: int | None = None
) -> str:
    """Read a UTF-8 text file inside ``roots`` (undecodable bytes replaced). ``line`` is the
    1-based first line, ``limit`` the number of lines. Missing file: -32002 "Resource not found"."""
    root, parts = _locate(roots, cwd, path)
    try:
        fd = _open_below(root, parts, os.O_RDONLY, create_dirs=False, path=path)
    except OSError as exc:
        raise _map_os_error(exc, path) from None
    try:
        st = _check_links(root, fd, path)
        if st.st_size > MAX_READ_BYTES:
            raise FsError(INVALID_PARAMS, f"File too large: {path!r} has {st.st_size} bytes (limit {MAX_READ_BYTES})")
        chunks = []
        remaining = MAX_READ_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        if remaining <= 0:
            raise FsError(INVALID_PARAMS, f"File too large: {path!r} (limit {MAX_READ_BYTES} bytes)")
    finally:
        os.close(fd)
    text = b"".join(chunks).decode("utf-8", "replace")
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = len(lines) if limit is None else start + max(limit, 0)
    return "".join(lines[start:end])


def write_text_file(roots: Sequence[str], cwd: str, path: str, content: str) -> None:
    """Write ``content`` (UTF-8) to a file inside ``roots``, creating missing parent directories
    inside the root. An existing path must be a regular file (not a FIFO, device or symlink)."""
    root, parts = _locate(roots, cwd, path)
    try:
        fd = _open_below(root, parts, os.O_WRONLY | os.O_CREAT, create_dirs=True, path=path)
    except OSError as exc:
        raise _map_os_error(exc, path) from None
    try:
        _check_links(root, fd, path)
        data = content.encode("utf-8")
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as exc:
        raise _map_os_error(exc, path) from None
    finally:
        os.close(fd)
