"""Whether a spawned process can run at all right now (Linux ``/proc``; elsewhere it never says)."""

from __future__ import annotations

import sys

from ._shim import HUNG_MARK, LIMIT_MARK, STOPPED, THROTTLE_NAME, comm_of, read_stat

__all__ = ["halted", "hung_reason", "limit_reason"]

_LINUX = sys.platform.startswith("linux")


def halted(pid: int) -> str | None:
    """Why the process ``pid`` runs nothing now ("stopped (SIGSTOP or SIGTSTP)", "stopped by a
    tracer"), or ``None``. When ``pid`` is an orphan-guard shim, the agent it forked (its
    children) counts too, unless the shim's CPU-limit throttle stopped it (for at most 1 s; the
    shim's name says so, ``_shim.THROTTLE_NAME``). Thread: any; a few small ``/proc`` reads."""
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
            if comm_of(pid) == THROTTLE_NAME:
                return None  # its CPU limit's throttle stopped it for a moment: it resumes by itself
            return STOPPED[stat[0]]
    return None


def hung_reason(stderr_tail: str) -> str | None:
    """The line in which an orphan-guard shim said it declared its agent hung and killed it
    (``_shim.HUNG_MARK``: stopped for ``hang_timeout``), from the end of the agent's stderr, or
    ``None``."""
    return _marked(stderr_tail, HUNG_MARK)


def limit_reason(stderr_tail: str) -> str | None:
    """The line in which an orphan-guard shim said it killed its agent's tree for going over a
    resource limit (``_shim.LIMIT_MARK``: the limit, the figure and the process that grew most),
    from the end of the agent's stderr, or ``None``."""
    return _marked(stderr_tail, LIMIT_MARK)


def _marked(stderr_tail: str, mark: str) -> str | None:
    at = stderr_tail.rfind(mark)
    if at < 0:
        return None
    return stderr_tail[at:].split("\n", 1)[0].strip()
