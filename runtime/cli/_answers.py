"""Approvals on every CLI surface (``chat``, ``run``, ``requests``, ``approve``): the one parser
of a typed answer, the ``--approve`` policy for when nobody can answer, and what a request shows.

An answer is a whole word from a small set, case-insensitive, surrounding spaces ignored:
``y``/``yes``/``accept``, ``s``/``session``, ``n``/``no``/``decline``, ``c``/``cancel`` (the
decision names themselves are accepted too). Empty input declines. Anything else names no decision
and is asked again: ``stop it`` must never be read as ``s``.
"""

from __future__ import annotations

import argparse
import json
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from paddock.contract import DECISIONS, CommandSubject, FileChangeSubject, ToolSubject

if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.client import RemoteRuntime
    from paddock.contract import Decision, RequestOpened, RequestSubject

__all__ = [
    "ANSWER_WORDS",
    "ApprovalDesk",
    "Asking",
    "add_approve_option",
    "approve_policy",
    "choices",
    "describe_request",
    "parse_answer",
    "parse_confirmation",
    "policy_decision",
    "request_details",
    "request_line",
    "subject_details",
]

ANSWER_WORDS: dict[str, Decision] = {
    "y": "accept", "yes": "accept", "accept": "accept",
    "s": "accept_for_session", "session": "accept_for_session", "accept_for_session": "accept_for_session",
    "n": "decline", "no": "decline", "decline": "decline",
    "c": "cancel", "cancel": "cancel",
}
"""Every word that names a decision."""

_SHOWN: dict[Decision, str] = {
    "accept": "y/yes/accept", "accept_for_session": "s/session", "decline": "n/no/decline", "cancel": "c/cancel",
}

Policy = Literal["ask", "accept", "accept_for_session", "decline", "cancel"]


def parse_answer(text: str) -> Decision | None:
    """The decision ``text`` names, or ``None`` when it names none (ask again). Empty declines."""
    word = text.strip().lower()
    if not word:
        return "decline"
    return ANSWER_WORDS.get(word)


def parse_confirmation(text: str) -> bool | None:
    """``True`` for y/yes, ``False`` for n/no or empty input, ``None`` for anything else."""
    word = text.strip().lower()
    if word in ("y", "yes"):
        return True
    if word in ("", "n", "no"):
        return False
    return None


def choices(offered: tuple[Decision, ...] = DECISIONS, *, enter: bool = True) -> str:
    """The answers a prompt accepts, as shown to the user (``enter``: say that Enter declines)."""
    return ", ".join(_SHOWN[d] for d in DECISIONS if d in offered) + (" (Enter: decline)" if enter else "")


def add_approve_option(parser: argparse.ArgumentParser) -> None:
    """``--approve``: who answers approvals. Default: ask in a terminal, decline without one."""
    parser.add_argument(
        "--approve",
        choices=["ask", "accept", "accept_for_session", "decline", "cancel"],
        default=None,
        help="how to answer approvals: ask (the default when stdin is a terminal) or always this decision "
             "(default without a terminal: decline; piped lines are never taken as answers)",
    )


def approve_policy(args: argparse.Namespace, interactive: bool) -> Policy:
    """The ``--approve`` policy in force: the flag, else ``ask`` in a terminal, else ``decline``.
    ``ask`` without a terminal is ``decline``: nobody is there to answer."""
    policy: Policy = args.approve or ("ask" if interactive else "decline")
    return "decline" if policy == "ask" and not interactive else policy


def policy_decision(policy: Policy, opened: RequestOpened) -> Decision:
    """What a non-``ask`` policy answers to ``opened``: the decision, or ``decline`` when the
    request does not offer it (``cancel`` when it offers neither)."""
    assert policy != "ask"
    for decision in (policy, "decline", "cancel"):
        if decision in opened.decisions:
            return decision  # type: ignore[return-value]
    return opened.decisions[0] if opened.decisions else "decline"


# what a request is about -------------------------------------------------------------------------

_PLUMBING = frozenset({"options", "tool_call_id", "rpc_id", "method", "permission_suggestions"})
"""Keys of ``RequestOpened.data`` that say how to answer, not what is asked."""
_ENVELOPE = frozenset({"driver", "instance_id", "thread_id", "event_id", "seq", "created_at", "turn_id", "item_id",
                       "request_id", "provider_refs", "raw", "kind", "title", "decisions", "data", "subject"})
