"""``paddock run``: one turn on one instance, streamed as a readable view (or JSONL).

Approvals: in a terminal (``--approve ask``, the default there) each request is shown with what
it is about and asked until a whole-word answer; a request answered elsewhere (``paddock approve``,
the dashboard) clears the prompt. Without a terminal the ``--approve`` policy answers (default
decline); stdin is never read.

Through a server the session is stopped once the turn ends (``--keep`` leaves it live); Ctrl-C
(or SIGTERM, SIGHUP) interrupts the turn and stops the session too, each within a bound, so an
interrupted run leaks no session and no agent in the server.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import TYPE_CHECKING

from paddock.cli._answers import ApprovalDesk, add_approve_option, approve_policy
from paddock.cli._attach import add_attach_option, attachments_of
from paddock.cli._common import add_runtime_options, event_json, format_event, handle_termination, write
from paddock.cli._connect import connect
from paddock.cli._errors import explain
from paddock.cli._handoff import add_handoff_options, handoff_arguments
from paddock.cli._input import LineInput
from paddock.cli._target import thread_target

if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.cli._answers import Style
    from paddock.client import RemoteRuntime
    from paddock.contract import Event

HELP = "send one prompt to an instance and stream what the agent does"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)
    parser.add_argument("--instance", help="instance id (default: the thread's, else local)")
    parser.add_argument("--cwd", help="workspace directory (default: the thread's, else .)")
    parser.add_argument("--thread", help="thread id (default: a new one; reuse one to resume it)")
    parser.add_argument(
        "--mode",
        default="approval-required",
        choices=["approval-required", "auto-accept-edits", "full-access"],
        help="runtime mode (default: approval-required)",
    )
    add_approve_option(parser)
    add_handoff_options(parser)
    add_attach_option(parser)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the turn")
    parser.add_argument("--keep", action="store_true",
                        help="through a server: keep the session live after the turn (default: stop it; "
                             "the thread resumes with --thread either way)")
    parser.add_argument("prompt", nargs="+", help="the prompt (directives like '@chunks 5' work with the local agent)")


def _poll(desk: ApprovalDesk, inp: LineInput | None) -> None:
    """Take a typed line, if one is there, as the answer to the request being asked."""
    if desk.asking is None or inp is None:
        return
    try:
        line = inp.line(0)
    except EOFError:
        line = ""  # the terminal closed its input: nobody is left to answer, so decline
    if line is not None:
        desk.feed(line)


STOP_TIMEOUT = 10.0
"""Seconds a one-shot run waits for the server to stop its session."""


def _stop_one_shot(rt: RemoteRuntime | Runtime, thread_id: str) -> None:
    """A one-shot run through a server ends its session, so no agent idles in the server."""
    from paddock.contract import PaddockError, SessionNotFoundError

    try:
        rt.stop_session(thread_id, timeout=STOP_TIMEOUT)
    except SessionNotFoundError:
        pass  # interrupted before its session started
    except PaddockError as exc:
        write(f"paddock run: the session stays live: {explain(exc)}\n", err=True)


def _show(args: argparse.Namespace, event: Event, in_text: bool) -> bool:
    """Print ``event``; returns whether the output now ends inside streamed text."""
    if args.json:
        write(event_json(event) + "\n")
        return False
    if event.type == "content.delta" and event.stream == "assistant_text":
        write(event.delta)
        return True
    if event.type == "request.opened":  # the desk shows it, with what it is about
        if in_text:
            write("\n")
        return False
    line = format_event(event)
    if line:
        write(("\n" if in_text else "") + line + "\n")
        return False
    return in_text


def run(args: argparse.Namespace) -> int:
    from paddock.contract import PaddockError

    handle_termination()
    text = " ".join(args.prompt).replace("\\n", "\n")
    thread_id = args.thread or f"run-{uuid.uuid4().hex[:8]}"
    handoff = handoff_arguments(args)  # a bad file fails before anything starts
    interactive = sys.stdin.isatty()
    policy = approve_policy(args, interactive)
    rt, remote = connect(args, "run")  # the owning server when one runs, else in-process
    turn_id = None
    try:
        # Subscribed before the session starts: a resume that failed (runtime.warning, then
        # session.started with resume_failed) is shown, not only the turn.
        with rt.subscribe(thread_id=thread_id) as events:
            target = thread_target(rt, args, thread_id)
            if target.note:
                write(f"paddock run: {target.note}\n", err=True)
            rt.start_session(thread_id, instance=target.instance, cwd=target.cwd, runtime_mode=args.mode, **handoff)
            turn = rt.send_turn(thread_id, text, attachments=attachments_of(args))
            turn_id = turn.turn_id
            if turn.queued is not None:  # admission holds it: max_running_turns is reached
                write(f"paddock run: the turn is queued (position {turn.queued}); it starts when a turn ends\n", err=True)
            inp = LineInput(sys.stdin.fileno()) if policy == "ask" else None

            def say(text: str, style: Style) -> None:  # --json keeps stdout to event lines
                write(text if style == "prompt" else text + "\n", err=args.json)

            desk = ApprovalDesk(rt, thread_id, policy, forced=args.approve is not None, say=say)
            in_text = False
            while True:
                event = events.get(timeout=0.05)
                if event is None:
                    if events.ended:
                        write("\npaddock run: the event stream ended (the server closed?)\n", err=True)
                        return 1
                    desk.idle()
                    _poll(desk, inp)
                    continue
                in_text = _show(args, event, in_text)
                if event.type == "request.opened":
                    desk.opened(event)
                elif event.type == "request.resolved" and event.request_id:
                    desk.resolved(event.request_id, event.decision or event.resolution)
                elif event.type == "turn.completed" and event.turn_id == turn_id:
                    if remote and not args.keep:
                        _stop_one_shot(rt, thread_id)
                    return 0 if event.state == "completed" else 1
                _poll(desk, inp)
    except KeyboardInterrupt:
        write("\ninterrupted; closing\n", err=True)
        if turn_id:
            try:
                rt.interrupt_turn(thread_id, turn_id, timeout=2.0)
            except PaddockError:
                pass
        if remote and not args.keep:
            _stop_one_shot(rt, thread_id)
        return 130
    except PaddockError as exc:
        write(f"paddock run: {explain(exc)}\n", err=True)
        return 1
    finally:
        rt.close()
