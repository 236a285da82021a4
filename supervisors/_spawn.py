"""Process spawning and the orphan guard.

Every child process is forked by ONE long-lived daemon thread, the spawner. Each child starts in its
own process group (its pgid is its pid) with exactly the environment it is given, and with umask
077: what an agent (and the shim, and everything they start, which inherit it) creates is private
to the user whatever the host's umask, without relying on one directory's mode.

Orphan guard (``orphan_guard=True``, the default), what is guaranteed:

- Linux: the forked child is a small shim (``_shim.py``) that is a child subreaper, so every
  descendant of the agent, including one that called ``setsid`` or double-forked, stays in the
  shim's tree. The shim learns that the host died from ``PR_SET_PDEATHSIG`` (SIGUSR1; it fires
  when the *forking thread* exits, which is why all forks happen on the spawner thread, which lives
  as long as the process) and from EOF on a watchdog pipe whose write end only the host holds. It
  then SIGKILLs the whole tree. The agent itself has ``PR_SET_PDEATHSIG=SIGKILL`` towards the
  shim. So when the host is killed with SIGKILL, the agent and all its descendants die within
  milliseconds (the acceptance bound is 2 s).
- macOS (no PDEATHSIG, no subreaper): the shim sees EOF on the watchdog pipe and kills the
  process group. Descendants that left the group (``setsid``) and were re-parented to launchd
  before the host died can survive; the lease sweep at the next start-up is the backstop.
- With ``orphan_guard=False`` the agent is exec'd directly (no shim, no PDEATHSIG): only the lease
  sweep cleans up after a host crash. Tests use this to exercise the sweep.

A missing or non-executable binary is detected in the host before forking and raised as
:class:`ProcessError` naming the command.
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from paddock.contract import ProcessError

from ._confine import Confinement
from ._shim import CONFINE_VAR, LIMITS_VAR

__all__ = ["SpawnRequest", "resolve_executable", "spawn"]

_SHIM = str(Path(__file__).with_name("_shim.py"))


class SpawnRequest:
    """What to spawn. ``stdin``/``stdout``/``stderr`` take ``subprocess.PIPE``/``DEVNULL``/fd."""

    __slots__ = ("argv", "confinement", "cwd", "env", "hang_timeout", "orphan_guard", "report_dir", "stderr", "stdin", "stdout")

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        orphan_guard: bool = True,
        stdin: int = subprocess.PIPE,
        stdout: int = subprocess.PIPE,
        stderr: int = subprocess.PIPE,
        report_dir: str | None = None,
        hang_timeout: float | None = None,
        confinement: Confinement | None = None,
    ) -> None:
        if not argv:
            raise ProcessError("Cannot start an empty command")
        self.argv = tuple(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.orphan_guard = orphan_guard
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.report_dir = report_dir
        """Where the shim keeps its tree file (``LeaseStore.directory``), or ``None``."""
        self.hang_timeout = hang_timeout
        """Seconds an agent may stay stopped before the shim declares it hung and kills it
        (``None``: :func:`default_hang_timeout`; 0: never)."""
        self.confinement = confinement
        """Landlock rules the shim applies to the child before exec (``None``: unconfined). A
        child that cannot be confined does not start (it exits 126 saying why)."""


def resolve_executable(argv0: str, env: Mapping[str, str], cwd: str | None) -> str:
    """Resolve ``argv0`` like ``execvpe`` would with ``env['PATH']``; raise ProcessError if absent."""
    if os.sep in argv0:
        path = argv0 if os.path.isabs(argv0) else os.path.join(cwd or os.getcwd(), argv0)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        found = None
    else:
        found = shutil.which(argv0, path=env.get("PATH", os.defpath))
        if found and not os.path.isabs(found):
            found = os.path.join(cwd or os.getcwd(), found)
    if not found:
        raise ProcessError(
            f"Could not start {argv0!r}: no such executable"
            + ("" if os.sep in argv0 else " on the PATH given to it")
        )
    return found


class _Spawner:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._watch_r = -1
        self._watch_w = -1
        self._pid = -1

    def _ensure(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
                return
            # os.pipe() fds are non-inheritable: only children given the read end in pass_fds
            # hold it, and nobody but this process ever holds the write end.
            self._watch_r, self._watch_w = os.pipe()
            self._pid = os.getpid()
            self._queue = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._run, name="paddock-spawner", daemon=True)
            self._thread.start()

    def submit(self, request: SpawnRequest) -> subprocess.Popen:
        path = resolve_executable(request.argv[0], request.env, request.cwd)
        self._ensure()
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((request, path, future))
        return future.result()

    def _run(self) -> None:
        while True:
            request, path, future = self._queue.get()
            try:
                future.set_result(self._fork(request, path))
            except BaseException as exc:  # the spawner thread must outlive every failure
                future.set_exception(exc)

    def _fork(self, request: SpawnRequest, path: str) -> subprocess.Popen:
        env = request.env
        if request.confinement is not None:
            if not request.orphan_guard:
                raise ProcessError(f"Could not start {request.argv[0]!r}: confinement needs the orphan guard")
            env = {**env, CONFINE_VAR: request.confinement.document(path)}
        if not request.orphan_guard and LIMITS_VAR in env:
            env = {k: v for k, v in env.items() if k != LIMITS_VAR}  # only the shim holds limits
        if request.orphan_guard:
            argv = [
                sys.executable, "-I", "-S", _SHIM,
                str(self._watch_r), str(os.getpid()), path,
                "=" + request.env["LC_CTYPE"] if "LC_CTYPE" in request.env else "-",
                request.report_dir or "-",
                _hang_arg(request.hang_timeout),
                "--", *request.argv,
            ]  # fmt: skip
            executable = sys.executable
            pass_fds: tuple[int, ...] = (self._watch_r,)
        else:
            argv, executable, pass_fds = list(request.argv), path, ()
        try:
            return subprocess.Popen(
                argv,
                executable=executable,
                env=env,
                cwd=request.cwd,
                stdin=request.stdin,
                stdout=request.stdout,
                stderr=request.stderr,
                pass_fds=pass_fds,
                process_group=0,
                umask=0o077,
                bufsize=0,
            )
        except OSError as exc:
            raise ProcessError(
                f"Could not start {request.argv[0]!r}: {exc.strerror or exc}"
            ) from None


def default_hang_timeout() -> float:
    """Seconds a spawned agent may stay stopped (SIGSTOP, SIGTSTP, a tracer's stop) before its
    shim declares it hung and kills it, so that its supervisor restarts it: ``$PADDOCK_HANG_TIMEOUT``
    (0 turns it off) or 30. Read at each spawn (thread: any)."""
    text = os.environ.get("PADDOCK_HANG_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_HANG_TIMEOUT
    except ValueError:
        value = DEFAULT_HANG_TIMEOUT
    return value if value >= 0 and value == value else DEFAULT_HANG_TIMEOUT


DEFAULT_HANG_TIMEOUT = 30.0


def _hang_arg(hang_timeout: float | None) -> str:
    value = default_hang_timeout() if hang_timeout is None else hang_timeout
    return "-" if value <= 0 else repr(float(value))


_SPAWNER = _Spawner()


def spawn(request: SpawnRequest) -> subprocess.Popen:
    """Fork ``request`` on the spawner thread and return its Popen (thread: any caller).

    The returned process is the shim when the orphan guard is on (its pid and pgid are the ones to
    watch and signal; its exit status mirrors the agent's). Raises :class:`ProcessError` naming the
    command when the binary is missing or cannot be started.
    """
    return _SPAWNER.submit(request)
