"""Where a thread runs: the instance and cwd a ``chat`` or ``run`` starts its session with.

A thread that already has a binding keeps its instance and cwd unless the command names others;
it is never moved to another instance silently (the move is said on stderr)."""

from __future__ import annotations

import argparse
import os
import shlex
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.client import RemoteRuntime

__all__ = ["Target", "resume_hint", "thread_target"]

DEFAULT_INSTANCE = "local"


class Target(NamedTuple):
    instance: str
    cwd: str
    note: str | None
    """A sentence to show when the thread moves to another instance or cwd, else ``None``."""


def thread_target(rt: Runtime | RemoteRuntime, args: argparse.Namespace, thread_id: str) -> Target:
    """``--instance`` and ``--cwd`` when given, else the thread's binding's, else ``local`` and
    the current directory. Runs in the caller's thread (one ``list_threads`` call)."""
    binding = next((b for b in rt.list_threads() if b.thread_id == thread_id), None)
    asked_instance: str | None = args.instance
    asked_cwd = os.path.abspath(args.cwd) if args.cwd is not None else None
    if binding is None:
        return Target(asked_instance or DEFAULT_INSTANCE, asked_cwd or os.path.abspath("."), None)
    instance = asked_instance or binding.instance_id
    cwd = asked_cwd or binding.cwd
    notes = []
    if instance != binding.instance_id:
        notes.append(f"thread {thread_id} moves from instance {binding.instance_id!r} to {instance!r} (--instance); "
                     f"the agent of {instance!r} starts without the conversation held by {binding.instance_id!r}")
    if cwd != binding.cwd:
        notes.append(f"thread {thread_id} now works in {cwd} (was {binding.cwd})")
    return Target(instance, cwd, "; ".join(notes) or None)


def resume_hint(args: argparse.Namespace, instance: str, thread_id: str) -> str:
    """The command that continues ``thread_id`` on ``instance`` with every option it needs: this
    ``--config`` and ``--state-dir`` (absolute, so it works from any folder; the state directory
    also leads to its server) and the ``--mode`` and ``--model`` given, when not the defaults."""
    words = ["paddock", "chat"]
    for option, value in (("--config", getattr(args, "config", None)), ("--state-dir", getattr(args, "state_dir", None))):
        if value:
            words += [option, os.path.abspath(os.path.expanduser(value))]
    words += ["--instance", instance, "--thread", thread_id]
    mode = getattr(args, "mode", None)
    if mode is not None and mode != "approval-required":
        words += ["--mode", mode]
    if getattr(args, "model", None):
        words += ["--model", args.model]
    return shlex.join(words)
