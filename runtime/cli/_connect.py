"""Which runtime a CLI command talks to: the server that owns the state directory when one
answers, else a Runtime opened in this process on the config :func:`find_config` names."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from paddock.cli._common import handle_termination, write
from paddock.cli._errors import explain
from paddock.cli._places import announce, announce_config, find_config, state_dir_of

if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.client import RemoteRuntime

__all__ = ["call_once", "connect", "server_note", "server_of", "state_dir_of"]

_T = TypeVar("_T")


def server_of(args: argparse.Namespace) -> RemoteRuntime | None:
    """A RemoteRuntime of the live server that owns the state directory, or ``None``."""
    folder = state_dir_of(args)
    if not (folder / "server.json").exists():
        return None
    try:
        from paddock.client import RemoteRuntime, find_server
    except ImportError:  # httpx is missing: this process cannot be a client
        write("paddock: a server may own this state directory, but talking to it needs the client extra "
              "(pip install 'agent-paddock[client]'); running in-process\n", err=True)
        return None
    if find_server(folder) is None:
        return None  # a stale server.json: the server is gone
    return RemoteRuntime.connect(folder)


def server_note(args: argparse.Namespace) -> str:
    """What a command says when it goes through the server (whose config is its own)."""
    ignored = "; --config is ignored" if getattr(args, "config", None) else ""
    return f"through the server of {state_dir_of(args)} (config: the one it was started with{ignored})"


def connect(args: argparse.Namespace, command: str) -> tuple[Runtime | RemoteRuntime, bool]:
    """(runtime, remote): the owning server's RemoteRuntime, else an in-process Runtime. Both
    have the Runtime API; closing a remote one leaves the server running. Says which on stderr."""
    remote = server_of(args)
    if remote is not None:
        announce(command, server_note(args))
        return remote, True
    from paddock import Runtime

    found = find_config(args)
    announce_config(command, found)
    return Runtime.open(found.path, state_dir=args.state_dir), False


def call_once(args: argparse.Namespace, command: str, call: Callable[[Runtime | RemoteRuntime], _T]) -> _T | None:
    """The one-call commands (``generate``, ``fork``, ``compact``): handle termination signals,
    :func:`connect`, run ``call`` on the runtime and close it. A :class:`PaddockError` is
    written as ``paddock COMMAND: ...`` on stderr and gives ``None`` (the command exits 1).
    Runs on the CLI's main thread."""
    from paddock.contract import PaddockError

    handle_termination()
    rt, _ = connect(args, command)
    try:
        return call(rt)
    except PaddockError as exc:
        write(f"paddock {command}: {explain(exc)}\n", err=True)
        return None
    finally:
        rt.close()
