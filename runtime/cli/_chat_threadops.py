"""Chat's ``/fork NEW [AT_TURN]`` and ``/compact`` (``paddock chat``); they run in the chat's main
thread between turns."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Protocol

from paddock.cli._errors import explain

if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.client import RemoteRuntime

__all__ = ["HELP_LINES", "thread_command"]

HELP_LINES = """  /fork NEW [N]    copy this thread (through turn N) into thread NEW; the chat stays here
  /compact         summarize this thread's history to free context"""


class _Lines(Protocol):
    def line(self, text: str, code: str) -> None: ...


class ThreadChat(Protocol):
    """What the thread commands use of the chat (``paddock.cli._chat``)."""

    rt: Runtime | RemoteRuntime
    args: argparse.Namespace
    thread_id: str

    @property
    def view(self) -> _Lines: ...

    def follow(self, turn_id: str) -> None: ...


def thread_command(chat: ThreadChat, name: str, arg: str) -> None:
    """Run ``/fork`` or ``/compact``; errors are shown, never raised."""
    from paddock.cli._target import resume_hint
    from paddock.cli._threadops import fork
    from paddock.contract import PaddockError

    try:
        if name == "/compact":
            result = chat.rt.compact_thread(chat.thread_id)
            if result is not None:
                chat.follow(result.turn_id)  # the agent compacts in a turn of its own: stream it
            chat.view.line(f"thread {chat.thread_id} compacted", "2")
            return
        words = arg.split()
        if not 1 <= len(words) <= 2 or (len(words) == 2 and not words[1].isdigit()):
            chat.view.line("/fork takes a new thread id and, optionally, the last turn to keep: /fork NEW [N]", "31")
            return
        session, said = fork(chat.rt, chat.thread_id, words[0], at_turn=int(words[1]) if len(words) == 2 else None)
    except PaddockError as exc:
        chat.view.line(f"error: {explain(exc)}", "31")
        return
    chat.view.line(said, "2")
    chat.view.line(f"continue it with: {resume_hint(chat.args, session.instance_id, session.thread_id)}", "2")
