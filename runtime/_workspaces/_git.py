"""The ``git`` command, run to completion with a private, fixed environment.

Every call forks ``git`` through :func:`paddock.supervisors.run_short` (no shell, no shim: one
fork, ~2 ms) with an environment built here, never the ambient one: the user's own ``GIT_*``
variables (``GIT_DIR``, ``GIT_INDEX_FILE``, ...) could point a command at another repository or
index. Hooks and the file-system monitor are switched off for every call, and a checkpoint's
author and committer are fixed, so no user configuration is needed and none is run.
Thread: the caller's (never an actor's).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from paddock.contract import ProcessError
from paddock.supervisors import run_short

__all__ = ["GitError", "git", "text"]

_PASS = ("PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR", "SYSTEMROOT")
_FIXED = {
    "GIT_AUTHOR_NAME": "Paddock", "GIT_AUTHOR_EMAIL": "paddock@localhost",
    "GIT_COMMITTER_NAME": "Paddock", "GIT_COMMITTER_EMAIL": "paddock@localhost",
    "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C",
}  # fmt: skip
_OPTIONS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false")


class GitError(ProcessError):
    """A ``git`` command failed: ``exit_code`` and ``stderr_tail`` say how."""


def _env(index: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k in _PASS if (v := os.environ.get(k))}
    env.update(_FIXED)
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    if extra:
        env.update(extra)
    return env


def git(*args: str, cwd: str, index: str | None = None, stdin: bytes | None = None, ok: tuple[int, ...] = (0,),
        timeout: float = 120.0, env: Mapping[str, str] | None = None) -> bytes:
    """Run ``git ARGS`` in ``cwd`` (with ``index`` as its index file where given) and return its
    stdout. Raises :class:`GitError` for an exit code not in ``ok``, :class:`ProcessError` when
    ``git`` is not installed, :class:`OperationTimeout` after ``timeout`` seconds."""
    out = run_short(("git", *_OPTIONS, *args), env=_env(index, env), cwd=cwd, timeout=timeout, stdin=stdin)
    if out.returncode not in ok:
        raise GitError(f"git {args[0]} failed", out.returncode,
                       stderr_tail=out.stderr.decode("utf-8", "replace")[-4096:])
    return out.stdout


def text(out: bytes) -> str:
    """One line of git's output as text (its trailing newline removed)."""
    return out.decode("utf-8", "surrogateescape").strip()
