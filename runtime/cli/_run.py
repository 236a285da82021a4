"""``paddock run``: one turn on one instance, streamed as a readable view (or JSONL).

Approvals: in a terminal (``--approve ask``, the default there) each request is shown with what
it is about and asked until a whole-word answer; a request answered elsewhere (``paddock approve``,
the dashboard) clears the prompt. Without a terminal the ``--approve`` policy answers (default
decline); stdin is never read.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections import deque
from typing import TYPE_CHECKING

from paddock.cli._answers import Asking, add_approve_option, approve_policy, describe_request, policy_decision
from paddock.cli._common import add_runtime_options, event_json, format_event, handle_termination, write
from paddock.cli._connect import connect
from paddock.cli._errors import explain
from paddock.cli._input import LineInput
from paddock.cli._target import thread_target

if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.cli._answers import Policy
    from paddock.client import RemoteRuntime
    from paddock.contract import Event, RequestOpened

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
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the turn")
    parser.add_argument("prompt", nargs="+", help="the prompt (directives like '@chunks 5' work with the local agent)")


class _Approvals:
    """The open approval requests of the turn and the one being asked (main thread only)."""

    def __init__(self, rt: Runtime | RemoteRuntime, thread_id: str, policy: Policy, inp: LineInput | None,
                 json: bool) -> None:
        self.rt = rt
        self.json = json
        self.thread_id = thread_id
        self.policy = policy
        self.inp = inp
        self.waiting: deque[RequestOpened] = deque()
        self.asking: Asking | None = None
        self.ours: set[str] = set()

    def opened(self, event: RequestOpened) -> None:
        """Show the request; it is asked (or answered by the policy) when the stream is idle, so a
        request the runtime mode answered at once (its ``request.resolved`` follows in the same
        batch) is never asked."""
        self._say("? " + "\n".join(describe_request(event)) + "\n")
        self.waiting.append(event)

    def resolved(self, request_id: str, how: str) -> None:
        """A ``request.resolved``: clear its prompt when someone else answered it."""
        self.waiting = deque(e for e in self.waiting if e.request_id != request_id)
        if request_id in self.ours:
            return
        if self.asking is not None and self.asking.opened.request_id == request_id:
            self._say(f"\n  (answered elsewhere: {how})\n")
            self.asking = None

    def idle(self) -> None:
        """No event is waiting: answer by the policy, or ask the next request, or take a line."""
        if self.policy != "ask" or self.inp is None:
            while self.waiting:
                event = self.waiting.popleft()
                decision = policy_decision(self.policy, event)
                self._send(event, decision, f"  {decision} (--approve {self.policy})")
            return
        self._next()
        self.poll()

    def poll(self) -> None:
        """Take a typed line, if one is there, as the answer to the request being asked."""
        if self.asking is None or self.inp is None:
            return
        try:
            line = self.inp.line(0)
        except EOFError:
            line = ""  # the terminal closed its input: nobody is left to answer
        if line is None:
            return
        decision, note = self.asking.feed(line)
        if note:
            self._say(f"  {note}\n")
        if decision is not None:
            opened = self.asking.opened
            self.asking = None
            self._send(opened, decision, f"  {decision}")
            self._next()
        else:
            self._say(self.asking.prompt)

    def _next(self) -> None:
        if self.asking is not None or not self.waiting:
            return
        self.asking = Asking(self.waiting.popleft(), confirm_session=True)
        self._say(f"  {self.asking.hint()}\n{self.asking.prompt}")

    def _send(self, opened: RequestOpened, decision: str, shown: str) -> None:
        from paddock.contract import PaddockError

        assert opened.request_id is not None
        self.ours.add(opened.request_id)
        try:
            self.rt.respond_to_request(self.thread_id, opened.request_id, decision)  # type: ignore[arg-type]
        except PaddockError as exc:
            self._say(f"  not sent: {explain(exc)}\n")
            return
        self._say(shown + "\n")

    def _say(self, text: str) -> None:
        write(text, err=self.json)  # --json keeps stdout to event lines


def _show(args: argparse.Namespace, event: Event, in_text: bool) -> bool:
    """Print ``event``; returns whether the output now ends inside streamed text."""
    if args.json:
        write(event_json(event) + "\n")
        return False
    if event.type == "content.delta" and event.stream == "assistant_text":
        write(event.delta)
        return True
    if event.type == "request.opened":
        return in_text  # shown by the approval prompt, with what it is about
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
    interactive = sys.stdin.isatty()
    policy = approve_policy(args, interactive)
    rt, _ = connect(args, "run")  # the owning server when one runs, else in-process
    turn_id = None
    try:
        # Subscribed before the session starts: a resume that failed (runtime.warning, then
        # session.started with resume_failed) is shown, not only the turn.
        with rt.subscribe(thread_id=thread_id) as events:
            target = thread_target(rt, args, thread_id)
            if target.note:
                write(f"paddock run: {target.note}\n", err=True)
            rt.start_session(thread_id, instance=target.instance, cwd=target.cwd, runtime_mode=args.mode)
            turn = rt.send_turn(thread_id, text)
            turn_id = turn.turn_id
            inp = LineInput(sys.stdin.fileno()) if policy == "ask" else None
            approvals = _Approvals(rt, thread_id, policy, inp, args.json)
            in_text = False
            while True:
                event = events.get(timeout=0.05)
                if event is None:
                    if events.ended:
                        write("\npaddock run: the event stream ended (the server closed?)\n", err=True)
                        return 1
                    approvals.idle()
                    continue
                in_text = _show(args, event, in_text)
                if event.type == "request.opened":
                    approvals.opened(event)
                elif event.type == "request.resolved" and event.request_id:
                    approvals.resolved(event.request_id, event.decision or event.resolution)
                elif event.type == "turn.completed" and event.turn_id == turn_id:
                    return 0 if event.state == "completed" else 1
                approvals.poll()
    except KeyboardInterrupt:
        write("\ninterrupted; closing\n", err=True)
        if turn_id:
            try:
                rt.interrupt_turn(thread_id, turn_id, timeout=2.0)
            except PaddockError:
                pass
        return 130
    except PaddockError as exc:
        write(f"paddock run: {explain(exc)}\n", err=True)
        return 1
    finally:
        rt.close()
