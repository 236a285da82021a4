"""Per-tree resource limits, as the host hands them to the orphan-guard shim.

A :class:`ResourceLimits` travels to the shim as a one-line document in the child environment
(``_shim.LIMITS_VAR``, popped by the shim before exec: the agent never sees it); the shim holds
the agent's whole tree to it (``_shim._Limits``). :func:`limits_mechanism` says what enforces
them on this host, for ``InstanceInfo`` and ``paddock doctor``.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Annotated, Literal

import msgspec

from ._shim import LIMITS_VAR

__all__ = ["LIMITS_VAR", "LimitsInfo", "ResourceLimits", "describe_limits", "limits_mechanism"]


class ResourceLimits(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An instance's ``limits = { memory_mb = …, cpu_percent = …, processes = … }``; each key
    unset means no bound. ``memory_mb``: the resident memory of the agent's whole tree, in MiB
    (over it the tree is killed). ``cpu_percent``: the tree's CPU share, in percent of one CPU
    (above 100 on several CPUs; over it the tree is throttled, never killed). ``processes``: the
    number of processes in the tree, the agent included (over it the tree is killed)."""

    memory_mb: Annotated[int, msgspec.Meta(ge=16)] | None = None
    cpu_percent: Annotated[int, msgspec.Meta(ge=1, le=10000)] | None = None
    processes: Annotated[int, msgspec.Meta(ge=2)] | None = None

    def document(self) -> str:
        """What the shim reads (``_shim.parse_limits``): ``name=value`` words."""
        return " ".join(f"{name}={getattr(self, name)}" for name in self.__struct_fields__
                        if getattr(self, name) is not None)

    def environment(self) -> dict[str, str]:
        """The variable to add to a child environment so its shim holds the tree to these limits
        (empty without any limit)."""
        return {LIMITS_VAR: self.document()} if self else {}

    def __bool__(self) -> bool:
        return any(getattr(self, name) is not None for name in self.__struct_fields__)


class LimitsInfo(msgspec.Struct, frozen=True, kw_only=True):
    """An instance's resource limits and what holds its agents' trees to them.

    ``mechanism``: ``"tree watch"`` (the orphan-guard shim walks the tree: RSS summed from
    ``/proc/<pid>/statm``, processes counted, CPU throttled by SIGSTOP/SIGCONT) or ``"none"`` (not
    enforced: ``reason`` says why, e.g. not Linux, or placed on Ray). ``cgroup``: whether this
    host could give the tree a cgroup of its own (a sentence; Paddock does not create one yet).
    """

    memory_mb: int | None = None
    cpu_percent: int | None = None
    processes: int | None = None
    mechanism: Literal["tree watch", "none"] = "none"
    reason: str | None = None
    cgroup: str = ""


_cgroup_answer: str | None = None
_cgroup_lock = threading.Lock()


def _cgroup_probe() -> str:
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return "no /proc/self/cgroup"
    v2 = next((line[3:] for line in lines if line.startswith("0::")), None)
    roots = [r for r in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
             if os.path.exists(os.path.join(r, "cgroup.controllers"))]
    if v2 is None or not roots:
        return "no cgroup v2 hierarchy (v1 only)"
    folder = os.path.join(roots[0], v2.lstrip("/"))
    try:
        with open(os.path.join(folder, "cgroup.controllers")) as f:
            controllers = set(f.read().split())
    except OSError:
        return f"cgroup v2 at {roots[0]}: this process's cgroup is unreadable"
    missing = {"memory", "pids", "cpu"} - controllers
    if missing:
        return f"cgroup v2 at {roots[0]} lacks the {', '.join(sorted(missing))} controller(s) (held by cgroup v1)"
    if not os.access(folder, os.W_OK):
        return f"cgroup v2 at {roots[0]}: this process's cgroup is not writable (not delegated)"
    return f"cgroup v2 at {roots[0]} is delegated and could hold the tree"


def limits_mechanism() -> tuple[Literal["tree watch", "none"], str | None, str]:
    """``(mechanism, reason it is "none", cgroup sentence)`` on this host, probed once per process
    (thread: any)."""
    global _cgroup_answer
    with _cgroup_lock:
        if _cgroup_answer is None:
            _cgroup_answer = _cgroup_probe() if sys.platform.startswith("linux") else "not Linux"
    if not sys.platform.startswith("linux"):
        return "none", "resource limits need Linux's /proc (the shim's tree walk)", _cgroup_answer
    return "tree watch", None, _cgroup_answer


def describe_limits(info: LimitsInfo) -> str:
    """One line for ``paddock doctor``: the limits and what enforces them."""
    bounds = [f"{name} = {value}" for name, value in
              (("memory_mb", info.memory_mb), ("cpu_percent", info.cpu_percent), ("processes", info.processes))
              if value is not None]
    if not bounds:
        return "none"
    if info.mechanism == "none":
        return f"{', '.join(bounds)}: NOT enforced: {info.reason or 'unknown'}"
    return f"{', '.join(bounds)}: enforced by the shim's tree watch (cgroup: {info.cgroup})"
