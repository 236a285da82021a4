"""``paddock stop THREAD``: mark a thread stopped so no runtime resumes it on demand."""

from __future__ import annotations

import argparse

from paddock.cli._common import write
from paddock.cli._places import announce, state_dir_of

HELP = "stop a thread's live session (through the server that owns the state dir), or mark it stopped"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("thread", help="thread id")
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--config", help=argparse.SUPPRESS)  # accepted as by every command; stopping needs none


def run(args: argparse.Namespace) -> int:
    from paddock.cli._connect import server_note, server_of
    from paddock.contract import PaddockError
    from paddock._state._dir import StateDirLock
    from paddock._state._store import BindingStore

    remote = server_of(args)
    if remote is not None:
        announce("stop", server_note(args))
        with remote:  # a PaddockError reaches main(), which prints it explained and returns 1
            live = remote.has_session(args.thread)
            remote.stop_session(args.thread)
        write(f"thread {args.thread} stopped" + (" (its live session ended)" if live else "") + "\n")
        return 0
    db = state_dir_of(args) / "paddock.db"
    announce("stop", f"writing {db} (no server owns the state directory)")
    if not db.exists():
        write(f"paddock stop: no state at {db.parent}\n", err=True)
        return 1
    # The owner of a state dir is the only writer of its bindings (it keeps them in memory):
    # without a server, write only while holding the owner lock ourselves.
    try:
        lock = StateDirLock.acquire(db.parent)
    except PaddockError as exc:
        write(f"paddock stop: {exc}; stop the thread through the runtime that owns it\n", err=True)
        return 1
    try:
        store = BindingStore(db)
        try:
            if store.update(args.thread, status="stopped") is None:
                write(f"paddock stop: unknown thread {args.thread!r}\n", err=True)
                return 1
        finally:
            store.close()
    finally:
        lock.release()
    write(f"thread {args.thread} stopped\n")
    return 0
