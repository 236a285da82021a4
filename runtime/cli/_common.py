"""Helpers shared by the CLI subcommands: runtime options, signals, event formatting."""

from __future__ import annotations

import argparse
import errno
import json
import os
import select
import signal
import stat
import sys
from typing import Any

import msgspec

__all__ = ["add_runtime_options", "format_event", "handle_termination", "said", "stop_if_unread", "write"]


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    from paddock.cli._places import CONFIG_HELP

    parser.add_argument("--config", help=CONFIG_HELP)
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of a readable view")


def handle_termination() -> None:
    """Make SIGTERM and SIGHUP close the runtime like Ctrl-C does (raise KeyboardInterrupt in
    the main thread)."""

    def _raise(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, _raise)
        except (ValueError, OSError):  # not the main thread, or unsupported
            pass


_json = msgspec.json.Encoder()


def event_json(event: Any) -> str:
    return _json.encode(event).decode()


def stop_if_unread() -> None:
    """Raise :class:`BrokenPipeError` when stdout is a pipe whose reader has gone (``| head``
    took its lines): a follower calls it while idle, so it ends at once rather than at its next
    write (``main`` turns the error into a quiet exit 0). A terminal or a file never raises."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):
        return
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR and POLLHUP are always reported
    if any(flags & (select.POLLERR | select.POLLHUP) for _, flags in poller.poll(0)) and stat.S_ISFIFO(os.fstat(fd).st_mode):
        raise BrokenPipeError(errno.EPIPE, "stdout's reader has gone")


def said(text: str | None) -> str:
    """``": text"`` after a line's head, or nothing when ``text`` is empty (no dangling colon)."""
    return f": {text}" if text else ""


def format_event(event: Any) -> str | None:
    """One readable line for an event, or ``None`` for events shown inline (text deltas)."""
    t = event.type
    who = f"[{event.thread_id}]"
    if t == "session.started":
        how = " (resumed)" if event.resumed else " (resume failed, fresh session)" if event.resume_failed else ""
        return f"{who} session started on {event.instance_id}{how}"
    if t == "session.exited":
        code = f", exit code {event.exit_code}" if event.exit_code is not None else ""
        return f"{who} session exited{said(event.reason)}{code}"
    if t == "turn.started":
        return f"{who} turn {event.turn_id} started"
    if t == "turn.completed":
        extra = f": {event.error}" if event.error else ""
        return f"{who} turn {event.turn_id} {event.state}{extra}{_turn_usage(event.usage)}"
    if t == "turn.plan.updated":
        return f"{who} plan: " + "; ".join(f"{s.step} ({s.status})" for s in event.steps)
    if t == "turn.aborted":
        return f"{who} turn {event.turn_id} aborted{said(event.reason)}"
    if t == "item.started" and event.kind not in ("assistant_message", "reasoning"):
        return f"{who} ▶ {event.kind}{said(event.title)}"
    if t == "item.completed" and event.kind not in ("assistant_message", "reasoning"):
        return f"{who} ■ {event.kind} {event.status}{said(event.title)}"
    if t == "request.opened":
        from paddock.cli._answers import request_line

        return f"{who} ? approval requested ({event.kind}): {request_line(event)}"
    if t == "request.resolved":
        return f"{who} approval {event.resolution}" + (f": {event.decision}" if event.decision else "")
    if t == "thread.token-usage.updated":
        # The counts are the thread's running totals, not the context in use: say so, and keep
        # the window apart, so "in 212874" next to "window 200000" reads as what it is.
        u = event.usage
        counts = [
            f"{label} {value}"
            for label, value in (("in", u.input_tokens), ("out", u.output_tokens), ("total", u.total_tokens))
            if value is not None
        ]
        text = "usage so far in the thread: " + (", ".join(counts) or "reported")
        if u.cost is not None:
            text += f", cost {u.cost:g}" + (f" {u.currency}" if u.currency else "")
        if u.context_window is not None:
            text += f"; context window {u.context_window}"
        return f"{who} {text}"
    if t in ("runtime.warning", "runtime.error"):
        return f"{who} {t.split('.')[1]}: {event.code}: {event.message}"
    return None


def _turn_usage(u: Any) -> str:
    """`` (this turn: in N, out M, cost C)`` from a turn's own usage, apart from the thread's
    running totals (``thread.token-usage.updated``)."""
    if u is None:
        return ""
    counts = [f"{label} {value}" for label, value in (("in", u.input_tokens), ("out", u.output_tokens)) if value is not None]
    if u.cost is not None:
        counts.append(f"cost {u.cost:g}" + (f" {u.currency}" if u.currency else ""))
    return f" (this turn: {', '.join(counts)})" if counts else ""


def write(text: str, *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text)
    stream.flush()


def write_answer(args: argparse.Namespace, answer: dict[str, Any], text: str) -> None:
    """A one-call command's result on stdout: ``answer`` as one JSON line under ``--json``, else
    ``text`` as it is."""
    write(json.dumps(answer) + "\n" if args.json else text)
