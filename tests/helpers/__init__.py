"""Small programs run as real child processes by the supervision and transport tests."""

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

HELPERS = Path(__file__).resolve().parent
PYTHON = sys.executable
SLEEP = shutil.which("sleep") or "/bin/sleep"
SH = shutil.which("sh") or "/bin/sh"


def helper(name: str, *args: str) -> tuple[str, ...]:
    """argv running ``tests/helpers/<name>.py`` with this interpreter."""
    return (PYTHON, str(HELPERS / f"{name}.py"), *args)


def until(predicate: Callable[[], object], timeout: float, poll: float = 0.01) -> None:
    """Return once ``predicate()`` is true; fail the test if it is not within ``timeout`` seconds.
    For state no event announces (a file on disk, a counter in another thread)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(poll)


def shim_agents() -> list[psutil.Process]:
    """The live agent processes of this test process: what each orphan-guard shim it forked runs
    (the agents' own children aside)."""
    found = []
    for shim in psutil.Process().children():
        try:
            if "_shim.py" in " ".join(shim.cmdline()):
                found += [p for p in shim.children() if p.status() != psutil.STATUS_ZOMBIE]
        except psutil.NoSuchProcess:
            continue
    return found
