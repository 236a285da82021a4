"""``paddock compact THREAD``: summarize a thread's native history to free context
(``Runtime.compact_thread``), waiting for the agent's compaction to end."""

from __future__ import annotations

import argparse

from paddock.cli._common import add_runtime_options, write_answer
from paddock.cli._connect import call_once

HELP = "summarize a thread's history to free context (codex, claude, opencode)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)
    parser.add_argument("thread", help="thread id")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the compaction")


def run(args: argparse.Namespace) -> int:
    from paddock.cli._threadops import compact

    done = call_once(args, "compact", lambda rt: compact(rt, args.thread, timeout=args.timeout))
    if done is None:
        return 1
    ok, said = done
    write_answer(args, {"thread_id": args.thread, "compacted": ok, "message": said}, said + "\n")
    return 0 if ok else 1
