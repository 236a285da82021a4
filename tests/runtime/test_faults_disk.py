"""Issue 25: every turn ends when the disk is full. A real runtime on a small tmpfs that a ballast
file fills mid-turn; a real local agent; the public API."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess

import pytest

from paddock import Runtime
from paddock.contract import PersistenceError
from tests.runtime.conftest import run_turn, text_of
from tests.helpers import until

ONE_LOCAL = {"instances": {"local": {"driver": "local"}}}


@contextlib.contextmanager
def _tmpfs(tmp_path, size_mb=16):
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0700", "tmpfs", str(folder)],
            capture_output=True).returncode:
        pytest.skip("a full disk needs a tmpfs: mounting one needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _fill(folder):
    """Fill ``folder``'s file system with one ballast file; return its path."""
    ballast = folder / "ballast"
    size = 1 << 20
    with open(ballast, "wb", buffering=0) as f:
        while size >= 512:
            try:
                f.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                size //= 4
    return ballast



def test_a_turn_that_ends_on_a_full_disk_is_logged_once_the_disk_has_room(tmp_path, workspace):
    with _tmpfs(tmp_path) as folder, Runtime.open(ONE_LOCAL, state_dir=folder / "state") as rt:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        with rt.subscribe(thread_id="t1") as sub:
            turn = rt.send_turn("t1", "@chunks 40\n@delay 0.05\n@reply " + "streaming " * 200)
            first = sub.get(timeout=20)
            assert first is not None and first.type == "turn.started"
            ballast = _fill(folder)  # the disk fills mid-turn
            # the turn's end comes while the log refuses to grow: the runtime says so to callers
            until(lambda: rt._hub.refused is not None, timeout=20.0, poll=0.02)
            with pytest.raises(PersistenceError, match="disk is full"):
                rt.send_turn("t1", "@reply refused")
            ballast.unlink()  # the disk has room again
            events = [first]
            while events[-1].type != "turn.completed":
                event = sub.get(timeout=20)
                assert event is not None, [e.type for e in events]
                events.append(event)
        ends = [e for e in events if e.type == "turn.completed"]
        assert [(e.turn_id, e.state) for e in ends] == [(turn.turn_id, "completed")]
        assert text_of(events) == ("streaming " * 200).strip()
        [error] = [e for e in events if e.type == "runtime.error"]
        assert error.code == "event_log.write_refused" and "disk is full" in error.message
        assert [e.seq for e in events] == sorted(e.seq for e in events)
        assert rt.read_thread("t1").turns[-1].state == "completed"
        _, after = run_turn(rt, "t1", "@reply on again")
        assert text_of(after) == "on again"
