"""``paddock fork THREAD NEW``: copy a thread into a new one (``Runtime.fork_thread``): natively
where the instance copies sessions, else (and with ``--instance`` naming another instance) as a
hand-off of its transcript."""

from __future__ import annotations

import argparse

from paddock.cli._common import add_runtime_options, write_answer
from paddock.cli._connect import call_once

HELP = "copy a thread into a new one (natively where the agent can, else by handing its transcript over)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)
    parser.add_argument("thread", help="the thread to copy")
    parser.add_argument("new_thread", metavar="NEW", help="the new thread's id")
    parser.add_argument("--at-turn", type=int, help="keep only turns 1..N of the source")
    parser.add_argument("--instance", help="run the copy on this instance (another one: a hand-off)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the copy to start")


def run(args: argparse.Namespace) -> int:
    from paddock.cli._target import resume_hint
    from paddock.cli._threadops import fork

    done = call_once(args, "fork", lambda rt: fork(rt, args.thread, args.new_thread, at_turn=args.at_turn,
                                                    instance=args.instance, timeout=args.timeout))
    if done is None:
        return 1
    session, said = done
    write_answer(args, {"thread_id": session.thread_id, "instance_id": session.instance_id, "driver": session.driver,
                        "from": args.thread},
                 f"{said}\ncontinue it with: {resume_hint(args, session.instance_id, session.thread_id)}\n")
    return 0