_RESTATED = frozenset({"command", "cwd", "input", "metadata", "changes", "files", "patterns", "tool_kind"})
"""Keys of ``RequestOpened.data`` that restate its ``subject`` (shown instead, when there is one)."""
_MAX_LINES = 40
_MAX_CHARS = 4000


def _bounded(text: str) -> list[str]:
    lines = text.splitlines() or [""]
    shown: list[str] = []
    used = 0
    for line in lines:
        if len(shown) == _MAX_LINES or used + len(line) > _MAX_CHARS:
            shown.append(f"… ({len(lines) - len(shown)} more lines)")
            break
        shown.append(line)
        used += len(line)
    return shown


def _details(name: str, value: object, out: list[tuple[str, str]]) -> None:
    if value is None or value == {} or value == [] or value == "":
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            _details(str(key), inner, out)
        return
    out.append((name, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)))


def subject_details(subject: RequestSubject | None) -> list[tuple[str, str]]:
    """(name, text) of what a request approves: ``command`` and ``cwd``; one ``file`` per edited
    file (path, change and its diff); or ``tool`` and its ``arguments``."""
    out: list[tuple[str, str]] = []
    if isinstance(subject, CommandSubject):
        out.append(("command", subject.command))
        if subject.cwd:
            out.append(("cwd", subject.cwd))
    elif isinstance(subject, FileChangeSubject):
        for edit in subject.files:
            head = f"{edit.path} ({edit.change}{' to ' + edit.move_to if edit.move_to else ''})"
            body = edit.diff.rstrip("\n") if edit.diff else "(the agent showed no content)"
            out.append(("file", f"{head}\n{body}{chr(10) + '… (diff cut)' if edit.truncated else ''}"))
    elif isinstance(subject, ToolSubject):
        out.append(("tool", f"{subject.server}/{subject.tool}" if subject.server else subject.tool))
        _details("arguments", subject.arguments if not isinstance(subject.arguments, dict) else
                 json.dumps(subject.arguments, ensure_ascii=False, default=str), out)
    return out


def request_details(opened: RequestOpened) -> list[tuple[str, str]]:
    """(name, text) of every detail a request carries: first its subject (the exact command, the
    diff, the tool and its arguments), then its ``detail`` (when the title is another text), every
    other field the contract adds, and every entry of ``data`` but the answer plumbing and what
    the subject already says, nested objects flattened. A surface shows these, never only a
    model-written title."""
    import msgspec

    out = subject_details(opened.subject)
    restated = _RESTATED if opened.subject is not None else frozenset()
    if opened.detail and opened.title and opened.detail != opened.title and (
            not out or opened.detail not in (text for _, text in out)):
        _details("detail", opened.detail, out)
    for field in msgspec.structs.fields(type(opened)):
        if field.name not in _ENVELOPE and field.name != "detail":
            _details(field.name, getattr(opened, field.name), out)
    for key, value in (opened.data or {}).items():
        if key not in _PLUMBING and key not in restated:
            _details(key, value, out)
    return out


def describe_request(opened: RequestOpened, indent: str = "    ") -> list[str]:
    """The first line says what kind of request and its title; each further line is one detail
    (:func:`request_details`), a long value bounded to its first lines."""
    out = [f"approve {opened.kind}: {opened.title or opened.detail or '(no title)'}"]
    for name, text in request_details(opened):
        lines = _bounded(text)
        if len(lines) == 1:
            out.append(f"{indent}{name}: {lines[0]}")
        else:
            out.append(f"{indent}{name}:")
            out.extend(f"{indent}  {line}" for line in lines)
    return out


def request_line(opened: RequestOpened, limit: int = 200) -> str:
    """The title and every detail on one line (each value cut at ``limit`` characters)."""
    parts = [opened.title or opened.detail or "(no title)"]
    for name, text in request_details(opened):
        flat = text.replace("\r", "").replace("\n", "\\n")
        parts.append(f"{name}: {flat if len(flat) <= limit else flat[:limit] + '…'}")
    return " · ".join(parts)


