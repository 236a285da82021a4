from __future__ import annotations

import os
import shutil
import threading
import time

import psutil
import pytest

from paddock.actors import ExitInfo, ProcessActor, ProcessSpec
from paddock.contract import OperationTimeout, ProcessError
from paddock.supervisors import ChildContext
from tests.helpers import PYTHON, SH, helper


class Collector:
    """Collects on_lines batches; wait() blocks until a predicate over all lines holds."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.batches = 0
        self.threads: set[str] = set()
        self.cond = threading.Condition()

    def __call__(self, lines: list[bytes]) -> None:
        with self.cond:
            self.lines.extend(lines)
            self.batches += 1
            self.threads.add(threading.current_thread().name)
            self.cond.notify_all()

    def wait(self, predicate, timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(self.lines), timeout), self.lines[-5:]


def test_lines_round_trip_in_batches_on_the_reader_thread():
    sink = Collector()
    handle = ProcessActor.open(ProcessSpec(argv=helper("lines")), on_lines=sink)
    try:
        handle.write_lines([b"one", b"two", b"three"])
        sink.wait(lambda lines: len(lines) >= 3)
        assert sink.lines == [b"one", b"two", b"three"]
        assert sink.threads == {"stdout-python"}
    finally:
        handle.actor_ref.stop()
    assert handle.exit_info is not None and handle.exit_info.requested


def test_missing_binary_is_a_process_error_naming_the_command():
    with pytest.raises(ProcessError) as caught:
        ProcessActor.open(ProcessSpec(argv=("no-such-agent-binary", "--x")), on_lines=print)
    assert "no-such-agent-binary" in str(caught.value)
    assert caught.value.exit_code is None


def test_exit_during_start_up_shows_the_command_and_its_stderr():
    spec = ProcessSpec(argv=helper("die_at_start"), name="fake-agent", startup_grace=2.0)
    with pytest.raises(ProcessError) as caught:
        ProcessActor.open(spec, on_lines=print)
    err = caught.value
    assert "'fake-agent' exited during start-up" in str(err)
    assert "config file /nonexistent/agent.toml not found" in err.stderr_tail
    assert err.exit_code == 2


def test_exit_is_reported_with_code_and_stderr_and_stops_the_actor_abnormally():
    exits: list[ExitInfo] = []
    chunks: list[bytes] = []
    ctx = ChildContext("lines")
    handle = ProcessActor.open(
        ProcessSpec(argv=helper("lines")),
        on_lines=print,
        on_exit=exits.append,
        on_stderr=chunks.append,
        context=ctx,
    )
    handle.write_lines([b"exit 5"])
    reason = ctx.wait_exit(10.0)
    assert reason is not None and reason.abnormal
    assert isinstance(reason.error, ProcessError) and reason.error.exit_code == 5
    assert "bye" in reason.error.stderr_tail
    assert [e.returncode for e in exits] == [5] and not exits[0].requested
    assert b"".join(chunks) == b"bye\n"  # all stderr was read before the exit was reported
    assert not handle.actor_ref.is_alive()


def test_environment_is_exactly_the_one_given():
    env_binary = shutil.which("env")
    assert env_binary
    sink = Collector()
    handle = ProcessActor.open(
        ProcessSpec(argv=(env_binary,), env={"ONLY": "this"}), on_lines=sink
    )
    handle.wait(10.0)
    assert sink.lines == [b"ONLY=this"]


def test_over_long_and_garbage_lines_do_not_stop_the_stream():
    warnings: list[tuple[str, str, dict]] = []
    sink = Collector()
    handle = ProcessActor.open(
        ProcessSpec(argv=helper("lines"), max_line_bytes=1000),
        on_lines=sink,
        on_warning=lambda *w: warnings.append(w),
    )
    try:
        handle.write_lines([b"\x00\xff garbage \x1b[2J", b"y" * 50_000, b"still here"])
        sink.wait(lambda lines: b"still here" in lines)
        assert sink.lines == [b"\x00\xff garbage \x1b[2J", b"still here"]
        assert [(code, detail["bytes"]) for code, _, detail in warnings] == [
            ("line_too_long", 50_000)
        ]
    finally:
        handle.actor_ref.stop()


def test_200_mb_without_a_newline_keeps_memory_bounded():
    me = psutil.Process()
    peak = [me.memory_info().rss]
    baseline = peak[0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], me.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    warnings: list[dict] = []
    sink = Collector()
    try:
        handle = ProcessActor.open(
            ProcessSpec(argv=helper("flood", "200")),
            on_lines=sink,
            on_warning=lambda code, message, detail: warnings.append(detail),
        )
        info = handle.wait(60.0)
    finally:
        done.set()
        sampler.join()
    assert info is not None and info.returncode == 0
    assert sink.lines == [b"after"]
    assert [w["bytes"] for w in warnings] == [200 * 1024 * 1024]
    growth = peak[0] - baseline
    # The limit is 16 MiB per line; holding the line would cost 200+ MiB.
    assert growth < 64 * 1024 * 1024, f"RSS grew by {growth / 2**20:.0f} MiB"


def test_writes_from_many_threads_reach_the_child_whole_and_in_order_past_a_full_pipe():
    # First one 4 MiB line from this thread: nothing is queued, so it goes straight to the pipe
    # on this thread, which takes at most its capacity (64 KiB) at once; the rest is queued for
    # the writer thread. Then 4 threads x 300 lines of 2 KiB, released together while those
    # megabytes still drain, so their first lines always wait for the writer thread. Nothing
    # may be lost, torn or reordered within a thread, and the tap sees what the child saw.
    sink = Collector()
    tapped: list[tuple[str, bytes]] = []
    tap_lock = threading.Lock()

    def tap(line: bytes) -> None:
        with tap_lock:
            tapped.append((threading.current_thread().name, line))

    handle = ProcessActor.open(ProcessSpec(argv=helper("lines")), on_lines=sink, on_outbound_line=tap)
    pad = b"p" * 2048
    big = b"big-" + b"b" * (4 * 1024 * 1024)
    go = threading.Barrier(5)
    try:
        def writer(n: int) -> None:
            go.wait(10)
            for i in range(300):
                handle.write_lines([b"w%d-%03d-" % (n, i) + pad], timeout=30)

        threads = [threading.Thread(target=writer, args=(n,), name=f"w{n}") for n in range(4)]
        for t in threads:
            t.start()
        handle.write_lines([big])
        go.wait(10)
        for t in threads:
            t.join(60)
        sink.wait(lambda lines: len(lines) >= 1201, timeout=60)
    finally:
        handle.actor_ref.stop()
    assert len(sink.lines) == 1201 and sink.lines[0] == big
    small = sink.lines[1:]
    assert all(line.endswith(pad) and len(line) == len(pad) + 7 for line in small)
    for n in range(4):
        mine = [line[:7] for line in small if line.startswith(b"w%d-" % n)]
        assert mine == [b"w%d-%03d-" % (n, i) for i in range(300)]
    assert [line for _, line in tapped] == sink.lines
    names = {name for name, _ in tapped}
    assert tapped[0] == (threading.current_thread().name, big), "the first write did not go to the pipe on its caller's thread"
    assert "stdin-" + handle.name in names, "the pipe never filled: the test did not reach the queue"


def test_a_child_that_stops_reading_cannot_block_the_writer():
    handle = ProcessActor.open(
        ProcessSpec(argv=helper("lines"), max_stdin_bytes=256 * 1024, shutdown_timeout=1.0),
        on_lines=print,
    )
    try:
        handle.write_lines([b"stop-reading"])
        chunk = b"z" * 65536
        with pytest.raises(OperationTimeout):
            for _ in range(1000):
                handle.write(chunk, timeout=0.01)
    finally:
        handle.actor_ref.stop()


def test_stderr_keeps_only_the_last_64_kib():
    script = "import sys\nfor i in range(4000): sys.stderr.write(f'line {i:05d} ' + 'e' * 40 + '\\n')"
    handle = ProcessActor.open(ProcessSpec(argv=(PYTHON, "-c", script)), on_lines=print)
    info = handle.wait(10.0)
    assert info is not None
    assert len(info.stderr_tail.encode()) <= 64 * 1024
    assert info.stderr_tail.rstrip().endswith("line 03999 " + "e" * 40)


def test_stopping_the_actor_kills_a_shell_tree():
    sink = Collector()
    handle = ProcessActor.open(
        ProcessSpec(argv=(SH, "-c", "trap '' TERM; sleep 777 & echo $!; wait"), shutdown_timeout=0.5),
        on_lines=sink,
    )
    sink.wait(lambda lines: len(lines) == 1)
    sleeper = psutil.Process(int(sink.lines[0]))
    handle.actor_ref.stop()
    assert not sleeper.is_running() or sleeper.status() == psutil.STATUS_ZOMBIE
    assert os.getpgid(os.getpid()) != handle.pid  # the child had its own group


_DRIP = "import sys, time\nfor i in range(60):\n    sys.stdout.write(f'line {i}\\n'); sys.stdout.flush(); time.sleep(0.001)\n"


@pytest.mark.parametrize("coalesce", [0.0, 0.02])
def test_read_coalesce_batches_a_child_that_writes_line_by_line(coalesce):
    sink = Collector()
    handle = ProcessActor.open(ProcessSpec(argv=(PYTHON, "-c", _DRIP), read_coalesce=coalesce), on_lines=sink)
    try:
        sink.wait(lambda lines: len(lines) == 60)
        assert sink.lines == [f"line {i}".encode() for i in range(60)]  # none lost, in order
        if coalesce:
            # ~60 ms of writes, each short read followed by a 20 ms wait: a handful of batches
            # (without it, about one per line).
            assert sink.batches <= 20, sink.batches
    finally:
        handle.terminate(5.0)
