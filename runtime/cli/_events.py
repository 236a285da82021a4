"""``paddock events``: read the durable event log of a state directory."""

from __future__ import annotations

import argparse
import time

from paddock.cli._common import event_json, format_event, handle_termination, write
from paddock.cli._places import announce, state_dir_of

HELP = "print events from the event log (optionally following new ones)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--thread", help="only this thread")
    parser.add_argument("--instance", help="only this instance")
    parser.add_argument("--type", action="append", dest="types", help="only this event type (repeatable)")
    parser.add_argument("--from-seq", type=int, default=1, help="first seq to print (default 1)")
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new events until Ctrl-C")
    parser.add_argument("--json", action="store_true", help="print JSON lines")
    parser.add_argument("--config", help=argparse.SUPPRESS)  # accepted as by every command; the log needs none


def run(args: argparse.Namespace) -> int:
    from paddock.actors import LogReader
    from paddock.contract import EVENT_TYPES, ContentDelta, decode_event

    handle_termination()
    if args.follow:
        from paddock.cli._connect import server_note, server_of

        remote = server_of(args)
        if remote is not None:  # the owner streams new events as they happen
            announce("events", server_note(args))
            return _follow(args, remote)
    db = state_dir_of(args) / "events.db"
    if not db.exists():
        write(f"paddock events: no event log at {db}\n", err=True)
        return 1
    if args.types:
        unknown = sorted(set(args.types) - EVENT_TYPES.keys())
        if unknown:
            write(f"paddock events: unknown event types {unknown}\n", err=True)
            return 2
    announce("events", f"reading {db} (the log needs no config)")
    reader = LogReader(str(db), thread_id=args.thread, instance_id=args.instance, types=args.types)
    next_seq = args.from_seq
    try:
        while True:
            rows = reader.read(next_seq, 2**62, 5000)
            for seq, body in rows:
                if args.json:
                    write(body.decode() + "\n")
                else:
                    event = decode_event(body)
                    line = format_event(event)
                    if line is None and isinstance(event, ContentDelta):
                        line = f"[{event.thread_id}] {event.stream}: {event.delta!r}"
                    write(f"{seq:>8} {line or event_json(event)}\n")
                next_seq = seq + 1
            if len(rows) == 5000:
                continue
            if not args.follow:
                return 0
            time.sleep(0.2)  # another process writes the log; SQLite has no cross-process wake-up
    except KeyboardInterrupt:
        return 0
    finally:
        reader.close()


def _follow(args: argparse.Namespace, remote) -> int:
    from paddock.cli._errors import explain
    from paddock.contract import ContentDelta, PaddockError

    try:
        with remote, remote.subscribe(thread_id=args.thread, instance_id=args.instance, types=args.types,
                                      from_seq=args.from_seq) as events:
            for event in events:
                if args.json:
                    write(event_json(event) + "\n")
                    continue
                line = format_event(event)
                if line is None and isinstance(event, ContentDelta):
                    line = f"[{event.thread_id}] {event.stream}: {event.delta!r}"
                write(f"{event.seq:>8} {line or event_json(event)}\n")
    except KeyboardInterrupt:
        return 0
    except PaddockError as exc:
        write(f"paddock events: {explain(exc)}\n", err=True)
        return 1
    return 0
