"""Which runtime a CLI command talks to: the server that owns the state directory when one
answers, else a Runtime opened in this process (as before ``paddock serve`` existed)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from paddock.cli._common import open_runtime, write

__all__ = ["connect", "server_of", "state_dir_of"]


def state_dir_of(args: argparse.Namespace) -> Path:
    return Path(getattr(args, "state_dir", None) or os.environ.get("PADDOCK_STATE_DIR") or ".paddock").resolve()


def server_of(args: argparse.Namespace) -> Any:
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
    if getattr(args, "config", None):
        write(f"paddock: the server of {folder} runs with its own config; --config is ignored\n", err=True)
    return RemoteRuntime.connect(folder)


def connect(args: argparse.Namespace) -> tuple[Any, bool]:
    """(runtime, remote): the owning server's RemoteRuntime, else an in-process Runtime. Both
    have the Runtime API; closing a remote one leaves the server running."""
    remote = server_of(args)
    if remote is not None:
        return remote, True
    return open_runtime(args), False
