"""``paddock approve THREAD REQUEST ANSWER``: answer an open approval request.

ANSWER is a whole word of the set every approval prompt takes (``y``/``yes``/``accept``,
``s``/``session``, ``n``/``no``/``decline``, ``c``/``cancel``, or a decision name). The request
is shown with what it is about before the answer is sent."""

from __future__ import annotations

import argparse

from paddock.cli._answers import choices, describe_request, parse_answer
from paddock.cli._common import write
from paddock.cli._connect import connect
from paddock.cli._errors import explain

HELP = "answer an open approval request (see `paddock requests`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("thread", help="thread id")
    parser.add_argument("request", help="request id (from `paddock requests`)")
    parser.add_argument("decision", metavar="ANSWER", help=f"one of: {choices(enter=False)}")
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--config", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from paddock.contract import PaddockError

    decision = parse_answer(args.decision) if args.decision.strip() else None
    if decision is None:
        write(f"paddock approve: {args.decision!r} is not an answer; answer one of: "
              f"{choices(enter=False)}\n", err=True)
        return 2
    rt, remote = connect(args, "approve")
    try:
        opened = next((e for e in rt.pending_requests(args.thread)
                       if e.request_id == args.request and e.type == "request.opened"), None)
        if opened is not None:
            write("? " + "\n".join(describe_request(opened)) + "\n")
        rt.respond_to_request(args.thread, args.request, decision, surface="cli")
    except PaddockError as exc:
        hint = "" if remote else " (no server owns this state directory; start one with `paddock serve`)"
        write(f"paddock approve: {explain(exc)}{hint}\n", err=True)
        return 1
    finally:
        rt.close()
    write(f"request {args.request} of thread {args.thread}: {decision}\n")
    return 0
