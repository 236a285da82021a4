"""What the agent processes of each instance cost the machine: CPU seconds and peak RSS, read from
this host's process leases (``<state_dir>/leases/<host pid>-<pid>.json``, whose ``owner`` is the
instance id) and psutil.

A sample walks each leased process and its live descendants: a tree's CPU is the root's user and
system time, the time of the children it reaped, and each live descendant's own; its RSS is the sum
of theirs. CPU is booked per instance as the growth of each tree since the last sample (a tree
that ends between two samples loses only its last interval); RSS as the highest tree sum seen.
Runs on the caller's thread (the usage reader's); cost: the leased trees' size.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgspec
import psutil

__all__ = ["ProcessMeter"]


class _Lease(msgspec.Struct):
    pid: int
    create_time: float
    owner: str


_decode = msgspec.json.Decoder(_Lease).decode


class ProcessMeter:
    """See the module docstring. :meth:`sample` returns, per instance id, the CPU seconds its
    trees used since the previous sample and their RSS now (bytes)."""

    def __init__(self, state_dir: Path) -> None:
        self._leases = state_dir / "leases"
        self._prefix = f"{os.getpid()}-"
        self._last: dict[tuple[int, float], float] = {}  # (pid, create time) -> tree CPU seen

    def sample(self) -> dict[str, tuple[float, int]]:
        out: dict[str, tuple[float, int]] = {}
        seen: set[tuple[int, float]] = set()
        for key, owner, cpu, rss in self._walk():
            seen.add(key)
            grew = max(0.0, cpu - self._last.get(key, 0.0))
            self._last[key] = max(cpu, self._last.get(key, 0.0))
            before = out.get(owner, (0.0, 0))
            out[owner] = (before[0] + grew, before[1] + rss)
        for gone in set(self._last) - seen:
            del self._last[gone]
        return out

    def rss(self) -> int:
        """The RSS of every leased tree now, summed (bytes). It books no CPU, so any thread may
        call it (admission's ``[runtime] memory_mb``)."""
        return sum(rss for _, _, _, rss in self._walk())

    def _walk(self) -> Iterator[tuple[tuple[int, float], str, float, int]]:
        """Each leased tree still alive: its (pid, create time), owner, CPU seconds and RSS. The
        process table is read once per walk (a parent -> children map), not once per tree: with a
        hundred instances, psutil's ``children(recursive=True)`` per lease re-read all of /proc a
        hundred times."""
        try:
            names = [n for n in os.listdir(self._leases) if n.startswith(self._prefix) and n.endswith(".json")]
        except OSError:
            return
        if not names:
            return
        kids: dict[int, list[int]] | None = None
        for name in names:
            try:
                lease = _decode((self._leases / name).read_bytes())
                root = psutil.Process(lease.pid)
                if abs(root.create_time() - lease.create_time) >= 0.01:
                    continue  # the pid names another process now
                with root.oneshot():
                    t = root.cpu_times()
                    cpu = t.user + t.system + t.children_user + t.children_system
                    rss = root.memory_info().rss
                if kids is None:
                    kids = _children_map()
                stack = list(kids.get(lease.pid, ()))
                while stack:
                    pid = stack.pop()
                    stack.extend(kids.get(pid, ()))
                    try:
                        child = psutil.Process(pid)
                        with child.oneshot():
                            c = child.cpu_times()
                            cpu += c.user + c.system
                            rss += child.memory_info().rss
                    except psutil.Error:
                        continue
            except (OSError, msgspec.DecodeError, psutil.Error):
                continue
            yield (lease.pid, lease.create_time), lease.owner, cpu, rss


def _children_map() -> dict[int, list[int]]:
    """Every live process's children, from one pass over the process table."""
    kids: dict[int, list[int]] = {}
    for proc in psutil.process_iter(["ppid"]):
        ppid = proc.info.get("ppid")
        if ppid is not None and ppid != proc.pid:
            kids.setdefault(ppid, []).append(proc.pid)
    return kids