class Asking:
    """One approval prompt: feed it each typed line until it yields a decision. ``confirm_session``
    asks again before ``accept_for_session`` (every later request of the kind is accepted without a
    word). No I/O; the caller shows :attr:`prompt` and the returned notes."""

    def __init__(self, opened: RequestOpened, *, confirm_session: bool) -> None:
        self.opened = opened
        self.confirm_session = confirm_session
        self.confirming = False

    @property
    def prompt(self) -> str:
        return "accept for the session? [y/N] " if self.confirming else "approve> "

    def hint(self) -> str:
        return f"answer {choices(self.opened.decisions)}"

    def feed(self, text: str) -> tuple[Decision | None, str | None]:
        """(the decision to send, or ``None``; a note to show, or ``None``)."""
        if self.confirming:
            yes = parse_confirmation(text)
            if yes is None:
                return None, "answer y to accept for the rest of the session, n (or Enter) to choose again"
            self.confirming = False
            if yes:
                return "accept_for_session", None
            return None, f"not accepted for the session; {self.hint()}"
        decision = parse_answer(text)
        if decision is None:
            return None, f"{text.strip()!r} is not an answer; {self.hint()}"
        if decision not in self.opened.decisions:
            return None, f"this request does not offer {decision}; {self.hint()}"
        if decision == "accept_for_session" and self.confirm_session:
            self.confirming = True
            return None, "accept_for_session also accepts every later request like this one, without asking"
        return decision, None


Style = Literal["request", "detail", "hint", "note", "answer", "prompt"]
"""What a piece of desk output is, so a surface can colour it (``prompt`` has no newline)."""


class ApprovalDesk:
    """The approval requests of one thread during a turn, for ``chat`` and ``run``: shows each
    with what it is about, then (once the stream is idle, so a request the runtime mode answered
    in the same batch is never asked) answers it by the ``--approve`` policy or asks it, one at a
    time, until a whole-word answer. A request answered elsewhere clears its prompt.

    Every method runs in the CLI's main thread. ``say(text, style)`` prints one line (or the
    prompt); ``before_ask()`` runs just before a prompt shows (chat takes lines typed ahead there,
    so they stay messages)."""

    def __init__(self, rt: Runtime | RemoteRuntime, thread_id: str, policy: Policy, *, forced: bool,
                 say: Callable[[str, Style], None], before_ask: Callable[[], None] = lambda: None) -> None:
        self.rt = rt
        self.thread_id = thread_id
        self.policy = policy
        self.forced = forced
        self.say = say
        self.before_ask = before_ask
        self.waiting: deque[RequestOpened] = deque()
        self.asking: Asking | None = None
        self.ours: set[str] = set()
        """Request ids this desk answered (their ``request.resolved`` is no news)."""

    def reset(self) -> None:
        """A new turn: no request is open."""
        self.waiting.clear()
        self.asking = None

    def opened(self, event: RequestOpened) -> None:
        lines = describe_request(event)
        self.say("? " + lines[0], "request")
        for detail in lines[1:]:
            self.say(detail, "detail")
        self.waiting.append(event)

    def resolved(self, request_id: str, how: str) -> None:
        never_asked = any(e.request_id == request_id for e in self.waiting)
        self.waiting = deque(e for e in self.waiting if e.request_id != request_id)
        if request_id in self.ours:
            return
        if never_asked:
            self.say(f"  (answered: {how})", "note")
        elif self.asking is not None and self.asking.opened.request_id == request_id:
            self.say(f"  (answered elsewhere: {how})", "note")
            self.asking = None

    def idle(self) -> None:
        """The stream has nothing waiting: answer by the policy, or ask the next request."""
        if self.policy != "ask":
            while self.waiting:
                event = self.waiting.popleft()
                decision = policy_decision(self.policy, event)
                why = "" if self.forced else ": stdin is not a terminal"
                self._send(event, decision, f"  {decision} (--approve {self.policy}{why})")
            return
        if self.asking is not None or not self.waiting:
            return
        self.before_ask()
        self.asking = Asking(self.waiting.popleft(), confirm_session=True)
        self.say(f"  {self.asking.hint()}", "hint")
        self.say(self.asking.prompt, "prompt")

    def feed(self, line: str) -> None:
        """A line typed at the prompt (call only while :attr:`asking`)."""
        assert self.asking is not None
        decision, note = self.asking.feed(line)
        if note:
            self.say(f"  {note}", "note")
        if decision is None:
            self.say(self.asking.prompt, "prompt")
            return
        opened = self.asking.opened
        self.asking = None
        self._send(opened, decision, f"  {decision}")
        self.idle()

    def _send(self, opened: RequestOpened, decision: Decision, shown: str) -> None:
        from paddock.cli._errors import explain
        from paddock.contract import PaddockError

        assert opened.request_id is not None
        self.ours.add(opened.request_id)
        try:
            self.rt.respond_to_request(self.thread_id, opened.request_id, decision, surface="cli")
        except PaddockError as exc:
            self.say(f"  not sent: {explain(exc)}", "note")
            return
        self.say(shown, "answer")
