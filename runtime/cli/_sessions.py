"""``paddock sessions``: the thread bindings in the state directory, and (from the server that
owns it) the turns admission holds in its queue."""

from __future__ import annotations

import argparse
import json
import time

from paddock.cli._common import write
from paddock.cli._places import announce, state_dir_of

HELP = "list the threads bound in the state directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--json", action="store_true", help="print JSON lines")
    parser.add_argument("--config", help=argparse.SUPPRESS)  # accepted as by every command; the list needs none


def run(args: argparse.Namespace) -> int:
    from paddock.cli._connect import server_note, server_of
    from paddock._state._store import BindingStore

    remote = server_of(args)
    if remote is not None:  # the owner knows which sessions are live
        announce("sessions", server_note(args))
        with remote:
            bindings = remote.list_threads()
            queued = remote.queue()
        return _show(args, bindings, {q.thread_id: q for q in queued})
    db = state_dir_of(args) / "paddock.db"
    announce("sessions", f"reading {db} (the bindings need no config)")
    if not db.exists():
        write(f"no state at {db.parent}\n")
        return 0
    store = BindingStore(db)
    try:
        bindings = store.list()
    finally:
        store.close()
    return _show(args, bindings)


def _show(args: argparse.Namespace, bindings: list, queued: dict | None = None) -> int:
    """One row per binding; a thread whose turn waits in admission's queue says its place."""
    import msgspec

    queued = queued or {}
    if args.json:
        for b in bindings:
            row = msgspec.to_builtins(b)
            if b.thread_id in queued:
                row["queued"] = msgspec.to_builtins(queued[b.thread_id])
            write(json.dumps(row) + "\n")
        return 0
    if not bindings:
        write("no threads\n")
        return 0
    rows = [("thread", "instance", "driver", "status", "updated", "cwd")]
    for b in bindings:
        q = queued.get(b.thread_id)
        status = f"{b.status}, turn queued #{q.position} ({q.waited:.0f} s)" if q is not None else b.status
        rows.append((b.thread_id, b.instance_id, b.driver, status, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(b.updated_at)), b.cwd))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")
    return 0
