"""Process and file side effects of the directives (``@run``, ``@spawn``, ``@alloc``, ``@fork``,
``@burn``, direct ``@write``).

This package is the one part of Paddock allowed to spawn processes outside supervisors/actors:
it is a separate program the runtime starts, and it behaves like a real agent.
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable

__all__ = ["RunningCommand", "allocate", "burn", "fork_sleepers", "read_old_text", "spawn_sleeper", "write_file"]

_HELD: list[bytearray] = []
_ALLOC_STEP = 8 * 1024 * 1024

_OLD_TEXT_LIMIT = 1024 * 1024


class RunningCommand:
    """``/bin/sh -c COMMAND`` in ``cwd``, stdout+stderr merged, in its own process group so a
    cancel can kill the whole pipeline. Output is handed to ``on_output`` (on the calling thread
    of :meth:`pump`) as decoded text pieces."""

    def __init__(self, command: str, cwd: str) -> None:
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            close_fds=True,
            process_group=0,
        )

    def pump(self, on_output: Callable[[str], None]) -> int:
        """Stream output until EOF, then reap; returns the exit code (negative: signal)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        while True:
            data = os.read(fd, 65536)
            if not data:
                break
            text = decoder.decode(data)
            if text:
                on_output(text)
        tail = decoder.decode(b"", final=True)
        if tail:
            on_output(tail)
        self.proc.stdout.close()  # type: ignore[union-attr]
        return self.proc.wait()

    def kill(self) -> None:
        """SIGKILL the command's process group (idempotent; any thread)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def spawn_sleeper(seconds: float) -> int:
    """Start ``sleep SECONDS`` ignoring SIGTERM, in the agent's process group; returns its pid.

    The shell sets SIGTERM to ignored, reports "ready" on a pipe, then execs ``sleep`` (same pid),
    which inherits the ignored disposition. Returning only after "ready" guarantees the pid
    already ignores SIGTERM when the agent reports it. A daemon thread reaps it if it ends while
    the agent lives.
    """
    proc = subprocess.Popen(
        ["/bin/sh", "-c", f"trap '' TERM; echo ready; exec sleep {seconds!r} >/dev/null"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        close_fds=True,
    )
    proc.stdout.readline()  # type: ignore[union-attr]
    proc.stdout.close()  # type: ignore[union-attr]
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid


def allocate(mb: int) -> int:
    """Allocate and touch ``mb`` MiB, held until the agent exits, in 8 MiB steps 20 ms apart (a
    paced growth whose crossing of a limit can be watched); returns the MiB held in all."""
    left = mb * 1024 * 1024
    while left > 0:
        step = min(left, _ALLOC_STEP)
        _HELD.append(bytearray(b"\x01") * step)  # filled, so resident, unlike a zeroed allocation
        left -= step
        time.sleep(0.02)
    return sum(len(b) for b in _HELD) // (1024 * 1024)


def fork_sleepers(n: int) -> int:
    """Fork ``n`` children that close every descriptor and sleep up to 10 minutes, as fast as the
    agent can; each leaves within 250 ms of the agent's exit (it checks its parent: a
    ``PR_SET_PDEATHSIG`` would fire when the forking turn thread ends) and a daemon thread reaps
    them. Returns how many were forked."""
    pids = []
    me = os.getpid()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                os.closerange(0, 1 << 16)
                end = time.monotonic() + 600
                while os.getppid() == me and time.monotonic() < end:
                    time.sleep(0.25)
            finally:
                os._exit(0)
        pids.append(pid)

    def reap() -> None:
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

    threading.Thread(target=reap, name="reap-forked", daemon=True).start()
    return len(pids)


def burn(seconds: float) -> None:
    """Keep one CPU busy for ``seconds`` of wall time."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def read_old_text(path: str) -> str | None:
    """The current text of a regular file (for a diff), or None if absent/special/too big."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        import stat

        if not stat.S_ISREG(st.st_mode) or st.st_size > _OLD_TEXT_LIMIT:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(_OLD_TEXT_LIMIT + 1)
        return data.decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def write_file(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` directly; raises OSError."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
