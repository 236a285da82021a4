"""``paddock chat``: a multi-turn REPL on one thread, streamed, with inline approvals.

Talks to the server that owns the state directory when one runs (the session then outlives the
chat), else to a Runtime in this process. Everything runs in the main thread: it waits on the
thread's subscription in short slices and polls stdin (its file descriptor, unbuffered, so
``select`` tells the truth) in between.

Approvals: in a terminal each request is shown with what it is about (title and every detail it
carries) and asked until a whole-word answer (see :mod:`paddock.cli._answers`); a line typed
before the prompt showed is never taken as the answer. Without a terminal the ``--approve``
policy answers (default decline) and every piped line stays a message. A request answered
elsewhere clears its prompt.

During a turn a line answers the request being asked, or is ``/steer TEXT``, ``/stop`` or
``/interrupt``; any other line is queued and sent after the turn (type-ahead). From a pipe every
line waits for the turn (but the answer to a question the agent asks), so a script runs in
order. Ctrl-C interrupts the running turn, never the session; at the prompt it only reminds how
to leave (Ctrl-D or ``/quit``). Changing the mode or model restarts the session, never the chat.
In a terminal the output has colour and a spinner; in a pipe it is plain text.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections import deque
from typing import TYPE_CHECKING

from paddock.cli._answers import ApprovalDesk, add_approve_option, approve_policy, choices
from paddock.cli._attach import attachment_of, model_lines
from paddock.cli._common import format_event, write
from paddock.cli._connect import connect
from paddock.cli._errors import explain
from paddock.cli._handoff import Handoff, add_handoff_options, handoff_arguments
from paddock.cli._input import LineInput
from paddock.cli._chat_threadops import HELP_LINES as THREAD_HELP
from paddock.cli._chat_threadops import thread_command
from paddock.cli._places import CONFIG_HELP
from paddock.cli._target import resume_hint, thread_target

if TYPE_CHECKING:
    from paddock import Runtime, Subscription
    from paddock.cli._answers import Style
    from paddock.client import RemoteRuntime, RemoteSubscription
    from paddock.contract import Attachment, Event, UserInputRequested

HELP = "chat with an instance: multi-turn, streamed, inline approvals, Ctrl-C interrupts the turn"

_HELP_TEXT = f"""commands:
  /model NAME      use model NAME for the next turns (/model default: the instance's own)
  /mode MODE       default | plan (interaction), or approval-required | auto-accept-edits | full-access
  /models          list the instance's models
  /attach FILE     attach FILE (an image, else a text file in the workspace) to the next message
  /steer TEXT      add TEXT to the running turn (or interrupt it and send TEXT)
  /interrupt       interrupt the running turn (as Ctrl-C)
  /stop            stop the thread's session and leave
{THREAD_HELP}
  /quit            leave (Ctrl-D too); the thread resumes with --instance and --thread
approvals: {choices()}; s asks to confirm
a typed \\n in a message is a new line"""

_SPIN = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help=CONFIG_HELP)
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--instance", help="instance id (default: the thread's, else local)")
    parser.add_argument("--thread", help="thread id (default: a new one; reuse one to resume it)")
    parser.add_argument("--cwd", help="workspace directory (default: the thread's, else .)")
    parser.add_argument("--mode", default="approval-required",
                        choices=["approval-required", "auto-accept-edits", "full-access"],
                        help="runtime mode (default: approval-required)")
    parser.add_argument("--model", help="model for the turns (default: the instance's)")
    add_approve_option(parser)
    add_handoff_options(parser)
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                        help="colour and spinner (auto: when stdout is a terminal)")


class _View:
    """Output: text streams inline, every other note on its own line; colour and spinner only
    when ``fancy``."""

    def __init__(self, fancy: bool) -> None:
        self.fancy = fancy
        self.col0 = True
        self._spun = False
        self._frame = 0
        self._last_spin = 0.0

    def paint(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.fancy else text

    def _unspin(self) -> None:
        if self._spun:
            write("\r\x1b[K")
            self._spun = False

    def text(self, delta: str, code: str | None = None) -> None:
        if not delta:
            return
        self._unspin()
        write(self.paint(code, delta) if code else delta)
        self.col0 = delta.endswith("\n")

    def line(self, text: str, code: str | None = None) -> None:
        self._unspin()
        write(("" if self.col0 else "\n") + (self.paint(code, text) if code else text) + "\n")
        self.col0 = True

    def prompt(self, text: str) -> None:
        self._unspin()
        write(("" if self.col0 else "\n") + self.paint("1;32", text))
        self.col0 = False

    def answered(self) -> None:
        """The user pressed Enter (a terminal echoed the newline)."""
        self.col0 = True

    def spin(self) -> None:
        now = time.monotonic()
        if not self.fancy or not self.col0 or now - self._last_spin < 0.08:
            return
        self._last_spin = now
        self._frame = (self._frame + 1) % len(_SPIN)
        write(f"\r{self.paint('36', _SPIN[self._frame])} ")
        self._spun = True


class _Leave(Exception):
    pass


class _Chat:
    """The chat's state; every method runs in the main thread."""

    def __init__(self, rt: Runtime | RemoteRuntime, remote: bool, args: argparse.Namespace, thread_id: str,
                 view: _View, inp: LineInput, interactive: bool, handoff: Handoff) -> None:
        self.rt = rt
        self.remote = remote
        self.args = args
        self.handoff = handoff
        self.thread_id = thread_id
        self.view = view
        self.inp = inp
        self.interactive = interactive
        self.runtime_mode = args.mode
        self.interaction_mode: str | None = None
        self.model: str | None = args.model
        self.instance: str | None = None
        self.cwd: str | None = None
        self.queued: deque[str] = deque()
        self.attachments: list[Attachment] = []
        """What /attach collected for the next message."""
        self.sub: Subscription | RemoteSubscription | None = None
        self.stopped = False
        self.desk = ApprovalDesk(rt, thread_id, approve_policy(args, interactive), forced=args.approve is not None,
                                 say=self.say, before_ask=self.take_typed_ahead)
        self.questions: dict[str, UserInputRequested] = {}
        """The agent's open questions in this turn (a typed line answers the oldest)."""
        self.answered: set[str] = set()

    # session ---------------------------------------------------------------------------------

    def start(self) -> None:
        from paddock.contract import PaddockError

        try:
            if self.instance is None or self.cwd is None:
                target = thread_target(self.rt, self.args, self.thread_id)
                if target.note:
                    self.view.line(f"paddock chat: {target.note}", "33")
                self.instance, self.cwd = target.instance, target.cwd
            session = self.rt.start_session(self.thread_id, instance=self.instance, cwd=self.cwd,
                                            runtime_mode=self.runtime_mode, model=self.model,  # type: ignore[arg-type]
                                            **self.handoff)
        except PaddockError as exc:
            self.view.line(f"paddock chat: {explain(exc)}", "31")
            raise _Leave from None
        where = "server" if self.remote else "in-process"
        self.view.line(
            f"paddock chat · {session.instance_id} ({session.driver}) · thread {self.thread_id} · "
            f"{self.runtime_mode} · {where}" + (" · resumed" if session.resumed else ""), "2")
        if self.interactive and self.sub is None:
            self.view.line("/help for commands · Ctrl-C interrupts a turn · Ctrl-D leaves", "2")
        if self.sub is None:
            self.sub = self.rt.subscribe(thread_id=self.thread_id)

    # the loop --------------------------------------------------------------------------------

    def loop(self) -> None:
        while True:
            if self.queued:
                line = self.queued.popleft()
            else:
                if self.interactive:
                    self.view.prompt("you> ")
                try:
                    line = self.inp.line(None) or ""
                except EOFError:
                    return
                except KeyboardInterrupt:
                    self.view.line("(Ctrl-D or /quit to leave)", "2")
                    continue
                self.view.answered()
            text = line.strip().replace("\\n", "\n")  # one input line; a typed \n is a newline
            if not text:
                continue
            if text.startswith("/"):
                self.command(text)
            else:
                self.turn(text)

    def command(self, text: str) -> None:
        from paddock.contract import INTERACTION_MODES, RUNTIME_MODES, PaddockError

        name, _, arg = text.partition(" ")
        arg = arg.strip()
        if name in ("/quit", "/exit"):
            raise _Leave
        if name == "/help":
            self.view.line(_HELP_TEXT, "2")
        elif name == "/model":
            self.model = None if arg in ("", "default") else arg
            self.view.line(f"model: {self.model or 'the instance default'}", "2")
        elif name == "/mode":
            if arg in INTERACTION_MODES:
                self.interaction_mode = None if arg == "default" else arg
                self.view.line(f"interaction mode: {arg}", "2")
            elif arg in RUNTIME_MODES:
                self.runtime_mode = arg
                try:
                    self.start()  # a new runtime mode restarts the session from its cursor
                except _Leave:
                    pass
            else:
                self.view.line(f"/mode takes one of {', '.join(INTERACTION_MODES + RUNTIME_MODES)}", "31")
        elif name == "/models":
            self.show_models()
        elif name == "/attach":
            self.attach(arg)
        elif name == "/stop":
            try:
                self.rt.stop_session(self.thread_id)
            except PaddockError as exc:
                self.view.line(f"error: {explain(exc)}", "31")
            self.stopped = True
            self.view.line(f"thread {self.thread_id} stopped", "2")
            raise _Leave
        elif name in ("/fork", "/compact"):
            thread_command(self, name, arg)
        elif name in ("/steer", "/interrupt"):
            self.view.line("no turn is running", "2")
        else:
            self.view.line(f"unknown command {name}; /help lists them", "31")

    def show_models(self) -> None:
        from paddock.contract import PaddockError

        try:
            models = self.rt.models(self.instance or "local")
        except PaddockError as exc:
            self.view.line(f"error: {explain(exc)}", "31")
            return
        for line in model_lines(models):
            self.view.line(line, "2")

    def attach(self, path: str) -> None:
        if not path:
            self.view.line("/attach takes a file path", "31")
            return
        if not os.path.isfile(os.path.expanduser(path)):
            self.view.line(f"no file {path}", "31")
            return
        self.attachments.append(attachment_of(path))
        self.view.line(f"attached {path} to the next message ({len(self.attachments)} attached)", "2")

    def turn(self, text: str) -> None:
        from paddock.contract import PaddockError

        try:
            result = self.rt.send_turn(self.thread_id, text, interaction_mode=self.interaction_mode,  # type: ignore[arg-type]
                                       model=self.model, attachments=self.attachments)
        except PaddockError as exc:
            self.view.line(f"error: {explain(exc)}", "31")
            return
        self.attachments = []
        if result.queued is not None:  # admission holds it: max_running_turns is reached
            self.view.line(f"queued (position {result.queued}): it starts when a turn ends", "2")
        self.follow(result.turn_id)

    def follow(self, turn_id: str) -> None:
        """Stream the turn until its ``turn.completed``; answer approvals, take /steer."""
        from paddock.contract import PaddockError

        assert self.sub is not None
        self.desk.reset()
        self.questions.clear()
        last_poll = 0.0
        while True:
            try:
                event = self.sub.get(timeout=0.05)
                if event is None:
                    if self.sub.ended:
                        self.view.line("the event stream ended (the server closed?)", "31")
                        raise _Leave
                    self.desk.idle()
                    self.view.spin()
                else:
                    turn_id, done = self.show(event, turn_id)
                    if done:
                        return
                    if self.queued and self._question() is not None:  # a line piped ahead answers a question
                        turn_id = self.during(self.queued.popleft(), turn_id, queued=True)
                if time.monotonic() - last_poll >= 0.05 and not self.inp.eof:
                    last_poll = time.monotonic()
                    try:
                        line = self.inp.line(0)
                    except EOFError:
                        line = None
                    if line is not None:
                        self.view.answered()
                        turn_id = self.during(line.strip(), turn_id)
            except KeyboardInterrupt:
                self.view.line("^C: interrupting the turn", "33")
                try:
                    self.rt.interrupt_turn(self.thread_id, turn_id, timeout=10)
                except PaddockError as exc:
                    self.view.line(f"error: {explain(exc)}", "31")

    def _question(self) -> tuple[str, UserInputRequested] | None:
        return next(((k, v) for k, v in self.questions.items() if k not in self.answered), None)

    def during(self, text: str, turn_id: str, queued: bool = False) -> str:
        """A line typed while the turn runs; returns the turn to follow (a steer may start one).
        ``queued``: the line was typed ahead and waited in the queue."""
        from paddock.contract import PaddockError

        command = text.startswith("/")
        if self.desk.asking is not None and not command and not queued:
            self.desk.feed(text)
            return turn_id
        if not text:
            return turn_id
        question = self._question()
        answer = question is not None and not command
        # Lines typed ahead keep their order; from a pipe (a script) every line but an answer
        # waits for the turn to end, so "/stop" on the next line does not cut the turn short.
        if not answer and not queued and (self.queued or not self.interactive):
            self.queued.append(text)
            return turn_id
        name, _, arg = text.partition(" ")
        try:
            if answer and question is not None:
                request_id, opened = question
                self.answered.add(request_id)
                self.rt.respond_to_user_input(self.thread_id, request_id, {q.id: text for q in opened.questions})
                return turn_id
            if name == "/steer" and arg:
                result = self.rt.steer_turn(self.thread_id, arg)
                self.view.line(f"steered (turn {result.turn_id})", "2")
                return result.turn_id
            if name == "/interrupt":
                self.rt.interrupt_turn(self.thread_id, turn_id, timeout=10)
                return turn_id
            if name == "/stop":
                self.command("/stop")
        except PaddockError as exc:
            self.view.line(f"error: {explain(exc)}", "31")
            return turn_id
        self.queued.append(text)
        if self.interactive:
            self.view.line("(queued: it goes after this turn)", "2")
        return turn_id

    # approvals -------------------------------------------------------------------------------

    _STYLES = {"request": "1;33", "detail": "33", "hint": "2", "note": "33", "answer": "33"}

    def say(self, text: str, style: Style) -> None:
        if style == "prompt":
            self.view.prompt(text)
        else:
            self.view.line(text, self._STYLES[style])

    def take_typed_ahead(self) -> None:
        """Before an approval prompt shows: lines already typed are messages, not answers."""
        while not self.inp.eof:
            try:
                early = self.inp.line(0)
            except EOFError:
                return
            if early is None:
                return
            if early.strip():
                self.queued.append(early.strip())
                self.view.line("(queued: it goes after this turn)", "2")

    # events ----------------------------------------------------------------------------------

    def show(self, event: Event, turn_id: str) -> tuple[str, bool]:
        if event.type == "content.delta":
            if event.stream == "assistant_text":
                self.view.text(event.delta)
            elif event.stream == "reasoning" and self.view.fancy:
                self.view.text(event.delta, "2;3")
            return turn_id, False
        if event.type == "turn.started":
            return event.turn_id or turn_id, False
        if event.type == "turn.completed" and event.turn_id == turn_id:
            extra = f": {event.error}" if event.error else ""
            code = "2" if event.state == "completed" else "33"
            self.view.line(f"· turn {event.state}{extra}", code)
            return turn_id, True
        if event.type == "request.opened":
            self.desk.opened(event)
            return turn_id, False
        if event.type == "user-input.requested" and event.request_id:
            self.questions[event.request_id] = event
            questions = "; ".join(q.question for q in event.questions)
            self.view.line(f"? {questions}", "1;33")
            if self.interactive:
                self.view.prompt("answer> ")
            return turn_id, False
        if event.type == "request.resolved" and event.request_id:
            self.desk.resolved(event.request_id, event.decision or event.resolution)
            return turn_id, False
        if event.type == "user-input.resolved" and event.request_id:
            self.questions.pop(event.request_id, None)
            if event.request_id not in self.answered:
                self.view.line(f"  (answered elsewhere: {event.resolution})", "33")
            return turn_id, False
        if event.type == "session.exited":
            if self.rt.has_session(self.thread_id):
                return turn_id, False  # the session before a restart (/mode, /model): the chat goes on
            self.view.line(f"session exited: {event.reason}", "31")
            if event.reason not in ("stopped",):
                return turn_id, True
            self.stopped = True
            raise _Leave
        line = format_event(event)
        if line:
            self.view.line(line.replace(f"[{self.thread_id}] ", "", 1), "2")
        return turn_id, False


def run(args: argparse.Namespace) -> int:
    interactive = sys.stdin.isatty()
    fancy = args.color == "always" or (args.color == "auto" and sys.stdout.isatty() and os.environ.get("TERM") != "dumb")
    view = _View(fancy)
    handoff = handoff_arguments(args)  # a bad file fails before anything starts
    rt, remote = connect(args, "chat")
    thread_id = args.thread or f"chat-{uuid.uuid4().hex[:8]}"
    chat = _Chat(rt, remote, args, thread_id, view, LineInput(sys.stdin.fileno()), interactive, handoff)
    code = 0
    try:
        chat.start()
        chat.loop()
    except _Leave:
        code = 1 if chat.sub is None else 0
    except KeyboardInterrupt:
        pass
    finally:
        if chat.sub is not None:
            chat.sub.close()
        if chat.sub is not None and not chat.stopped and chat.instance is not None:
            hint = resume_hint(args, chat.instance, thread_id)
            if remote:
                view.line(f"thread {thread_id} stays on the server; continue with: {hint}", "2")
            else:
                view.line(f"continue with: {hint}", "2")
        rt.close()
    return code
