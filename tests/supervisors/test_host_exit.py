"""A host that exits normally or on SIGTERM closes its scopes in order (orphan guard off, so
nothing but the orderly close can clean up)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import psutil
import pytest

from tests.helpers import helper


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("mode", ["exit", "sigterm"])
def test_host_exit_closes_open_scopes(mode):
    host = subprocess.Popen(
        [*helper("orderly_host", mode, "777")],
        stdout=subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "")},
    )
    try:
        pids = json.loads(host.stdout.readline())  # type: ignore[union-attr]
        assert len(pids) == 4
        if mode == "sigterm":
            host.send_signal(signal.SIGTERM)
        code = host.wait(timeout=15)
    finally:
        host.stdout.close()  # type: ignore[union-attr]
        if host.poll() is None:
            host.kill()
            host.wait()
    assert code == (128 + signal.SIGTERM if mode == "sigterm" else 0)
    assert [pid for pid in pids if not gone(pid)] == []
