"""Run a short-lived command to completion under a deadline (installers, version probes)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence

import msgspec

from paddock.contract import OperationTimeout, ProcessError

from ._spawn import SpawnRequest, spawn
from ._teardown import teardown

__all__ = ["CommandOutput", "CommandResult", "run_command", "run_short"]


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

    The command is forked by the spawner thread with the orphan guard (it dies with the host) in
    its own process group; on timeout its whole tree is killed and :class:`OperationTimeout` is
    raised. With ``check``, a non-zero exit raises
    :class:`ProcessError` carrying the exit code and the stderr tail. A missing binary raises
    :class:`ProcessError` with ``exit_code=None``.
    """
    returncode, out, err = _run(SpawnRequest(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL), None, timeout)
    result = CommandResult(
        argv=tuple(argv),
        returncode=returncode,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
    )
    if check and returncode != 0:
        raise ProcessError(
            f"{argv[0]!r} failed", returncode, stderr_tail=result.stderr[-4096:]
        )
    return result


class CommandOutput(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`run_short` saw: the exit code and the raw bytes of both streams."""

    returncode: int
    stdout: bytes
    stderr: bytes


def run_short(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
    timeout: float = 30.0,
    stdin: bytes | None = None,
) -> CommandOutput:
    """Run a short, local command (``git``) to completion and return its exit code and output as
    bytes (thread: any caller; never call it inside an actor).

    Unlike :func:`run_command` the command is exec'd without the orphan-guard shim: it costs one
    fork, not a Python start-up, which matters for commands run on every turn. It still forks on
    the spawner thread, in its own process group, with exactly ``env``. A host that dies while it
    runs leaves it to finish on its own (it reads no pipe of the host's that stays open). On
    timeout its group is killed and :class:`OperationTimeout` raised; a missing binary raises
    :class:`ProcessError`.
    """
    request = SpawnRequest(argv, env=env, cwd=cwd, orphan_guard=False,
                           stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
    returncode, out, err = _run(request, stdin, timeout)
    return CommandOutput(returncode=returncode, stdout=out, stderr=err)


def _run(request: SpawnRequest, stdin: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
    """Spawn ``request``, feed it ``stdin`` and wait for its exit: (exit code, stdout, stderr).
    On timeout its whole tree is killed and :class:`OperationTimeout` raised."""
    proc = spawn(request)
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        teardown(proc, timeout=0.0)
        proc.communicate()
        raise OperationTimeout(f"running {request.argv[0]!r}", timeout) from None
    return proc.returncode, out, err
