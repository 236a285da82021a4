"""The ``paddock`` CLI as a person uses it: real processes, a real pty for the terminal cases,
the built-in ``local`` agent (its ``@write``/``@run`` directives ask for approval)."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.streams import read_until
from tests.server.conftest import make_server, short_root  # noqa: F401  (fixtures for tests/cli)

ROOT = Path(__file__).resolve().parents[2]
PADDOCK = [sys.executable, "-m", "paddock.cli"]

TWO_LOCAL_TOML = """
[instances.local-a]
driver = "local"

[instances.local-b]
driver = "local"
"""


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ)
    for name in ("PADDOCK_STATE_DIR", "PADDOCK_CONFIG"):
        out.pop(name, None)
    out["PYTHONUNBUFFERED"] = "1"
    out.update(extra)
    return out


def cli(*argv: str, cwd: Path = ROOT, input: str | None = None, timeout: float = 60,
        environ: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``paddock ARGV`` with stdin a pipe (``input``) or /dev/null; never a terminal."""
    return subprocess.run([*PADDOCK, *argv], cwd=cwd, env=environ or env(), input=input, text=True,
                          capture_output=True, timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)


class Pty:
    """``paddock ARGV`` on a pty that is its controlling terminal (stdin, stdout and stderr)."""

    def __init__(self, *argv: str, cwd: Path = ROOT, environ: dict[str, str] | None = None) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.chdir(cwd)
            os.execve(sys.executable, [*PADDOCK, *argv], environ or env(TERM="xterm"))
        self.out = b""
        self._seen = 0

    def expect(self, marker: bytes, timeout: float = 30.0) -> bytes:
        """Wait for ``marker`` after what the last expect matched; returns the output between."""
        start = self._seen
        if marker not in self.out[start:]:
            self.out = self.out[:start] + read_until(self.fd, marker, timeout, self.out[start:])
        end = self.out.index(marker, start) + len(marker)
        self._seen = end
        return self.out[start:end]

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self, timeout: float = 30.0) -> int:
        """The exit code; reads (and keeps) the output until the process exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            try:
                import select

                if select.select([self.fd], [], [], 0.1)[0]:
                    self.out += os.read(self.fd, 65536)
            except OSError:
                pass
        raise AssertionError(f"the command did not exit; output ends {self.out[-2000:]!r}")

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)
