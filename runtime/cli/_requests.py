"""``paddock requests``: the approval and user-input requests still open, across threads."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from paddock.cli._answers import describe_request
from paddock.cli._common import event_json, write
from paddock.cli._connect import connect

if TYPE_CHECKING:
    from paddock._operations._pending import PendingRequest

HELP = "list the approval and user-input requests still open (across threads, from the server)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--thread", help="only this thread")
    parser.add_argument("--json", action="store_true", help="print each request's event as a JSON line")


def describe(event: PendingRequest) -> list[str]:
    """What a request asks: its title, then one line per detail it carries."""
    if event.type == "user-input.requested":
        return ["; ".join(q.question for q in event.questions) or "user input"]
    lines = describe_request(event, indent="")
    return [lines[0].split(": ", 1)[1], *lines[1:]]


def run(args: argparse.Namespace) -> int:
    rt, remote = connect(args, "requests")
    try:  # a PaddockError reaches main(), which prints it explained and returns 1
        pending = rt.pending_requests(args.thread)
    finally:
        rt.close()
    if args.json:
        for event in pending:
            write(event_json(event) + "\n")
        return 0
    if not pending:
        write("no open requests" + ("" if remote else " (no server owns this state directory, so no session is live)") + "\n")
        return 0
    rows = [("thread", "request", "kind", ["asks"])]
    for e in pending:
        kind = "user-input" if e.type == "user-input.requested" else e.kind
        rows.append((e.thread_id, e.request_id or "", kind, describe(e)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        lead = "  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  "
        write(lead + r[3][0] + "\n")
        for detail in r[3][1:]:  # every detail the request carries, under its title
            write(" " * len(lead) + detail + "\n")
    return 0
