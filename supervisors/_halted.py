"""Whether a spawned process can run at all right now (Linux ``/proc``; elsewhere it never says)."""

from __future__ import annotations

import sys

from ._shim import STOPPED, read_stat

__all__ = ["halted"]

_LINUX = sys.platform.startswith("linux")


def halted(pid: int) -> str | None:
    """Why the process ``pid`` runs nothing now ("stopped (SIGSTOP or SIGTSTP)", "stopped by a
    tracer"), or ``None``. When ``pid`` is an orphan-guard shim, the agent it forked (its
    children) counts too. Thread: any; two or three small ``/proc`` reads."""
    if not _LINUX:
        return None
    stat = read_stat(pid)
    if stat is None:
        return None
    state = STOPPED.get(stat[0])
    if state is not None:
        return state
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            children = f.read().split()
    except OSError:
        return None
    for child in children:
        stat = read_stat(int(child))
        if stat is not None and stat[0] in STOPPED:
            return STOPPED[stat[0]]
    return None
