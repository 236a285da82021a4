"""Run a short-lived command to completion under a deadline (installers, version probes)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

import msgspec

from runtime.contract import OperationTimeout, ProcessError

__all__ = ["CommandResult", "run_command"]


class CommandResult(msgspec.Struct, frozen=True, kw_only=True):
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
    timeout: float = 60.0,
    check: bool = False,
) -> CommandResult:
    """Run ``argv`` with exactly ``env`` (never the ambient environment) and return its output.

    The command runs in its own process group; on timeout the whole group is killed and
    :class:`OperationTimeout` is raised. With ``check``, a non-zero exit raises
    :class:`ProcessError` carrying the exit code and the stderr tail. A missing binary raises
    :class:`ProcessError` with ``exit_code=None``.
    """
    try:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise ProcessError(f"Could not start {argv[0]!r}: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise OperationTimeout(f"running {argv[0]!r}", timeout) from None
    result = CommandResult(
        argv=tuple(argv),
        returncode=proc.returncode,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
    )
    if check and proc.returncode != 0:
        raise ProcessError(
            f"{argv[0]!r} failed", proc.returncode, stderr_tail=result.stderr[-4096:]
        )
    return result
