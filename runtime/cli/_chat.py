"""``paddock chat``: a multi-turn REPL on one thread, streamed, with inline approvals.

Talks to the server that owns the state directory when one runs (the session then outlives the
chat), else to a Runtime in this process. Everything runs in the main thread: it waits on the
thread's subscription in short slices and polls stdin (its file descriptor, unbuffered, so
``select`` tells the truth) in between.

During a turn a line answers the oldest open approval, or is ``/steer TEXT``, ``/stop`` or
``/interrupt``; any other line is queued and sent after the turn (type-ahead). From a pipe every
line but an answer waits for the turn, so a script runs in order. Ctrl-C interrupts the running turn, never the session; at the prompt it only reminds how
to leave (Ctrl-D or ``/quit``). In a terminal the output has colour and a spinner; in a pipe it
is plain text.
"""

from __future__ import annotations

import argparse
import os
import select
import sys
import time
import uuid
from collections import deque
from typing import Any

from paddock.cli._common import format_event, write
from paddock.cli._connect import connect

HELP = "chat with an instance: multi-turn, streamed, inline approvals, Ctrl-C interrupts the turn"

_HELP_TEXT = """commands:
  /model NAME      use model NAME for the next turns (/model default: the instance's own)
  /mode MODE       default | plan (interaction), or approval-required | auto-accept-edits | full-access
  /steer TEXT      add TEXT to the running turn (or interrupt it and send TEXT)
  /interrupt       interrupt the running turn (as Ctrl-C)
  /stop            stop the thread's session and leave
  /quit            leave (Ctrl-D too); the thread resumes with --thread
approvals: y = accept, s = accept for the session, n = decline, c = cancel
a typed \\n in a message is a new line"""

_SPIN = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ANSWERS = {"y": "accept", "a": "accept", "s": "accept_for_session", "n": "decline", "d": "decline", "c": "cancel"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML config (default: $PADDOCK_CONFIG, else the built-in 'local' instance)")
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--instance", default="local", help="instance id (default: local)")
    parser.add_argument("--thread", help="thread id (default: a new one; reuse one to resume it)")
    parser.add_argument("--cwd", default=".", help="workspace directory (default: .)")
    parser.add_argument("--mode", default="approval-required",
                        choices=["approval-required", "auto-accept-edits", "full-access"],
                        help="runtime mode (default: approval-required)")
    parser.add_argument("--model", help="model for the turns (default: the instance's)")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                        help="colour and spinner (auto: when stdout is a terminal)")


class _Input:
    """Lines from a file descriptor, unbuffered by Python (so ``select`` sees every byte)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = b""
        self.eof = False

    def line(self, timeout: float | None) -> str | None:
        """The next line without its newline; ``None`` if none arrived within ``timeout``.
        Raises ``EOFError`` once the input ended and every line was taken."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if b"\n" in self._buf:
                head, self._buf = self._buf.split(b"\n", 1)
                return head.decode(errors="replace").rstrip("\r")
            if self.eof:
                if self._buf:
                    head, self._buf = self._buf, b""
                    return head.decode(errors="replace")
                raise EOFError
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.fd, 65536)
            if chunk:
                self._buf += chunk
            else:
                self.eof = True


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


def _unanswered(pending: dict[str, Any], ours: set[str]) -> tuple[str, Any] | None:
    """The oldest open request this chat has not answered yet."""
    return next(((k, v) for k, v in pending.items() if k not in ours), None)


