"""Kernel confinement of a spawned process: what it may touch, as the host hands it to the shim.

A :class:`Confinement` is a set of Landlock rules (``_landlock.py`` applies them in the forked
agent, between fork and exec). It is built by the runtime from an instance (never per driver);
the spawner adds the spawned executable's own installation, read-only. Nothing here decides
*whether* to confine: a request that carries a Confinement is confined or does not start.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import msgspec

from . import _landlock

__all__ = ["Confinement", "landlock_abi", "set_landlock_probe"]


class Confinement(msgspec.Struct, frozen=True, kw_only=True):
    """Landlock rules for one process tree.

    ``read``: read and execute beneath each path. ``write``: every file right beneath each path.
    ``hide``: paths that stay unreachable even beneath a granted path (the state dir, other
    instances' homes, the host's dotfiles, secrets under ``/etc``): the child covers them in a
    private mount namespace, or, where the kernel refuses one, carves them out of the grants
    (``_landlock.hide``). A granted path inside a hidden one stays granted (the instance's home
    in the state dir). ``connect``: ``None`` leaves TCP alone; a tuple allows TCP connect only to
    those ports and bind only to ``bind`` (Landlock ABI 4+). Signals and abstract unix sockets
    are scoped to the process's own tree (ABI 6+). ``never``: paths the spawner must not grant as
    a whole when it adds the executable's installation (the host's home).
    """

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    connect: tuple[int, ...] | None = None
    bind: tuple[int, ...] = ()
    never: tuple[str, ...] = ()

    def widened(self, *, write: tuple[str, ...] = (), bind: tuple[int, ...] = ()) -> Confinement:
        """These rules plus read-write ``write`` paths (a session's cwd) and ``bind`` ports (a
        server the agent must listen on)."""
        if not write and not bind:
            return self
        return msgspec.structs.replace(self, write=(*self.write, *write), bind=(*self.bind, *bind))

    def document(self, executable: str) -> str:
        """The rules document the shim applies (text, one rule a line: ``_landlock.parse``), with
        ``executable``'s installation added
        read-only: its real folder and, when that is a ``bin`` folder, its parent (the prefix
        holding its libraries)."""
        real = os.path.dirname(os.path.realpath(executable))
        extra = [real]
        if os.path.basename(real) == "bin":
            extra.append(os.path.dirname(real))
        granted = [p for p in extra if not any(p == n or _beneath(n, p) for n in (*self.never, *self.hide))]
        lines = [f"r {p}" for p in (*self.read, *granted)] + [f"w {p}" for p in self.write]
        lines += [f"h {p}" for p in self.hide]
        if self.connect is not None:
            lines += ["n", *(f"c {port}" for port in self.connect), *(f"b {port}" for port in self.bind)]
        return "\n".join(line for line in lines if "\n" not in line and "\0" not in line)


def _beneath(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip("/") + "/")


_abi: int | None = None
_abi_lock = threading.Lock()
_probe: Callable[[], int] = _landlock.abi


def landlock_abi() -> int:
    """The kernel's Landlock ABI (0: none), probed once per process (thread: any)."""
    global _abi
    with _abi_lock:
        if _abi is None:
            _abi = _probe() if os.uname().sysname == "Linux" else 0
        return _abi


def set_landlock_probe(probe: Callable[[], int] | None) -> None:
    """Replace the kernel probe (``None``: the real one) and forget the cached answer. A test
    seam: ``set_landlock_probe(lambda: 0)`` simulates a kernel without Landlock."""
    global _abi, _probe
    with _abi_lock:
        _probe = _landlock.abi if probe is None else probe
        _abi = None
