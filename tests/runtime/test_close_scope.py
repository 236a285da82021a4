"""Issue 33: close is a scope in every case. Whatever the disk or the agents do, ``close(timeout)``
returns within ``timeout`` + 1 s, nothing it started is alive when it returns, the state dir is
released, and the events it had to give up are counted. Real runtimes, real local agents, a real
full file system (a tmpfs), the public API."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from paddock import CloseReport, Runtime
from tests.runtime.conftest import run_turn, text_of
from tests.runtime.test_faults_disk import ONE_LOCAL, _fill, _tmpfs


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _descendants() -> list[psutil.Process]:
    """This process's living descendants that the test started: not those already alive when
    the module's first test began (a Ray cluster an earlier test module let linger)."""
    return [p for p in psutil.Process().children(recursive=True) if _alive(p) and p.pid not in _EARLIER]


_EARLIER: set[int] = set()


@pytest.fixture(autouse=True)
def _earlier_processes():
    _EARLIER.clear()
    _EARLIER.update(p.pid for p in psutil.Process().children(recursive=True))
    yield


@pytest.mark.timeout(90)
def test_close_on_a_full_disk_returns_in_time_releases_the_state_dir_and_counts_what_it_gave_up(
        tmp_path, workspace):
    with _tmpfs(tmp_path, size_mb=8) as folder:
        state = folder / "state"
        rt = Runtime.open(ONE_LOCAL, state_dir=state)
        try:
            rt.start_session("t1", instance="local", cwd=str(workspace))
            with rt.subscribe(thread_id="t1") as sub:
                # a turn that streams far more events than the writer may hold (65,536)
                rt.send_turn("t1", "@chunks 200000\n@reply " + "streaming " * 100)
                assert sub.get(timeout=20) is not None
                ballast = _fill(folder)  # the disk fills mid-turn and stays full through close
                deadline = time.monotonic() + 30
                while rt._hub.refused is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert rt._hub.refused is not None, "the disk never refused the log"
                time.sleep(2.0)  # the turn keeps streaming into the held events
        except BaseException:
            rt.close(timeout=5)
            raise
        started = time.monotonic()
        report = rt.close(timeout=5)
        took = time.monotonic() - started
        assert took <= 6.0, f"close(timeout=5) took {took:.2f} s on a full disk"
        assert isinstance(report, CloseReport)
        assert report.events_given_up > 0 and report.survivors == ()
        assert not _descendants()
        # released: its lock and databases; a later open of the same dir succeeds once there is room
        ballast.unlink()
        with Runtime.open(ONE_LOCAL, state_dir=state) as again:
            again.start_session("t1", instance="local", cwd=str(workspace))
            _, events = run_turn(again, "t1", "@reply after the full disk")
            assert text_of(events) == "after the full disk"


@pytest.mark.timeout(170)
def test_close_of_many_instances_mid_turn_with_stubborn_grandchildren_leaves_nothing_in_its_bound(tmp_path):
    count, timeout = 40, 3.0
    config = {"instances": {f"i{n}": {"driver": "local"} for n in range(count)}}
    rt = Runtime.open(config, state_dir=tmp_path / "s")
    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: rt.start_session(f"t{n}", instance=f"i{n}", cwd=str(tmp_path), timeout=60),
                          range(count)))
        with rt.subscribe(types=["content.delta"]) as sub:
            # each turn leaves a SIGTERM-ignoring grandchild, then streams on: mid-turn at close
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda n: rt.send_turn(f"t{n}", "@spawn 120\n@chunks 400\n@delay 0.05", timeout=60),
                              range(count)))
            streaming: set[str] = set()
            deadline = time.monotonic() + 60
            while len(streaming) < count and time.monotonic() < deadline:
                event = sub.get(timeout=1.0)
                if event is not None:
                    streaming.add(event.thread_id)
            assert len(streaming) == count, f"only {len(streaming)} turns streamed"
        # one agent is hung (stopped): it answers no shutdown request and no SIGTERM
        shims = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
        os.kill(shims[0].children()[0].pid, signal.SIGSTOP)
        before = _descendants()
        assert len(before) >= 3 * count  # shim, agent and grandchild of each instance
    except BaseException:
        rt.close()
        raise
    started = time.monotonic()
    report = rt.close(timeout=timeout)
    took = time.monotonic() - started
    left = _descendants()  # at once: close() itself confirms that everything is gone
    assert took <= timeout + 1.0, f"close(timeout={timeout:g}) took {took:.2f} s for {count} instances"
    assert not left, f"{len(left)} processes alive after close() returned: {[p.pid for p in left[:10]]}"
    assert report.survivors == ()
    # and nothing starts afterwards (a supervisor restarting an agent the last-resort kill ended)
    watch = time.monotonic() + 2.0
    while time.monotonic() < watch:
        late = _descendants()
        assert not late, f"{len(late)} processes started after close() returned: {[p.cmdline()[-1:] for p in late[:5]]}"
        time.sleep(0.05)
