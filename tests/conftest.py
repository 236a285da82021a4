"""Fixtures every test gets.

``no_leaked_processes`` (autouse) fails a test that leaves a descendant process alive. The test
process is made a child subreaper at start-up (Linux), so grandchildren that lose their parent are
re-parented to it and stay visible as descendants instead of escaping to init.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable, Iterable

import psutil
import pytest

PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


_become_subreaper()


def _living_descendants() -> dict[int, psutil.Process]:
    alive: dict[int, psutil.Process] = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive[proc.pid] = proc
        except psutil.NoSuchProcess:
            pass
    return alive


def _reap_zombie_orphans() -> None:
    # Orphans re-parented to this subreaper become our zombies; nobody else will wait for them.
    for proc in psutil.Process().children():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(proc.pid, os.WNOHANG)
        except (psutil.NoSuchProcess, ChildProcessError):
            pass


def leaked_since(before: set[int], *, grace: float, poll: float,
                 ignore: Callable[[psutil.Process], bool] | None = None) -> dict[int, psutil.Process]:
    """The living descendants not in ``before`` (and not ``ignore``d) once they had up to ``grace``
    seconds to go, reaping orphaned zombies on the way: a process SIGKILLed just before teardown
    may need a moment to be reaped by its parent."""
    deadline = time.monotonic() + grace
    while True:
        _reap_zombie_orphans()
        leaked = {pid: p for pid, p in _living_descendants().items()
                  if pid not in before and (ignore is None or not ignore(p))}
        if not leaked or time.monotonic() > deadline:
            return leaked
        time.sleep(poll)


def kill_described(procs: Iterable[psutil.Process]) -> list[str]:
    """Kill ``procs`` (reaping what that orphans) and describe each one still there: pid and command line."""
    described = []
    for proc in procs:
        try:
            described.append(f"{proc.pid}: {' '.join(proc.cmdline())[:200]}")
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    _reap_zombie_orphans()
    return described


def fail_on_leaks(before: set[int], *, grace: float = 1.0, poll: float = 0.02,
                  ignore: Callable[[psutil.Process], bool] | None = None) -> None:
    """Fail the test if it left a descendant (not in ``before``, not ``ignore``d) alive; kill what it leaked."""
    leaked = leaked_since(before, grace=grace, poll=poll, ignore=ignore)
    if leaked:
        described = kill_described(leaked.values())
        pytest.fail("test left processes alive:\n" + "\n".join(described), pytrace=False)


@pytest.fixture(autouse=True)
def no_leaked_processes():
    """Fail the test if it leaves a descendant process alive; kill what it leaked."""
    before = set(_living_descendants())
    yield
    fail_on_leaks(before)