class _Chat:
    def __init__(self, rt: Any, remote: bool, args: argparse.Namespace, thread_id: str, view: _View, inp: _Input,
                 interactive: bool) -> None:
        self.rt = rt
        self.remote = remote
        self.args = args
        self.thread_id = thread_id
        self.view = view
        self.inp = inp
        self.interactive = interactive
        self.runtime_mode = args.mode
        self.interaction_mode: str | None = None
        self.model: str | None = args.model
        self.queued: deque[str] = deque()
        self.sub: Any = None
        self.stopped = False

    # session ---------------------------------------------------------------------------------

    def start(self) -> None:
        from paddock.contract import PaddockError

        cwd = os.path.abspath(self.args.cwd)
        try:
            session = self.rt.start_session(self.thread_id, instance=self.args.instance, cwd=cwd,
                                            runtime_mode=self.runtime_mode, model=self.model)
        except PaddockError as exc:
            self.view.line(f"paddock chat: {exc}", "31")
            raise _Leave from None
        where = "server" if self.remote else "in-process"
        self.view.line(
            f"paddock chat · {session.instance_id} ({session.driver}) · thread {self.thread_id} · "
            f"{self.runtime_mode} · {where}" + (" · resumed" if session.resumed else ""), "2")
        if self.interactive:
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
        elif name == "/stop":
            try:
                self.rt.stop_session(self.thread_id)
            except PaddockError as exc:
                self.view.line(f"error: {exc}", "31")
            self.stopped = True
            self.view.line(f"thread {self.thread_id} stopped", "2")
            raise _Leave
        elif name in ("/steer", "/interrupt"):
            self.view.line("no turn is running", "2")
        else:
            self.view.line(f"unknown command {name}; /help lists them", "31")

    def turn(self, text: str) -> None:
        from paddock.contract import PaddockError

        try:
            result = self.rt.send_turn(self.thread_id, text, interaction_mode=self.interaction_mode, model=self.model)
        except PaddockError as exc:
            self.view.line(f"error: {exc}", "31")
            return
        self.follow(result.turn_id)

    def follow(self, turn_id: str) -> None:
        """Stream the turn until its ``turn.completed``; answer approvals, take /steer."""
        from paddock.contract import PaddockError

        pending: dict[str, Any] = {}
        ours: set[str] = set()
        last_poll = 0.0
        while True:
            try:
                event = self.sub.get(timeout=0.05)
                if event is None:
                    if self.sub.ended:
                        self.view.line("the event stream ended (the server closed?)", "31")
                        raise _Leave
                    self.view.spin()
                else:
                    turn_id, done = self.show(event, turn_id, pending, ours)
                    if done:
                        return
                    if self.queued and _unanswered(pending, ours):  # a line typed (or piped) ahead answers it
                        turn_id = self.during(self.queued.popleft(), turn_id, pending, ours, queued=True)
                if time.monotonic() - last_poll >= 0.05 and not self.inp.eof:
                    last_poll = time.monotonic()
                    try:
                        line = self.inp.line(0)
                    except EOFError:
                        line = None
                    if line is not None:
                        self.view.answered()
                        turn_id = self.during(line.strip(), turn_id, pending, ours)
            except KeyboardInterrupt:
                self.view.line("^C: interrupting the turn", "33")
                try:
                    self.rt.interrupt_turn(self.thread_id, turn_id, timeout=10)
                except PaddockError as exc:
                    self.view.line(f"error: {exc}", "31")

    def during(self, text: str, turn_id: str, pending: dict[str, Any], ours: set[str], queued: bool = False) -> str:
        """A line typed while the turn runs; returns the turn to follow (a steer may start one).
        ``queued``: the line was typed ahead and waited in the queue."""
        from paddock.contract import PaddockError

        if not text:
            return turn_id
        target = _unanswered(pending, ours)
        answer = target is not None and not text.startswith("/")
        # Lines typed ahead keep their order; from a pipe (a script) every line but an answer
        # waits for the turn to end, so "/stop" on the next line does not cut the turn short.
        if not answer and not queued and (self.queued or not self.interactive):
            self.queued.append(text)
            return turn_id
        name, _, arg = text.partition(" ")
        try:
            if answer and target is not None:
                request_id, opened = target
                if opened.type == "user-input.requested":
                    answers = {q.id: text for q in opened.questions}
                    ours.add(request_id)
                    self.rt.respond_to_user_input(self.thread_id, request_id, answers)
                    return turn_id
                decision = _ANSWERS.get(text[:1].lower())
                if decision is None:
                    self.view.line("answer y, s, n or c", "33")
                    return turn_id
                ours.add(request_id)
                self.rt.respond_to_request(self.thread_id, request_id, decision)
                self.view.line(f"  {decision}", "33")
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
            self.view.line(f"error: {exc}", "31")
            return turn_id
        self.queued.append(text)
        if self.interactive:
            self.view.line("(queued: it goes after this turn)", "2")
        return turn_id

    def show(self, event: Any, turn_id: str, pending: dict[str, Any], ours: set[str]) -> tuple[str, bool]:
        t = event.type
        if t == "content.delta":
            if event.stream == "assistant_text":
                self.view.text(event.delta)
            elif event.stream == "reasoning" and self.view.fancy:
                self.view.text(event.delta, "2;3")
            return turn_id, False
        if t == "turn.started":
            return event.turn_id or turn_id, False
        if t == "turn.completed" and event.turn_id == turn_id:
            extra = f": {event.error}" if event.error else ""
            code = "2" if event.state == "completed" else "33"
            self.view.line(f"· turn {event.state}{extra}", code)
            return turn_id, True
        if t == "request.opened":
            pending[event.request_id] = event
            what = event.title or event.detail or ""
            self.view.line(f"? approve {event.kind}: {what}  [y]es / [s]ession / [n]o / [c]ancel", "1;33")
            if self.interactive:
                self.view.prompt("approve> ")
            return turn_id, False
        if t == "user-input.requested":
            pending[event.request_id] = event
            questions = "; ".join(q.question for q in event.questions)
            self.view.line(f"? {questions}", "1;33")
            if self.interactive:
                self.view.prompt("answer> ")
            return turn_id, False
        if t in ("request.resolved", "user-input.resolved"):
            pending.pop(event.request_id, None)
            if event.request_id not in ours:
                how = getattr(event, "decision", None) or event.resolution
                self.view.line(f"  (answered elsewhere: {how})", "33")
            return turn_id, False
        if t == "session.exited":
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
    rt, remote = connect(args)
    thread_id = args.thread or f"chat-{uuid.uuid4().hex[:8]}"
    chat = _Chat(rt, remote, args, thread_id, view, _Input(sys.stdin.fileno()), interactive)
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
        if chat.sub is not None and not chat.stopped:
            if remote:
                view.line(f"thread {thread_id} stays on the server; continue with: paddock chat --thread {thread_id}", "2")
            else:
                view.line(f"continue with: paddock chat --thread {thread_id}", "2")
        rt.close()
    return code
