"""Terminal: one short command run on behalf of an agent, with its output kept within a byte
limit and its whole process tree torn down on kill.

Threads: one reader thread collects the merged stdout/stderr; one watcher thread waits for the
exit and then runs the exit callbacks. Every public method is thread-safe and never blocks on the
command, except :meth:`Terminal.kill`, which waits (at most ``timeout``) for the tree to be gone.
"""

from __future__ import annotations

import signal as _signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence

from paddock.supervisors import Confinement, SpawnRequest, spawn, teardown

__all__ = ["Terminal", "TerminalExit"]


class TerminalExit:
    """How a command ended: ``exit_code`` (None when killed by a signal) or ``signal`` (its name)."""

    __slots__ = ("exit_code", "signal")

    def __init__(self, returncode: int) -> None:
        self.exit_code: int | None = returncode if returncode >= 0 else None
        self.signal: str | None = None
        if returncode < 0:
            try:
                self.signal = _signal.Signals(-returncode).name
            except ValueError:
                self.signal = str(-returncode)


class Terminal:
    """Start ``argv`` in ``cwd`` with exactly ``env`` (its own process group, under the orphan
    guard). Output (stdout and stderr merged) beyond ``output_limit`` bytes is dropped from the
    beginning, at a UTF-8 character boundary. With ``confinement`` the command runs under those
    Landlock rules (the agent's own). Raises ``ProcessError`` when it cannot start."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, output_limit: int,
                 confinement: Confinement | None = None) -> None:
        self._limit = max(0, output_limit)
        self._buf = bytearray()
        self._truncated = False
        self._lock = threading.Lock()
        self._exit: TerminalExit | None = None
        self._callbacks: list[Callable[[TerminalExit], None]] = []
        self._popen = spawn(
            SpawnRequest(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, confinement=confinement)
        )
        self._reader = threading.Thread(target=self._read, name="terminal-out", daemon=True)
        self._reader.start()
        threading.Thread(target=self._watch, name="terminal-exit", daemon=True).start()

    @property
    def pid(self) -> int:
        return self._popen.pid

    def _read(self) -> None:
        pipe = self._popen.stdout
        assert pipe is not None
        try:
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    break
                with self._lock:
                    self._buf += chunk
                    excess = len(self._buf) - self._limit
                    if excess > 0:
                        # Cut at a character boundary: skip UTF-8 continuation bytes.
                        while excess < len(self._buf) and (self._buf[excess] & 0xC0) == 0x80:
                            excess += 1
                        del self._buf[:excess]
                        self._truncated = True
        except (OSError, ValueError):
            pass
        finally:
            try:
                pipe.close()
            except OSError:
                pass

    def _watch(self) -> None:
        code = self._popen.wait()
        self._reader.join(2.0)
        with self._lock:
            self._exit = TerminalExit(code)
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self._exit)
            except Exception:  # a failed answer must not kill the watcher
                pass

    def output(self) -> tuple[str, bool, TerminalExit | None]:
        """The output kept so far, whether some was dropped, and the exit once known."""
        with self._lock:
            return self._buf.decode("utf-8", "replace"), self._truncated, self._exit

    def on_exit(self, callback: Callable[[TerminalExit], None]) -> None:
        """Call ``callback(exit)`` once the command has exited (at once if it has; else on the
        watcher thread)."""
        with self._lock:
            done = self._exit
            if done is None:
                self._callbacks.append(callback)
                return
        callback(done)

    def kill(self, timeout: float = 2.0) -> None:
        """SIGTERM then SIGKILL the command's whole tree; returns when it is gone."""
        if self._popen.poll() is None:
            teardown(self._popen, timeout=timeout)
