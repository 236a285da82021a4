"""``paddock diff THREAD [TURN]``: the files a worktree thread changed, as a unified diff from its
per-turn checkpoints (``Runtime.diff``). With TURN (its number, 1 for the first, or its id): that
turn's own diff; without: everything the thread changed since its worktree was made."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from paddock.cli._common import add_runtime_options, write_answer
from paddock.cli._connect import call_once

if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.client import RemoteRuntime

HELP = "print what a worktree thread's turns changed (a unified diff from its checkpoints)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)
    parser.add_argument("thread", help="thread id (its instance has workspace = \"worktree\")")
    parser.add_argument("turn", nargs="?", help="turn number (1 = the first) or turn id; default: the whole thread")
    parser.add_argument("--timeout", type=float, default=30.0)


def run(args: argparse.Namespace) -> int:
    def call(rt: Runtime | RemoteRuntime) -> tuple[str | None, str]:
        if args.turn is None:
            return None, rt.diff(args.thread, from_turn="base", timeout=args.timeout)
        turn = args.turn
        if turn.isdigit():
            turns = rt.read_thread(args.thread, timeout=args.timeout).turns
            number = int(turn)
            if not 1 <= number <= len(turns):
                from paddock.contract import ValidationError

                raise ValidationError("diff", f"turn {number}: the thread has {len(turns)} turn(s)",
                                      thread_id=args.thread)
            turn = turns[number - 1].turn_id
        return turn, rt.diff(args.thread, to_turn=turn, timeout=args.timeout)

    done = call_once(args, "diff", call)
    if done is None:
        return 1
    turn_id, diff = done
    write_answer(args, {"thread_id": args.thread, "turn_id": turn_id, "diff": diff}, diff)
    return 0
