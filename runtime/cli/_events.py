"""``paddock events``: read the durable event log of a state directory.

The readable view is one line per event, each led by its ``seq``; the text of a message or of
reasoning is coalesced into one line per item (its deltas are not lines of their own)."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from paddock.cli._common import event_json, format_event, handle_termination, said, stop_if_unread, write
from paddock.cli._places import announce, state_dir_of

if TYPE_CHECKING:
    from paddock.client import RemoteRuntime
    from paddock.contract import Event

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


_TEXT_KINDS = {"assistant_message": "assistant", "reasoning": "reasoning"}
_STREAMS = {"assistant_text": "assistant"}


def _one_line(text: str) -> str:
    return text.replace("\r", "").replace("\n", "\\n")


def _summary(value: Any) -> str:
    """A short readable form of a configuration value (lists of options show their ids)."""
    if isinstance(value, list):
        names = [str(v.get("id") or v.get("name") or v.get("value") or "?") if isinstance(v, dict) else str(v)
                 for v in value]
        more = f" +{len(names) - 6}" if len(names) > 6 else ""
        return "[" + ", ".join(names[:6]) + more + "]"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Readable:
    """The readable view: ``feed`` each event with its seq, ``flush`` when the stream is idle or
    ends; both return the lines to print. Used from one thread."""

    def __init__(self) -> None:
        self._text: dict[tuple[str, str | None, str], tuple[int, list[str]]] = {}

    def feed(self, seq: int, event: Event) -> list[str]:
        from paddock.contract import ContentDelta

        if isinstance(event, ContentDelta):
            key = (event.thread_id, event.item_id, event.stream)
            first, parts = self._text.setdefault(key, (seq, []))
            parts.append(event.delta)
            return []
        who = f"[{event.thread_id}]"
        if event.type in ("item.started", "item.completed") and event.kind in _TEXT_KINDS:
            if event.type == "item.started":
                return []
            stream = "assistant_text" if event.kind == "assistant_message" else "reasoning"
            buffered = self._text.pop((event.thread_id, event.item_id, stream), None)
            text = event.text if event.text is not None else "".join(buffered[1]) if buffered else ""
            return [*self.flush(), f"{seq:>8} {who} {_TEXT_KINDS[event.kind]}: {_one_line(text)}"]
        out = self.flush()
        if event.type == "session.configured":
            parts = [f"{key} {_summary(value)}" for key, value in event.config.items()]
            return [*out, f"{seq:>8} {who} session configured: " + ("; ".join(parts) or "(nothing)")]
        if event.type == "item.updated":
            return [*out, f"{seq:>8} {who} … {event.kind} {event.status or 'updated'}{said(event.title)}"]
        return [*out, f"{seq:>8} {format_event(event) or event_json(event)}"]

    def flush(self) -> list[str]:
        """Lines for text whose item has not completed (yet)."""
        out = [f"{first:>8} [{thread}] {_STREAMS.get(stream, stream)}: {_one_line(''.join(parts))}"
               for (thread, _, stream), (first, parts) in self._text.items()]
        self._text.clear()
        return out


def run(args: argparse.Namespace) -> int:
    from paddock.actors import LogReader
    from paddock.contract import EVENT_TYPES, decode_event

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
    view = Readable()
    next_seq = args.from_seq
    try:
        while True:
            rows = reader.read(next_seq, 2**62, 5000)
            for seq, body in rows:
                if args.json:
                    write(body.decode() + "\n")
                else:
                    _print(view.feed(seq, decode_event(body)))
                next_seq = seq + 1
            if len(rows) == 5000:
                continue
            _print(view.flush())
            if not args.follow:
                return 0
            stop_if_unread()
            time.sleep(0.2)  # another process writes the log; SQLite has no cross-process wake-up
    except KeyboardInterrupt:
        return 0
    finally:
        reader.close()


def _print(lines: list[str]) -> None:
    if lines:
        write("\n".join(lines) + "\n")


def _follow(args: argparse.Namespace, remote: RemoteRuntime) -> int:
    from paddock.cli._errors import explain
    from paddock.contract import PaddockError

    view = Readable()
    try:
        with remote, remote.subscribe(thread_id=args.thread, instance_id=args.instance, types=args.types,
                                      from_seq=args.from_seq) as events:
            while True:
                event = events.get(timeout=0.2)
                if event is None:
                    if events.ended:
                        break
                    _print(view.flush())
                    stop_if_unread()
                elif args.json:
                    write(event_json(event) + "\n")
                else:
                    _print(view.feed(event.seq, event))
    except KeyboardInterrupt:
        return 0
    except PaddockError as exc:
        write(f"paddock events: {explain(exc)}\n", err=True)
        return 1
    return 0
