"""``paddock run``: one turn on one instance, streamed as a readable view (or JSONL)."""

from __future__ import annotations

import argparse
import os
import sys
import uuid

from paddock.cli._common import add_runtime_options, event_json, format_event, handle_termination, write
from paddock.cli._connect import connect

HELP = "send one prompt to an instance and stream what the agent does"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)
    parser.add_argument("--instance", default="local", help="instance id (default: local)")
    parser.add_argument("--cwd", default=".", help="workspace directory (default: .)")
    parser.add_argument("--thread", help="thread id (default: a new one; reuse one to resume it)")
    parser.add_argument(
        "--mode",
        default="approval-required",
        choices=["approval-required", "auto-accept-edits", "full-access"],
        help="runtime mode (default: approval-required)",
    )
    parser.add_argument(
        "--approve",
        choices=["ask", "accept", "accept_for_session", "decline", "cancel"],
        default=None,
        help="how to answer approvals: ask in a TTY (default there), else this decision (default decline)",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the turn")
    parser.add_argument("prompt", nargs="+", help="the prompt (directives like '@chunks 5' work with the local agent)")


def _decide(args: argparse.Namespace, event) -> str:
    approve = args.approve or ("ask" if sys.stdin.isatty() else "decline")
    if approve != "ask":
        return approve
    write(f"\nApprove {event.kind} {event.title or event.detail or ''}? [y]es / [s]ession / [n]o / [c]ancel: ")
    answer = sys.stdin.readline().strip().lower()[:1]
    return {"y": "accept", "s": "accept_for_session", "c": "cancel"}.get(answer, "decline")


def run(args: argparse.Namespace) -> int:
    handle_termination()
    text = " ".join(args.prompt).replace("\\n", "\n")
    thread_id = args.thread or f"run-{uuid.uuid4().hex[:8]}"
    rt, _ = connect(args)  # the owning server when one runs, else in-process
    state = "failed"
    turn_id = None
    try:
        # Subscribed before the session starts: a resume that failed (runtime.warning, then
        # session.started with resume_failed) is shown, not only the turn.
        with rt.subscribe(thread_id=thread_id) as events:
            rt.start_session(thread_id, instance=args.instance, cwd=os.path.abspath(args.cwd), runtime_mode=args.mode)
            turn = rt.send_turn(thread_id, text)
            turn_id = turn.turn_id
            in_text = False
            for event in events:
                if args.json:
                    write(event_json(event) + "\n")
                elif event.type == "content.delta" and event.stream == "assistant_text":
                    write(event.delta)
                    in_text = True
                    continue
                else:
                    line = format_event(event)
                    if line:
                        write(("\n" if in_text else "") + line + "\n")
                        in_text = False
                if event.type == "request.opened":
                    rt.respond_to_request(thread_id, event.request_id, _decide(args, event))
                elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                    state = event.state
                    break
    except KeyboardInterrupt:
        write("\ninterrupted; closing\n", err=True)
        if turn_id:
            try:
                rt.interrupt_turn(thread_id, turn_id, timeout=2.0)
            except Exception:
                pass
        rt.close()
        return 130
    except Exception as exc:
        from paddock.contract import PaddockError

        if not isinstance(exc, PaddockError):
            raise
        write(f"paddock run: {exc}\n", err=True)
        rt.close()
        return 1
    rt.close()
    return 0 if state == "completed" else 1
