"""``paddock compact THREAD``: summarize a thread's native history to free context
(``Runtime.compact_thread``), waiting for the agent's compaction to end."""

from __future__ import annotations

import argparse
import json

from paddock.cli._common import add_runtime_options, handle_termination, write
from paddock.cli._connect import connect
from paddock.cli._errors import explain

HELP = "summarize a thread's history to free context (codex, claude, opencode)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)
    parser.add_argument("thread", help="thread id")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the compaction")


def run(args: argparse.Namespace) -> int:
    from paddock.cli._threadops import compact
    from paddock.contract import PaddockError

    handle_termination()
    rt, _ = connect(args, "compact")
    try:
        ok, said = compact(rt, args.thread, timeout=args.timeout)
    except PaddockError as exc:
        write(f"paddock compact: {explain(exc)}\n", err=True)
        return 1
    finally:
        rt.close()
    if args.json:
        write(json.dumps({"thread_id": args.thread, "compacted": ok, "message": said}) + "\n")
    else:
        write(said + "\n")
    return 0 if ok else 1
