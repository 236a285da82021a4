"""``paddock approve THREAD REQUEST DECISION``: answer an open approval request."""

from __future__ import annotations

import argparse

from paddock.cli._common import write
from paddock.cli._connect import connect

HELP = "answer an open approval request (see `paddock requests`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("thread", help="thread id")
    parser.add_argument("request", help="request id (from `paddock requests`)")
    parser.add_argument("decision", choices=["accept", "accept_for_session", "decline", "cancel"])
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--config", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from paddock.contract import PaddockError

    rt, remote = connect(args)
    try:
        rt.respond_to_request(args.thread, args.request, args.decision)
    except PaddockError as exc:
        hint = "" if remote else " (no server owns this state directory; start one with `paddock serve`)"
        write(f"paddock approve: {exc}{hint}\n", err=True)
        return 1
    finally:
        rt.close()
    write(f"request {args.request} of thread {args.thread}: {args.decision}\n")
    return 0
