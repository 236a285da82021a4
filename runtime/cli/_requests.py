"""``paddock requests``: the approval and user-input requests still open, across threads;
``--resolved``: the most recent decisions, each with who decided (read from the event log)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from paddock.cli._answers import describe_request
from paddock.cli._common import event_json, write
from paddock.cli._connect import connect
from paddock.cli._places import announce, state_dir_of

if TYPE_CHECKING:
    from paddock._operations._pending import PendingRequest
    from paddock.contract import RequestResolved

HELP = "list the approval and user-input requests still open (across threads, from the server)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--thread", help="only this thread")
    parser.add_argument("--json", action="store_true", help="print each request's event as a JSON line")
    parser.add_argument("--resolved", action="store_true",
                        help="list recent decisions instead, with who decided (person, rule, host, session, mode)")
    parser.add_argument("--limit", type=int, default=20, help="with --resolved: how many (default 20)")


def describe(event: PendingRequest) -> list[str]:
    """What a request asks: its title, then one line per detail it carries."""
    if event.type == "user-input.requested":
        return ["; ".join(q.question for q in event.questions) or "user input"]
    lines = describe_request(event, indent="")
    return [lines[0].split(": ", 1)[1], *lines[1:]]


def decider(event: RequestResolved) -> str:
    """Who decided, readably: ``rule #2``, ``person (cli)``, ``host``, ``mode``, ... (``-``
    before the audit existed or when nobody answered)."""
    who = event.decided_by
    if who is None:
        return "-"
    if who == "rule":
        return f"rule #{event.rule_index}"
    if who == "person" and event.surface:
        return f"person ({event.surface})"
    return who


def run(args: argparse.Namespace) -> int:
    if args.resolved:
        return _resolved(args)
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


def _resolved(args: argparse.Namespace) -> int:
    """The last ``--limit`` resolutions in the event log (of ``--thread``), oldest first, each
    with the request it answered and who decided. Reads the log only: no server, no config."""
    from paddock.actors import LogReader
    from paddock.contract import RequestOpened, RequestResolved, decode_event

    db = state_dir_of(args) / "events.db"
    if not db.exists():
        write(f"paddock requests: no event log at {db}\n", err=True)
        return 1
    announce("requests", f"reading {db}")
    reader = LogReader(str(db), thread_id=args.thread, types=["request.opened", "request.resolved"])
    opened: dict[tuple[str, str], RequestOpened] = {}
    done: list[RequestResolved] = []
    limit = max(1, args.limit)
    try:
        next_seq = 1
        while True:
            rows = reader.read(next_seq, 2**62, 5000)
            for seq, body in rows:
                event = decode_event(body)
                key = (event.thread_id, event.request_id or "")
                if isinstance(event, RequestOpened):
                    opened[key] = event
                elif isinstance(event, RequestResolved):
                    done.append(event)
                    if len(done) > 4 * limit:  # keep memory bounded on a long log
                        for old in done[: -limit]:
                            opened.pop((old.thread_id, old.request_id or ""), None)
                        del done[: -limit]
                next_seq = seq + 1
            if len(rows) < 5000:
                break
    finally:
        reader.close()
    done = done[-limit:]
    if args.json:
        for event in done:
            write(event_json(event) + "\n")
        return 0
    if not done:
        write("no resolved requests in the event log\n")
        return 0
    table = [("thread", "request", "answer", "decided by", ["what"])]
    for e in done:
        asked = opened.get((e.thread_id, e.request_id or ""))
        answer = e.decision if e.resolution == "answered" and e.decision else e.resolution
        what = describe(asked) if asked is not None else ["(request not in the log)"]
        if e.decided_by == "rule" and e.rule:
            what = [*what, f"rule: {e.rule}"]
        table.append((e.thread_id, e.request_id or "", answer, decider(e), what))
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    for r in table:
        lead = "  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  "
        write(lead + r[4][0] + "\n")
        for detail in r[4][1:]:
            write(" " * len(lead) + detail + "\n")
    return 0
