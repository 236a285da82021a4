"""The conformance suite: one table of scenarios, run against any driver instance through the
public :class:`paddock.Runtime`, every run's events checked by :func:`paddock.contract.check_grammar`.

A scenario names the capability paths it exercises (``needs``). For each instance:

- a scenario whose flags are all on runs, and a failure is a failure (a flag left on that fails);
- a scenario with a flag off is ``n/a`` naming that flag, and where the scenario has a ``refuse``
  step, that step must raise :class:`~paddock.contract.CapabilityUnsupportedError` (the runtime
  refuses before it touches the process), else the case fails;
- a scenario the target's prompt dialect cannot express is ``n/a`` with the dialect's reason;
- a scenario that needs a test dependency that is missing (the ``mcp`` SDK for the test MCP
  server) is ``n/a`` saying so (:class:`NotApplicable`).

A flag whose operation has a fallback rather than a refusal is checked both ways: ``fork_thread``
is a native copy where ``sessions.fork`` is on and a hand-off where it is off, and the fork
scenario checks which one happened.

The table :data:`SCENARIOS` is open: a later scenario registers with :func:`scenario`. The report
(:class:`DriverReport`) is canonical JSON with a BLAKE2b digest, masked with the instance's
secrets, and holds no times or paths, so two runs of the same recordings give the same bytes.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import psutil

from paddock.actors.events import Redactor
from paddock.contract import (
    Attachment,
    Capabilities,
    CapabilityUnsupportedError,
    EventBase,
    ImageAttachment,
    McpStdioServer,
    PaddockError,
    RequestError,
    RequestOpened,
    USAGE_LIMIT,
    TurnStartResult,
    capability_on,
    check_grammar,
)

from ._png import red_png
from ._turn import collect_turn

if TYPE_CHECKING:
    from paddock import Runtime

__all__ = [
    "LIVE_DRIVERS",
    "LIVE_KEY",
    "NON_CLAIMS",
    "SCENARIOS",
    "Case",
    "Dialect",
    "DriverReport",
    "NotApplicable",
    "Outcome",
    "PlainDialect",
    "answers_as_mock_model",
    "instance_target",
    "Probe",
    "Scenario",
    "Target",
    "encode_report",
    "live_target",
    "local_target",
    "report_digest",
    "run_target",
    "scenario",
]

Outcome = Literal["pass", "fail", "n/a"]

NON_CLAIMS: tuple[str, ...] = (
    "A passing report is local evidence, not a support decision.",
    "Token usage is what the agent reported.",
    "A cancel is a request: the agent decides when it stops.",
)
"""Said in every report."""


class Case(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One scenario's result on one instance. ``reason`` says why it failed or is ``n/a``
    (naming the capability), or what passed; ``violations`` are grammar codes seen."""

    scenario: str
    result: Outcome
    reason: str = ""
    violations: tuple[str, ...] = ()


class DriverReport(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The conformance report of one instance. Canonical JSON via :func:`encode_report`."""

    driver: str
    flavor: str
    cli_version: str | None
    paddock_version: str
    corpus: str
    capabilities: dict[str, Any]
    cases: tuple[Case, ...]
    non_claims: tuple[str, ...] = NON_CLAIMS


def encode_report(report: DriverReport, secrets: tuple[str, ...] = ()) -> bytes:
    """Canonical JSON (sorted keys, compact, UTF-8) with ``secrets`` and key shapes masked."""
    raw = msgspec.json.encode(msgspec.to_builtins(report, order="sorted"), order="sorted").decode()
    return Redactor(secrets).mask(raw).encode()


def report_digest(encoded: bytes) -> str:
    """The report's stable digest: ``blake2b-256:<hex>`` of its canonical bytes."""
    import hashlib

    return "blake2b-256:" + hashlib.blake2b(encoded, digest_size=32).hexdigest()


# dialects ----------------------------------------------------------------------------------------


class Dialect:
    """How to ask one kind of agent for a behaviour: ``None`` means it cannot be asked (the case
    is ``n/a`` with :attr:`why_not`). Prompts of the scripted model server by default."""

    why_not: Mapping[str, str] = {}

    def text(self) -> tuple[str, str]:
        """A prompt and the text its answer ends with."""
        return "say hi SCENARIO:text", "Hello from mock"

    def recall(self) -> tuple[str, str]:
        """A second prompt on the same session, and text its answer holds (with a model
        server, the suite also checks the model call carried the first exchange)."""
        return "what did you say? SCENARIO:text", "Hello from mock"

    def slow(self) -> str:
        """A prompt whose answer streams for at least ten seconds."""
        return "stream slowly SCENARIO:slow"

    def write(self) -> tuple[str, str, str]:
        """A prompt that edits a file: (prompt, relative path, content)."""
        return "write the file SCENARIO:conf_write", "conformance-edit.txt", "written by the agent\n"

    def shell(self) -> tuple[str, str]:
        """A prompt that runs a shell command creating a file: (prompt, relative path)."""
        return "run the command SCENARIO:conf_shell", "conformance-shell.txt"

    def shell_program(self) -> tuple[str, ...]:
        """The argument prefix of the command :meth:`shell` asks for (what scenario 03c's
        approval rules match)."""
        return ("python3", "-c")

    def http_error(self) -> tuple[str, str] | None:
        """A prompt the model answers with HTTP 400: (prompt, text the error carries)."""
        return "this fails SCENARIO:http400", "mock bad request"

    def usage(self) -> str:
        return "say hi SCENARIO:text"

    def usage_limit(self) -> str | None:
        """A prompt the model answers with a usage limit that resets 3 s after its first call."""
        return "limited SCENARIO:usage_limit"

    def waits_on_model(self) -> str | None:
        """A prompt whose turn waits on the model (run with the instance's ``endpoint`` on a port
        that refuses connections)."""
        return "say hi SCENARIO:text"

    def mcp_call(self) -> str | None:
        """A prompt that calls the ``echo`` tool of the MCP server ``tools`` with
        :data:`MCP_ARGUMENTS`."""
        return "use the echo tool SCENARIO:conf_mcp"

    def image(self) -> str | None:
        """A prompt for a turn carrying an image attachment."""
        return "what colour is it? SCENARIO:text"

    def context(self) -> bool | None:
        """``True`` where :meth:`received` can read what the agent worked from, ``None`` where
        it cannot (the case is ``n/a``)."""
        return True

    def received(self, p: Probe) -> list[str]:
        """What the agent worked from, one text per turn it ran, oldest first: here the body of
        each turn request the model server saw (its history included)."""
        assert p.server is not None, "no model server to read what the agent sent"
        return [json.dumps(r.body) for r in p.server.model_calls() if r.kind == "turn"]

    def saw_image(self, p: Probe, events: list[EventBase]) -> bool | None:
        """Whether the PNG reached the agent's model (``None``: cannot be seen)."""
        if p.server is None:
            return None
        return any("image/png" in r.images for r in p.server.model_calls() if r.kind in ("turn", "follow_up"))


MCP_ARGUMENTS: dict[str, object] = {"text": "ping from the model"}
"""What the MCP scenario's prompt asks the ``echo`` tool for (it answers ``echo: <text>``)."""

_TOKEN = "conformance-server-token-4e1d"
_CREDENTIAL = "conformance-credential-9b2c"

CONFINE_COMMAND = (
    "for f in $HOME/../../server.token $HOME/../conf-other/credentials.json; do cat $f 2>&1 | sed 's/.*: //'; done; "
    "(echo x > $HOME/../../planted) 2>&1 | sed 's/.*: //'; "
    "python3 -c \"import os; os.kill(int(open(os.path.expandvars('$HOME/../../../workspace/conformance-host.pid')).read()), 0)\" "
    "2>&1 | tail -1 | sed 's/.*] //'; echo done"
)
"""The shell line the agent runs. Paths go through ``$HOME``, the instance's default home
``state/instances/<id>`` (some agents run commands in their process's folder, not the session's
cwd), and the suite keeps ``workspace`` beside ``state``; no command substitution (Gemini CLI
blocks it) and no ``kill`` command (Copilot CLI refuses one without a literal pid). The signal step
is not the last line of output: claude-code-acp 0.16.0 (the registry's) now and then drops a
command's last output line ("Operation not permitted" went missing while a trailing ``echo``
after it came back with it)."""


_PY_CREATE = "python3 -c \"open('conformance-shell.txt', 'w').close()\""


def model_script(extra: Mapping[str, list[Any]] | None = None) -> dict[str, Any]:
    """The scripted model server's scenarios this suite's prompts name (``extra`` adds or
    replaces some for one agent)."""
    from ._scenario import McpCall, Patch, Shell

    return {"scenarios": {
        "conf_confine": [Shell(command=CONFINE_COMMAND)],
        "conf_write": [Patch(path="conformance-edit.txt", content="written by the agent\n")],
        # Not `touch`: Claude Code's acceptEdits mode counts touch, mkdir, mv and cp as file
        # edits and runs them unasked; this is a command under every agent's rules.
        "conf_shell": [Shell(command=_PY_CREATE)],
        "conf_mcp": [McpCall(tool="echo", server="tools", arguments=MCP_ARGUMENTS)],
        **(extra or {}),
    }}


class LocalDialect(Dialect):
    """The built-in local agent's prompt directives (``drivers/local/agent/_directives.py``)."""

    why_not = {"http_error": "the local agent calls no model"}

    def text(self) -> tuple[str, str]:
        return "@reply Hello from local\nsay hi", "Hello from local"

    def recall(self) -> tuple[str, str]:
        return "@reply-history\nhow many turns?", "history: "

    def slow(self) -> str:
        return "@chunks 200\n@delay 0.1\n@reply " + "".join(f"tick{i} " for i in range(200))

    def write(self) -> tuple[str, str, str]:
        return "@write conformance-edit.txt written by the agent\nwrite it", "conformance-edit.txt", "written by the agent"

    def shell(self) -> tuple[str, str]:
        return "@run touch conformance-shell.txt\nrun it", "conformance-shell.txt"

    def shell_program(self) -> tuple[str, ...]:
        return ("touch", "conformance-shell.txt")

    def http_error(self) -> tuple[str, str] | None:
        return None

    def usage(self) -> str:
        return "@usage 10 5\n@reply counted\ncount"

    def usage_limit(self) -> str | None:
        return f"@limit-until {time.time() + 3:.3f}\n@reply Back after the reset\nlimited"

    def waits_on_model(self) -> str | None:
        # It calls no model: a first chunk, then a minute of quiet, stands in for an agent
        # waiting on one (the runtime's endpoint check is the same for every driver).
        return "@chunks 2\n@delay 60\n@reply waiting on the model"

    def mcp_call(self) -> str | None:
        return f"@mcp tools echo {json.dumps(MCP_ARGUMENTS)}\nuse the tool"

    def image(self) -> str | None:
        return "@reply looked\nlook at it"

    def received(self, p: Probe) -> list[str]:
        """The user texts of each session file the agent keeps (its own record of what it
        received), each with the ones before it in its session."""
        folder = p.state_dir / "instances" / p.instance / "local-agent" / "sessions"
        out: list[str] = []
        for path in sorted(folder.glob("*.jsonl")):
            texts: list[str] = []
            for line in path.read_text(encoding="utf-8").splitlines()[1:]:  # line 1: the header
                texts.append(json.loads(line)["user"])
                out.append("\n".join(texts))
        return out

    def saw_image(self, p: Probe, events: list[EventBase]) -> bool | None:
        # The agent echoes the blocks its prompt carried besides text.
        return "received: image image/png" in _text(events)


class RegistryDialect(Dialect):
    """An agent from the ACP registry: the scripted model server's prompts, but no ``endpoint``
    (it gets no mapping of the model keys; its model address is a variable of its own env)."""

    why_not = {"waits_on_model": "a registry agent gets no mapping of the model keys: its model address is a "
                                 "variable of its own env, not the instance's endpoint"}

    def waits_on_model(self) -> str | None:
        return None


class PlainDialect(Dialect):
    """Prompts for a real model (``paddock conformance --instance``): plain language, answers
    checked loosely."""

    why_not = {"http_error": "a real model cannot be told to answer with an HTTP error",
               "context": "what a real model received cannot be read back",
               "usage_limit": "a real model cannot be told to answer with a usage limit"}

    def text(self) -> tuple[str, str]:
        return "Reply with exactly these words and nothing else: Hello from Paddock", "Hello from Paddock"

    def recall(self) -> tuple[str, str]:
        return "Repeat the words you replied with last time, exactly.", "Hello from Paddock"

    def slow(self) -> str:
        return "Count from 1 to 400, one number per line, with nothing else."

    def write(self) -> tuple[str, str, str]:
        return ("Create the file conformance-edit.txt in the current folder containing exactly the line: "
                "written by the agent", "conformance-edit.txt", "written by the agent")

    def shell(self) -> tuple[str, str]:
        return f"Run this shell command, and nothing else: {_PY_CREATE}", "conformance-shell.txt"

    def http_error(self) -> tuple[str, str] | None:
        return None

    def usage(self) -> str:
        return self.text()[0]

    def usage_limit(self) -> str | None:
        return None

    def waits_on_model(self) -> str | None:
        return self.text()[0]

    def mcp_call(self) -> str | None:
        return (f"Call the tool echo of the MCP server named tools with the argument text set to "
                f"{MCP_ARGUMENTS['text']!r}, then reply with what it returned.")

    def image(self) -> str | None:
        return "What colour is the attached image? Reply with one word."

    def context(self) -> bool | None:
        return None

    def saw_image(self, p: Probe, events: list[EventBase]) -> bool | None:
        return None


# the probe: one runtime, one instance --------------------------------------------------------------


@dataclass
class Probe:
    """What a scenario works with: a Runtime with the instance ``instance`` (its capabilities in
    ``caps``), a workspace, the dialect, the config and state dir (for a second Runtime), and the
    scripted model server when there is one. Scenario code and its ``on_event`` callbacks run on
    the caller's thread."""

    rt: Runtime
    instance: str
    workspace: Path
    dialect: Dialect
    caps: Capabilities
    config: dict[str, Any]
    state_dir: Path
    server: Any = None
    timeout: float = 60.0
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    """Thread numbers, shared by every scenario of a run: a thread id is never reused (a reused
    one would resume the earlier thread, settings and all)."""
    resume_after: float = 0.0
    """Seconds a session must exist before a fresh process can load it (:attr:`Target.resume_after`)."""

    def thread(self, runtime_mode: str = "full-access", *, thread_id: str | None = None, **options: Any) -> str:
        """Start a session on ``thread_id`` (else a new id) and return the id; ``options`` go to
        ``start_session`` (``mcp_servers``, ``preamble``, ``require``)."""
        thread_id = thread_id or self.new_id()
        self.rt.start_session(thread_id, instance=self.instance, cwd=str(self.workspace),
                              runtime_mode=runtime_mode, timeout=self.timeout, **options)  # type: ignore[arg-type]
        return thread_id

    def new_id(self) -> str:
        """A thread id never used in this run."""
        return f"conf-{next(self.ids)}"

    def model_calls(self) -> int:
        """How many model calls the model server saw so far (0 without one)."""
        return 0 if self.server is None else len(self.server.model_calls())

    def turn(self, thread_id: str, text: str, *, on_event: Callable[[EventBase, str], None] | None = None,
             timeout: float | None = None, attachments: tuple[Attachment, ...] = ()) -> list[EventBase]:
        """Send a turn and return its thread's events up to its ``turn.completed``."""
        def steer(event: EventBase, turn: TurnStartResult) -> None:
            if on_event is not None:
                on_event(event, turn.turn_id)

        return collect_turn(self.rt, thread_id, text, timeout=timeout or self.timeout,
                            on_event=None if on_event is None else steer, attachments=attachments)

    def agent_processes(self) -> list[psutil.Process]:
        """The agent processes: the children of Paddock's orphan-guard shims."""
        found = []
        for proc in psutil.Process().children(recursive=True):
            try:
                if any("_shim.py" in part for part in proc.cmdline()):
                    found.extend(proc.children())
            except psutil.Error:
                pass
        return found


def _end(events: list[EventBase]) -> Any:
    assert events and events[-1].type == "turn.completed", [e.type for e in events][-5:]
    return events[-1]


def _text(events: list[EventBase]) -> str:
    return "".join(e.delta for e in events if e.type == "content.delta" and e.stream == "assistant_text")  # type: ignore[attr-defined]


def _on_first_delta(action: Callable[[str], None]) -> Callable[[EventBase, str], None]:
    """An ``on_event`` that calls ``action(turn_id)`` once, at the turn's first delta."""
    fired = threading.Event()

    def on_event(event: EventBase, turn_id: str) -> None:
        if not fired.is_set() and event.type == "content.delta":
            fired.set()
            action(turn_id)
    return on_event


class NotApplicable(Exception):  # noqa: N818  (a verdict, not an error)
    """Raised by a scenario that cannot run here for a reason that is no capability of the
    agent (a missing test dependency): the case is ``n/a`` with the message."""


# the scenario table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One row of the table. ``run`` asserts (an ``AssertionError`` or a ``PaddockError`` fails
    the case) and returns what passed; ``refuse`` is called when a flag of ``needs`` is off and
    must raise ``CapabilityUnsupportedError``; ``dialect`` names the :class:`Dialect` method the
    scenario needs (``None`` from it makes the case ``n/a``)."""

    id: str
    title: str
    run: Callable[[Probe], str]
    needs: tuple[str, ...] = ()
    refuse: Callable[[Probe], object] | None = None
    dialect: str | None = None


SCENARIOS: dict[str, Scenario] = {}
"""Scenario id -> scenario, in table order. Open: later scenarios join with :func:`scenario`."""


def scenario(id: str, title: str, *, needs: tuple[str, ...] = (), refuse: Callable[[Probe], object] | None = None,
             dialect: str | None = None) -> Callable[[Callable[[Probe], str]], Callable[[Probe], str]]:
    """Register a scenario function under ``id`` (``"01-simple-turn"``)."""
    def register(fn: Callable[[Probe], str]) -> Callable[[Probe], str]:
        SCENARIOS[id] = Scenario(id=id, title=title, run=fn, needs=needs, refuse=refuse, dialect=dialect)
        return fn
    return register


@scenario("01-simple-turn", "simple turn")
def _simple(p: Probe) -> str:
    prompt, expected = p.dialect.text()
    events = p.turn(p.thread(), prompt)
    assert _end(events).state == "completed", _end(events)
    assert expected in _text(events), f"expected {expected!r}, got {_text(events)[-200:]!r}"
    return "completed with the expected text"


@scenario("02-multi-turn", "multi-turn")
def _multi(p: Probe) -> str:
    prompt, expected = p.dialect.text()
    thread_id = p.thread()
    first = p.turn(thread_id, prompt)
    assert _end(first).state == "completed", _end(first)
    prompt, expected = p.dialect.recall()
    second = p.turn(thread_id, prompt)
    assert _end(second).state == "completed", _end(second)
    assert expected in _text(second), _text(second)[-200:]
    if p.server is not None:
        last = [c for c in p.server.model_calls() if c.kind == "turn"][-1]
        assert "Hello from mock" in str(last.body), "the second model call lacks the first exchange"
    return "the second turn carried the first"


def _approve(p: Probe, kind: str, decision: str) -> None:
    if kind == "file_change":
        prompt, path, content = p.dialect.write()
    else:
        prompt, path = p.dialect.shell()
        content = None
    target = p.workspace / path
    target.unlink(missing_ok=True)
    thread_id = p.thread("approval-required")
    opened: list[Any] = []

    def answer(event: EventBase, turn_id: str) -> None:
        if event.type == "request.opened":
            opened.append(event)
            p.rt.respond_to_request(thread_id, event.request_id or "", decision)  # type: ignore[arg-type]

    events = p.turn(thread_id, prompt, on_event=answer)
    assert opened, f"no approval was asked for the {kind}"
    assert opened[0].kind in (kind, "permission"), opened[0].kind
    resolved = [e for e in events if e.type == "request.resolved"]
    assert [(r.resolution, r.decision) for r in resolved][:1] == [("answered", decision)], resolved  # type: ignore[attr-defined]
    if decision == "accept":
        assert target.exists(), f"{path} was not created after accept"
        if content is not None:
            assert target.read_text().startswith(content.rstrip("\n"))
    else:
        assert not target.exists(), f"{path} exists after decline"
    p.rt.stop_session(thread_id)


@scenario("03a-approval-file-edit", "approve and decline a file edit, on disk", needs=("approvals.file_changes", "runtime_policy.modes.approval-required"))
def _approve_edit(p: Probe) -> str:
    _approve(p, "file_change", "accept")
    _approve(p, "file_change", "decline")
    return "accept wrote the file, decline did not"


@scenario("03b-approval-command", "approve and decline a shell command, on disk", needs=("approvals.commands", "runtime_policy.modes.approval-required"))
def _approve_command(p: Probe) -> str:
    _approve(p, "command", "accept")
    _approve(p, "command", "decline")
    return "accept ran the command, decline did not"


_PERSON_WAITS = 5.0  # seconds scenario 03c's "person" waits before answering what no rule decided


def _ruled(p: Probe, decision: Literal["accept", "decline"] | None) -> str:
    """One shell turn under approval rules on the dialect's command: ``decision`` ``accept`` or
    ``decline`` (a rule decides), ``None`` (no rule matches: a person decides, after
    :data:`_PERSON_WAITS`, with decline). Returns who decided each request of the turn."""
    from paddock.contract import ApprovalRule, RuleMatch

    prompt, path = p.dialect.shell()
    target = p.workspace / path
    target.unlink(missing_ok=True)
    program = p.dialect.shell_program() if decision is not None else ("no-such-program",)
    rules = [ApprovalRule(match=RuleMatch(program=program), decision=decision or "accept")]
    thread_id = p.thread("approval-required", approval_rules=rules)
    asked: list[str] = []
    timers: list[threading.Timer] = []

    def person(request_id: str) -> None:
        # Answers only what is still open then: a request a rule decided is resolved already.
        try:
            if any(r.request_id == request_id for r in p.rt.pending_requests(thread_id)):
                asked.append(request_id)
                p.rt.respond_to_request(thread_id, request_id, "decline")
        except PaddockError:
            pass  # resolved meanwhile

    def on_event(event: EventBase, turn_id: str) -> None:
        if event.type == "request.opened":
            timer = threading.Timer(_PERSON_WAITS, person, (event.request_id or "",))
            timer.daemon = True
            timers.append(timer)
            timer.start()

    try:
        events = p.turn(thread_id, prompt, on_event=on_event)
    finally:
        for timer in timers:
            timer.cancel()
    resolved = [e for e in events if e.type == "request.resolved"]
    assert resolved, "no approval was asked for the command"
    first: Any = resolved[0]
    if decision is None:
        assert asked and (first.decided_by, first.decision) == ("person", "decline"), (asked, first)
        assert not target.exists(), f"{path} exists after a person declined"
    else:
        assert not asked, f"a person was asked although a rule {decision}s the command: {first}"
        assert (first.decided_by, first.decision, first.rule_index) == ("rule", decision, 0), first
        assert target.exists() == (decision == "accept"), f"{path} exists: {target.exists()} after rule {decision}"
    p.rt.stop_session(thread_id)
    return f"{first.decided_by} {first.decision}"


@scenario("03c-approval-rules", "approval rules accept, decline, or leave a command to a person, on disk",
          needs=("approvals.commands", "runtime_policy.modes.approval-required"))
def _approval_rules(p: Probe) -> str:
    said = [_ruled(p, "accept"), _ruled(p, "decline"), _ruled(p, None)]
    return "; ".join(said) + " (the rule accepted, declined; unmatched asked a person)"


_ASKS = {  # runtime mode -> (asks before an edit, asks before a command)
    "approval-required": (True, True),
    "auto-accept-edits": (False, True),
    "full-access": (False, False),
}


@scenario("04-runtime-modes", "each runtime mode asks exactly what it promises, or is refused")
def _modes(p: Probe) -> str:
    said = []
    for mode, (ask_edit, ask_command) in _ASKS.items():
        if mode not in p.caps.runtime_policy.modes:
            try:
                p.thread(mode)
            except CapabilityUnsupportedError as exc:
                assert exc.capability == "runtime_policy.modes", exc
                said.append(f"{mode}: refused")
                continue
            raise AssertionError(f"{mode} is not in runtime_policy.modes but a session started")
        for kind, must_ask in (("file_change", ask_edit), ("command", ask_command)):
            if kind == "file_change":
                prompt, path, _ = p.dialect.write()
            else:
                prompt, path = p.dialect.shell()
            target = p.workspace / path
            target.unlink(missing_ok=True)
            thread_id = p.thread(mode)
            asked: list[str] = []

            # Under client-boundary enforcement the runtime itself answers what the mode allows
            # (request.opened, then request.resolved at once): only a request left open for the
            # host counts as asking.
            p.turn(thread_id, prompt, on_event=_decline_each(p, thread_id, asked))
            p.rt.stop_session(thread_id)
            if must_ask:
                assert asked, f"{mode} ran a {kind} without asking"
                assert not target.exists(), f"{mode}: the declined {kind} happened anyway"
            else:
                assert not asked, f"{mode} asked before a {kind}: {asked}"
                assert target.exists(), f"{mode}: the {kind} did not happen"
        said.append(f"{mode}: honoured")
    return "; ".join(said)


def _decline_each(p: Probe, thread_id: str, asked: list[str]) -> Callable[[EventBase, str], None]:
    """An ``on_event`` that declines every request the thread leaves open and records its kind in
    ``asked`` (a request already resolved, e.g. by the runtime's mode, is not counted)."""

    def answer(event: EventBase, turn_id: str) -> None:
        if isinstance(event, RequestOpened):
            try:
                p.rt.respond_to_request(thread_id, event.request_id, "decline")
            except RequestError:
                return
            asked.append(event.kind)

    return answer


@scenario("04b-mode-change", "a thread restarted in a stricter mode asks again",
          needs=("approvals.commands", "runtime_policy.modes.approval-required", "runtime_policy.modes.full-access"))
def _mode_change(p: Probe) -> str:
    prompt, expected = p.dialect.text()
    thread_id = p.thread("full-access")
    assert _end(p.turn(thread_id, prompt)).state == "completed"
    p.rt.start_session(thread_id, instance=p.instance, cwd=str(p.workspace), runtime_mode="approval-required",
                       timeout=p.timeout)
    shell, path = p.dialect.shell()
    target = p.workspace / path
    target.unlink(missing_ok=True)
    asked: list[str] = []
    p.turn(thread_id, shell, on_event=_decline_each(p, thread_id, asked))
    assert asked, "after the restart in approval-required a command ran without asking"
    assert not target.exists(), "the declined command ran"
    return "asked after the restart"


@scenario("05-interrupt", "interrupt mid-stream", needs=("turns.interrupt",))
def _interrupt(p: Probe) -> str:
    thread_id = p.thread()
    events = p.turn(thread_id, p.dialect.slow(),
                    on_event=_on_first_delta(lambda t: p.rt.interrupt_turn(thread_id, t)))
    assert _end(events).state in ("interrupted", "cancelled"), _end(events)
    return f"ended {_end(events).state}"


@scenario("06-steer", "steer a running turn", needs=("turns.steer",))
def _steer(p: Probe) -> str:
    thread_id = p.thread()
    steered: list[Any] = []

    def steer(event: EventBase, turn_id: str) -> None:
        if not steered and event.type == "content.delta":
            steered.append(p.rt.steer_turn(thread_id, "and also say goodbye"))
            p.rt.interrupt_turn(thread_id, turn_id)
    events = p.turn(thread_id, p.dialect.slow(), on_event=steer)
    assert steered, "no delta to steer at"
    assert _end(events).state in ("completed", "interrupted", "cancelled"), _end(events)
    return "steered mid-turn"


@scenario("07-resume", "resume in a fresh process", needs=("sessions.resume",))
def _resume(p: Probe) -> str:
    from paddock import Runtime

    prompt, expected = p.dialect.text()
    state = p.state_dir.parent / (p.state_dir.name + "-resume")
    created = time.monotonic()
    with Runtime.open(p.config, state_dir=state) as rt:
        rt.start_session("r1", instance=p.instance, cwd=str(p.workspace), timeout=p.timeout)
        first = Probe(rt, p.instance, p.workspace, p.dialect, p.caps, p.config, state, p.server, p.timeout)
        assert _end(first.turn("r1", _marked(prompt, "RESUME-ONE"))).state == "completed"
    if p.resume_after > 0:
        # The agent cannot load a session younger than this (Target.resume_after names why).
        time.sleep(max(0.0, p.resume_after - (time.monotonic() - created)))
    with Runtime.open(p.config, state_dir=state) as rt:
        with rt.subscribe(thread_id="r1", types=["runtime.warning"]) as warnings:
            session = rt.start_session("r1", instance=p.instance, cwd=str(p.workspace), timeout=p.timeout)
            said = [e.message for e in _drain(warnings)]  # type: ignore[attr-defined]
        assert session.resumed, f"the session was not resumed: {said}"
        again = Probe(rt, p.instance, p.workspace, p.dialect, p.caps, p.config, state, p.server, p.timeout)
        assert _end(again.turn("r1", _marked(prompt, "RESUME-TWO"))).state == "completed"
        assert len(rt.read_thread("r1").turns) >= 1
        if p.dialect.context():
            assert "RESUME-ONE" in _context_of(again, "RESUME-TWO"), "the resumed session lacks the first turn"
            return "resumed in a new process, with the first turn in its history"
    return "resumed in a new process"


@scenario("08-kill-9", "kill -9 of the agent mid-turn")
def _kill9(p: Probe) -> str:
    thread_id = p.thread()
    killed: list[int] = []

    def strike(turn_id: str) -> None:
        for proc in p.agent_processes():
            try:
                proc.send_signal(signal.SIGKILL)
                killed.append(proc.pid)
            except psutil.Error:
                pass
    with p.rt.subscribe(thread_id=thread_id) as sub:
        events = p.turn(thread_id, p.dialect.slow(), on_event=_on_first_delta(strike))
        assert killed, "found no agent process to kill"
        assert _end(events).state == "failed", _end(events)
        deadline = time.monotonic() + p.timeout
        seen = list(events)
        while not any(_says_exit(e) for e in seen) and time.monotonic() < deadline:
            ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
            if ev is None:
                break
            seen.append(ev)
        said = [e for e in seen if _says_exit(e)]
        assert said, "no session.exited (nor a session restarting) after kill -9"
        if said[0].type == "session.state.changed":
            # The session outlives its server: it takes turns again once it says it is ready.
            while not any(e.type == "session.state.changed" and e.state == "ready"  # type: ignore[attr-defined]
                          for e in seen[seen.index(said[0]):]):
                ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
                assert ev is not None, "the session never became ready again after kill -9"
                seen.append(ev)
    prompt, expected = p.dialect.text()
    after = p.turn(thread_id, prompt)
    assert _end(after).state == "completed", _end(after)
    how = "session.exited" if said[0].type == "session.exited" else "session restarting"
    return f"turn failed, {how}, next turn completed"


def _says_exit(event: EventBase) -> bool:
    """The runtime said the agent process went away: ``session.exited``, or, where one server
    process serves every session of the instance (OpenCode) and the session outlives it, the
    session's ``session.state.changed(starting)`` naming the exit."""
    return event.type == "session.exited" or (
        event.type == "session.state.changed" and event.state == "starting"  # type: ignore[attr-defined]
        and "exited" in (event.reason or ""))  # type: ignore[attr-defined]


@scenario("09-sigstop", "SIGSTOP of the agent mid-turn, then interrupt", needs=("turns.interrupt",))
def _sigstop(p: Probe) -> str:
    thread_id = p.thread()
    stopped: list[psutil.Process] = []
    started: list[float] = []

    def strike(turn_id: str) -> None:
        for proc in p.agent_processes():
            try:
                proc.send_signal(signal.SIGSTOP)
                stopped.append(proc)
            except psutil.Error:
                pass
        started.append(time.monotonic())
        p.rt.interrupt_turn(thread_id, turn_id)
    bound = 40.0
    try:
        events = p.turn(thread_id, p.dialect.slow(), on_event=_on_first_delta(strike),
                        timeout=bound + 15)
    finally:
        for proc in stopped:
            try:
                proc.send_signal(signal.SIGCONT)
            except psutil.Error:
                pass
    assert stopped, "found no agent process to stop"
    took = time.monotonic() - started[0]
    assert _end(events).state in ("interrupted", "cancelled", "failed"), _end(events)
    assert took <= bound, f"the turn ended {took:.1f} s after the interrupt"
    warned = [e for e in events if e.type == "runtime.warning" and e.turn_id == _end(events).turn_id]
    assert warned, "the runtime did not say the agent never acknowledged the interrupt"
    p.rt.stop_session(thread_id)
    return f"ended {_end(events).state} with {warned[0].code}"  # type: ignore[attr-defined]


@scenario("10-stop-mid-turn", "stop the session mid-turn")
def _stop(p: Probe) -> str:
    thread_id = p.thread()
    with p.rt.subscribe(thread_id=thread_id) as sub:
        turn = p.rt.send_turn(thread_id, p.dialect.slow())
        seen: list[EventBase] = []
        deadline = time.monotonic() + p.timeout
        while time.monotonic() < deadline:
            ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
            assert ev is not None, "no delta"
            seen.append(ev)
            if ev.type == "content.delta":
                break
        p.rt.stop_session(thread_id, timeout=p.timeout)
        while not any(e.type == "turn.completed" for e in seen) and time.monotonic() < deadline:
            ev = sub.get(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
            if ev is None:
                break
            seen.append(ev)
    ends = [e for e in seen if e.type == "turn.completed" and e.turn_id == turn.turn_id]
    assert len(ends) == 1, f"{len(ends)} turn.completed after stop"
    assert not p.rt.has_session(thread_id) or p.rt.list_sessions() is not None
    return f"turn ended {ends[0].state}"  # type: ignore[attr-defined]


@scenario("11-model-http-error", "the model answers HTTP 400", dialect="http_error")
def _http_error(p: Probe) -> str:
    asked = p.dialect.http_error()
    assert asked is not None
    prompt, carried = asked
    events = p.turn(p.thread(), prompt)
    end = _end(events)
    assert end.state == "failed", end
    assert carried in (end.error or ""), end.error
    return "failed with the model's message"


@scenario("12-concurrent-threads", "two concurrent threads on one instance")
def _concurrent(p: Probe) -> str:
    prompt, expected = p.dialect.text()
    threads = [p.thread(), p.thread()]
    results: dict[str, Any] = {}

    def one(thread_id: str) -> None:
        try:
            results[thread_id] = p.turn(thread_id, prompt)
        except BaseException as exc:  # reported below, on the caller's thread
            results[thread_id] = exc
    workers = [threading.Thread(target=one, args=(t,)) for t in threads]
    for w in workers:
        w.start()
    for w in workers:
        w.join(p.timeout + 5)
    for thread_id in threads:
        got = results.get(thread_id)
        assert isinstance(got, list), f"{thread_id}: {got!r}"
        assert _end(got).state == "completed" and expected in _text(got), _end(got)
    return "both completed"


@scenario("13-unknown-request", "answering an unknown request id")
def _unknown_request(p: Probe) -> str:
    thread_id = p.thread()
    try:
        p.rt.respond_to_request(thread_id, "no-such-request", "accept")
    except PaddockError as exc:
        return f"refused: {type(exc).__name__}"
    raise AssertionError("an unknown request id was accepted")


def _mcp_sdk() -> None:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise NotApplicable("the test MCP server needs the mcp SDK: pip install 'agent-paddock[mcp]'")


def _tools_server(record: Path) -> McpStdioServer:
    """The test MCP server (:mod:`paddock.testing.mcp_server`) as ``tools``, recording to ``record``."""
    return McpStdioServer(name="tools", command=sys.executable,
                          args=("-m", "paddock.testing.mcp_server", "--record", str(record)))


_DEAD_SERVER = McpStdioServer(name="dead", command=sys.executable, args=("-c", "raise SystemExit(3)"))
"""An MCP server whose command exits at once, before any handshake."""


def _drain(sub: Any) -> list[EventBase]:
    """What ``sub`` holds, read until it is quiet for 0.2 s."""
    out = []
    while (ev := sub.get(timeout=0.2)) is not None:
        out.append(ev)
    return out


def _refuse_mcp(p: Probe) -> object:
    # A host that needs MCP says so; the runtime refuses before any process starts.
    return p.thread(mcp_servers=[_DEAD_SERVER], require=["tools.mcp"])


@scenario("14a-mcp-tool-call", "a tool call through the session's MCP server", needs=("tools.mcp",),
          refuse=_refuse_mcp, dialect="mcp_call")
def _mcp_call(p: Probe) -> str:
    from .mcp_server import read_record

    _mcp_sdk()
    prompt = p.dialect.mcp_call()
    assert prompt is not None
    thread_id = p.new_id()
    record = p.state_dir.parent / f"mcp-{thread_id}.jsonl"
    with p.rt.subscribe(thread_id=thread_id) as sub:
        p.thread(thread_id=thread_id, mcp_servers=[_tools_server(record)])
        events = p.turn(thread_id, prompt)
        seen = _drain(sub)
    end = _end(events)
    assert end.state == "completed", end
    calls = [(c["tool"], c["arguments"]) for c in read_record(record)]
    assert calls == [("echo", MCP_ARGUMENTS)], f"the MCP server recorded {calls}"
    items = [e for e in events if e.type == "item.completed" and e.kind == "mcp_tool_call"  # type: ignore[attr-defined]
             and e.data.get("tool") == "echo"]  # type: ignore[attr-defined]
    assert len(items) == 1 and items[0].status == "completed", [  # type: ignore[attr-defined]
        (e.type, getattr(e, "kind", None), getattr(e, "status", None)) for e in events if e.type.startswith("item.")]
    types = [(e.type, getattr(e, "server", None), getattr(e, "status", None)) for e in seen]
    assert ("mcp.status.updated", "tools", "connected") in types, [t for t in types if t[0] == "mcp.status.updated"]
    if p.server is not None:
        answered = f"echo: {MCP_ARGUMENTS['text']}"
        assert any(r.tool_output and answered in r.tool_output for r in p.server.model_calls()), \
            "no model request carried the tool's result"
    return "the server recorded the call; an mcp_tool_call item completed"


@scenario("14b-mcp-server-fails", "an MCP server that exits at once is reported; the turn still ends",
          needs=("tools.mcp",), refuse=_refuse_mcp)
def _mcp_dead(p: Probe) -> str:
    prompt, expected = p.dialect.text()
    thread_id = p.new_id()
    with p.rt.subscribe(thread_id=thread_id) as sub:
        try:
            p.thread(thread_id=thread_id, mcp_servers=[_DEAD_SERVER])
        except PaddockError as exc:  # a typed error naming the server is a report too
            assert "dead" in str(exc), exc
            return f"refused at start: {type(exc).__name__}"
        events = p.turn(thread_id, prompt)
        seen = _drain(sub)
    end = _end(events)
    assert end.state == "completed", end
    assert expected in _text(events), _text(events)[-200:]
    warned = [e for e in seen if e.type == "runtime.warning" and e.code == "mcp.not_connected"  # type: ignore[attr-defined]
              and "dead" in msgspec.json.encode(e).decode()]
    statuses = [e.status for e in seen if e.type == "mcp.status.updated" and e.server == "dead"]  # type: ignore[attr-defined]
    assert warned, f"no runtime.warning mcp.not_connected for 'dead' (its statuses: {statuses})"
    return f"turn completed; mcp.not_connected warned (dead: {', '.join(statuses) or 'no status'})"


_PREAMBLE_MARK = "PADDOCK-CONFORMANCE-PREAMBLE-4417"


def _marked(prompt: str, marker: str) -> str:
    """``prompt`` with a line holding ``marker`` (no directive, no scenario name)."""
    return f"{prompt}\n{marker}"


def _started(events: list[EventBase]) -> Any:
    return next(e for e in events if e.type == "turn.started")


def _context_of(p: Probe, marker: str) -> str:
    """What the agent worked from in the turn whose prompt held ``marker``."""
    found = [t for t in p.dialect.received(p) if marker in t]
    assert found, f"nothing the agent received holds {marker}"
    return found[0]


@scenario("15-preamble", "the first turn carries the session's preamble, once", dialect="context")
def _preamble(p: Probe) -> str:
    prompt, _ = p.dialect.text()
    thread_id = p.thread(preamble=f"{_PREAMBLE_MARK}: conformance grounding; keep answers short.")
    first = p.turn(thread_id, _marked(prompt, "PREAMBLE-ONE"))
    second = p.turn(thread_id, _marked(prompt, "PREAMBLE-TWO"))
    assert _end(first).state == "completed" and _end(second).state == "completed", (_end(first), _end(second))
    assert _started(first).preamble and not _started(second).preamble, "turn.started.preamble is wrong"
    assert _context_of(p, "PREAMBLE-ONE").count(_PREAMBLE_MARK) == 1, "the first turn lacks the preamble"
    # The second turn adds no copy: the one it holds is the first message, in its history.
    assert _context_of(p, "PREAMBLE-TWO").count(_PREAMBLE_MARK) <= 1, "the second turn carried the preamble again"
    return "the agent received the preamble once, with the first turn"


def _refuse_rollback(p: Probe) -> object:
    prompt, _ = p.dialect.text()
    thread_id = p.thread()
    p.turn(thread_id, prompt)
    return p.rt.rollback_thread(thread_id, 1)


@scenario("16a-rollback", "roll back the last turn", needs=("threads.rollback",), refuse=_refuse_rollback)
def _rollback(p: Probe) -> str:
    prompt, _ = p.dialect.text()
    thread_id = p.thread()
    for _ in range(2):
        assert _end(p.turn(thread_id, prompt)).state == "completed"
    snapshot = p.rt.rollback_thread(thread_id, 1)
    assert len(snapshot.turns) == 1, f"{len(snapshot.turns)} turns after rolling back one of two"
    assert _end(p.turn(thread_id, prompt)).state == "completed"
    return "one of two turns rolled back, the thread goes on"


@scenario("16b-fork", "fork a thread: natively where sessions.fork is on, else a hand-off")
def _fork(p: Probe) -> str:
    prompt, _ = p.dialect.text()
    source = p.thread()
    assert _end(p.turn(source, _marked(prompt, "FORK-SOURCE OSPREY"))).state == "completed"
    native = p.caps.sessions.fork
    copy = p.new_id()
    session = p.rt.fork_thread(source, copy, timeout=p.timeout)
    assert session.thread_id == copy
    # Native: the agent resumed its own copy. Hand-off: a fresh session whose first turn
    # carries the source's transcript as its preamble.
    assert session.resumed is native, f"sessions.fork is {native} but the copy resumed={session.resumed}"
    events = p.turn(copy, _marked(prompt, "FORK-COPY"))
    assert _end(events).state == "completed", _end(events)
    assert _started(events).preamble is not native, f"sessions.fork is {native} but preamble={_started(events).preamble}"
    how = "native" if native else "hand-off"
    if not p.dialect.context():
        return f"{how} copy; its turn completed"
    assert "OSPREY" in _context_of(p, "FORK-COPY"), "the copy's first turn lacks the source's history"
    assert _end(p.turn(source, _marked(prompt, "FORK-AGAIN"))).state == "completed"
    assert "FORK-COPY" not in _context_of(p, "FORK-AGAIN"), "the copy's turn reached the source"
    return f"{how} copy carried the source's history; the threads do not cross"


def _refuse_compact(p: Probe) -> object:
    prompt, _ = p.dialect.text()
    thread_id = p.thread()
    p.turn(thread_id, prompt)
    return p.rt.compact_thread(thread_id, timeout=p.timeout)


@scenario("16c-compact", "compact a thread, then go on", needs=("context.compaction",), refuse=_refuse_compact)
def _compact(p: Probe) -> str:
    prompt, expected = p.dialect.text()
    thread_id = p.thread()
    for n in range(3):  # Claude Code compacts nothing shorter
        assert _end(p.turn(thread_id, _marked(prompt, f"COMPACT-{n}"))).state == "completed"
    calls = p.model_calls()
    seen: list[EventBase] = []
    with p.rt.subscribe(thread_id=thread_id) as sub:
        result = p.rt.compact_thread(thread_id, timeout=p.timeout)
        deadline = time.monotonic() + p.timeout
        while time.monotonic() < deadline:
            ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
            assert ev is not None, f"the compaction never ended: {[e.type for e in seen][-8:]}"
            seen.append(ev)
            if result is not None and ev.type == "turn.completed" and ev.turn_id == result.turn_id:
                assert ev.state == "completed", ev  # type: ignore[attr-defined]
                break
            if result is None and ev.type in ("item.completed", "thread.state.changed"):
                break
        else:
            raise AssertionError("the compaction never ended")
    assert any(e.type == "item.completed" for e in seen), [e.type for e in seen]  # it shows as an item
    if p.server is not None:
        assert p.model_calls() > calls, "the compaction never reached the model"
    after = p.turn(thread_id, prompt)
    assert _end(after).state == "completed" and expected in _text(after), _end(after)
    return f"compacted ({'a turn' if result is not None else 'in place'}); the next turn completed"


_PNG_NAME = "conformance.png"


def _image(p: Probe) -> ImageAttachment:
    (p.workspace / _PNG_NAME).write_bytes(red_png())
    return ImageAttachment(path=_PNG_NAME, mime_type="image/png")


def _refuse_image(p: Probe) -> object:
    image = _image(p)
    return p.rt.send_turn(p.thread(), p.dialect.text()[0], attachments=[image])


@scenario("16d-image-attachment", "a turn carrying an image attachment", needs=("turns.attachments.image",),
          refuse=_refuse_image, dialect="image")
def _attachment(p: Probe) -> str:
    image = _image(p)
    prompt = p.dialect.image()
    assert prompt is not None
    events = p.turn(p.thread(), prompt, attachments=(image,))
    assert _end(events).state == "completed", _end(events)
    seen = p.dialect.saw_image(p, events)
    assert seen is not False, "the image did not reach the agent"
    return "the PNG reached the agent" if seen else "the turn completed (what the model received is not visible)"


@scenario("17-token-usage", "token usage reported", needs=("streaming.token_usage",))
def _usage(p: Probe) -> str:
    events = p.turn(p.thread(), p.dialect.usage())
    assert _end(events).state == "completed"
    usage = [e for e in events if e.type == "thread.token-usage.updated"]
    end = _end(events)
    assert usage or end.usage is not None, "no usage in the turn"
    return "usage reported"


# running -----------------------------------------------------------------------------------------


DEAD_ENDPOINT_TIMEOUT = 5.0
"""The ``endpoint_timeout`` of the dead-endpoint scenario; the turn must end within it plus
:data:`DEAD_ENDPOINT_SLACK`."""
DEAD_ENDPOINT_SLACK = 20.0


def _refused_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # closed again: nothing listens there


@scenario("18-dead-endpoint", "a model endpoint that refuses connections fails the turn within endpoint_timeout",
          dialect="waits_on_model")
def _dead_endpoint(p: Probe) -> str:
    """A second Runtime with the instance's ``endpoint`` on a refused port: the turn ends
    ``failed``, once, within the bound; when the runtime ended it (the agent may give up first,
    e.g. with its retries capped), one ``runtime.error`` ``endpoint.unreachable`` names the
    endpoint and the turn's error does too."""
    from paddock import Runtime

    prompt = p.dialect.waits_on_model()
    assert prompt is not None
    url = _refused_url()
    instance = {**p.config["instances"][p.instance], "endpoint": url, "endpoint_timeout": DEAD_ENDPOINT_TIMEOUT}
    config = {**p.config, "instances": {p.instance: instance}}
    thread_id = p.new_id()
    with Runtime.open(config, state_dir=p.state_dir.with_name(p.state_dir.name + "-dead-endpoint")) as rt, \
            rt.subscribe(thread_id=thread_id) as sub:
        rt.start_session(thread_id, instance=p.instance, cwd=str(p.workspace), runtime_mode="full-access",
                         timeout=p.timeout)
        started = time.monotonic()
        collect_turn(rt, thread_id, prompt, timeout=DEAD_ENDPOINT_TIMEOUT + DEAD_ENDPOINT_SLACK)
        took = time.monotonic() - started
        events = _drain(sub)  # the thread's whole stream, and what followed its turn.completed
    violations = check_grammar(events)
    assert not violations, [v.code for v in violations]
    completed = [e for e in events if e.type == "turn.completed"]
    assert [e.state for e in completed] == ["failed"], [(e.type, getattr(e, "state", None)) for e in events]  # type: ignore[attr-defined]
    errors = [e for e in events if e.type == "runtime.error" and e.code == "endpoint.unreachable"]  # type: ignore[attr-defined]
    if errors or took >= DEAD_ENDPOINT_TIMEOUT:
        assert len(errors) == 1 and url in errors[0].message, [e.type for e in events]  # type: ignore[attr-defined]
        assert url in (completed[0].error or ""), completed[0]  # type: ignore[attr-defined]
    return f"the turn failed once within endpoint_timeout + {DEAD_ENDPOINT_SLACK:g} s"


@dataclass
class Target:
    """One instance to check: ``config`` is its ``[instances.<id>]`` table (the model keys are
    filled in when ``model_server`` is true); ``scenarios`` limits the run (``None``: every
    scenario); ``why_skipped`` names why a scenario is left out (reported as ``n/a``)."""

    label: str
    config: dict[str, Any]
    dialect: Dialect = field(default_factory=Dialect)
    model_server: bool = True
    scenarios: tuple[str, ...] | None = None
    why_skipped: str = "left out of this run (Target.scenarios)"
    cli_version: str | None = None
    corpus: str = "paddock-scripted-model"
    timeout: float = 60.0
    secrets: tuple[str, ...] = ()
    script: dict[str, list[Any]] = field(default_factory=dict)
    """Model-server scenarios added or replaced for this agent (:func:`model_script`)."""
    resume_after: float = 0.0
    """Seconds the agent needs a session to exist before a fresh process can load it (the resume
    scenario waits that long, from the session's start, before it resumes)."""


def _caps_dict(caps: Capabilities) -> dict[str, Any]:
    return msgspec.to_builtins(caps)  # type: ignore[no-any-return]


def _observed(rt: Runtime) -> Capabilities:
    """The instance's capabilities now (for ACP: negotiated once its agent answered)."""
    [info] = [i for i in rt.instances() if i.id == "agent"]
    assert info.capabilities is not None
    return info.capabilities


def _check(sc: Scenario, p: Probe) -> Case:
    off = [n for n in sc.needs if not capability_on(p.caps, n)]
    if off:
        if sc.refuse is not None:
            try:
                sc.refuse(p)
            except CapabilityUnsupportedError as exc:
                # A refusal may name the flag or its group's tuple ("turns.attachments" for
                # "turns.attachments.image").
                if not any(n == exc.capability or n.startswith(exc.capability + ".") for n in off):
                    return Case(scenario=sc.id, result="fail", reason=f"refused naming {exc.capability}, not {off[0]}")
            except (AssertionError, PaddockError) as exc:
                return Case(scenario=sc.id, result="fail", reason=f"{off[0]} is off but: {type(exc).__name__}: {exc}")
            else:
                return Case(scenario=sc.id, result="fail", reason=f"{off[0]} is off but the operation was accepted")
        return Case(scenario=sc.id, result="n/a", reason=f"{off[0]} is off")
    if sc.dialect is not None and getattr(p.dialect, sc.dialect)() is None:
        return Case(scenario=sc.id, result="n/a", reason=p.dialect.why_not.get(sc.dialect, "cannot be asked"))
    try:
        said = sc.run(p)
    except NotApplicable as exc:
        return Case(scenario=sc.id, result="n/a", reason=str(exc))
    except (AssertionError, PaddockError, TimeoutError) as exc:
        return Case(scenario=sc.id, result="fail", reason=f"{type(exc).__name__}: {exc}"[:600])
    return Case(scenario=sc.id, result="pass", reason=said)


@contextmanager
def _model_server(target: Target, root: Path, workspace: Path) -> Iterator[Any]:
    if not target.model_server:
        yield None
        return
    from .model_server import ModelServer

    with ModelServer(model_script(target.script), workspace=workspace, log_path=root / "model-requests.jsonl") as server:
        yield server


def run_target(target: Target, root: Path, *, only: tuple[str, ...] | None = None,
               on_case: Callable[[Case, float], None] | None = None) -> DriverReport:
    """Run the scenario table against ``target`` under the scratch folder ``root`` and return its
    report. Each case's events (every thread of the runtime) go through the grammar checker; a
    violation fails the case with its codes. ``on_case(case, seconds)`` is told each result.
    Runs on the caller's thread; starts and ends every process it needs."""
    from paddock import Runtime, __version__

    root.mkdir(parents=True, exist_ok=True)
    workspace = root / "workspace"
    workspace.mkdir(exist_ok=True)
    cases: list[Case] = []
    ids = itertools.count(1)
    with _model_server(target, root, workspace) as server:
        instance = dict(target.config)
        if server is not None:
            if instance.get("driver") == "acp-registry":
                instance["env"] = {**instance.get("env", {}), "ANTHROPIC_BASE_URL": server.url}
            else:
                instance.setdefault("endpoint", server.url)
        config = {"instances": {"agent": instance}}
        state = root / "state"
        with Runtime.open(config, state_dir=state) as rt:
            [info] = [i for i in rt.instances() if i.id == "agent"]
            if info.status != "available":
                raise LookupError(f"{target.label}: {info.reason}")
            caps = info.capabilities
            assert caps is not None
            if caps.sessions.shared_process:
                # The agent answers initialize when its process starts: judge and report the
                # negotiated flags, not only the declared ones.
                opened = f"conf-{next(ids)}"
                rt.start_session(opened, instance="agent", cwd=str(workspace), timeout=target.timeout)
                rt.stop_session(opened, timeout=target.timeout)
            for sc in SCENARIOS.values():
                if only is not None and sc.id not in only:
                    continue
                caps = _observed(rt)
                t0 = time.monotonic()
                if target.scenarios is not None and sc.id not in target.scenarios:
                    case = Case(scenario=sc.id, result="n/a", reason=target.why_skipped)
                else:
                    probe = Probe(rt, "agent", workspace, target.dialect, caps, config, state, server, target.timeout,
                                  ids, resume_after=target.resume_after)
                    with rt.subscribe() as sub:
                        case = _check(sc, probe)
                        rt.stop_all(timeout=target.timeout)
                        seen = _drain(sub)
                    violations = check_grammar(seen)
                    if violations:
                        codes = tuple(sorted({v.code for v in violations}))
                        first = violations[0]
                        case = Case(scenario=sc.id, result="fail", violations=codes,
                                    reason=f"{first.code}: {first.message} (events {[e.seq for e in first.events]})")
                cases.append(case)
                if on_case is not None:
                    on_case(case, time.monotonic() - t0)
            caps = _observed(rt)
    return DriverReport(driver=str(target.config.get("driver")), flavor=target.label, cli_version=target.cli_version,
                        paddock_version=__version__, corpus=target.corpus, capabilities=_caps_dict(caps),
                        cases=tuple(cases))


# the drivers -------------------------------------------------------------------------------------

LIVE_KEY = "sk-paddock-conformance-key"
"""The api key every live target is configured with (masked in every report)."""

_LIVE_MODELS = {
    "claude": "claude-sonnet-4-5",
    "codex": "mock-model",
    "opencode": "mock-model",
    "gemini": "gemini-2.5-flash",
    "qwen": "qwen3-coder",
    "claude-acp": "claude-sonnet-4-5",
    "copilot": "gpt-4.1",
    "codex-acp": "gpt-5.4-mini",
}
LIVE_DRIVERS: tuple[str, ...] = (*_LIVE_MODELS, "acp-registry")
"""Every driver and flavor the suite runs live, against its pinned CLI, on every scenario."""


def local_target() -> Target:
    """The built-in local agent: no model, no config, every scenario. Its cancel timeout is
    short so the SIGSTOP scenario ends in seconds."""
    return Target(label="local", config={"driver": "local", "cancel_timeout": 5.0}, dialect=LocalDialect(),
                  model_server=False, corpus="local-agent-directives", timeout=30.0)


def live_target(kind: str, *, scenarios: tuple[str, ...] | None = None) -> Target | str:
    """The target of a pinned CLI against the scripted model server, running ``scenarios``
    (``None``: all), or why it cannot run (not installed, with the install command)."""
    from paddock.drivers._peers import load_pins, peer_argv

    if kind == "acp-registry":
        from paddock.drivers.acp import load_registry, registry_command

        agent = "claude-code-acp"
        resolved = registry_command(load_registry().agent(agent), {"PATH": os.environ.get("PATH", os.defpath)})
        if isinstance(resolved, str):
            return resolved
        env = {"ANTHROPIC_API_KEY": LIVE_KEY, "ANTHROPIC_MODEL": "claude-sonnet-4-5", "DISABLE_TELEMETRY": "1",
               "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_ERROR_REPORTING": "1"}
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"
        # A registry agent gets no mapping of the model keys: its own variables go in env
        # (ANTHROPIC_BASE_URL is filled in with the model server's URL by run_target).
        return Target(label="acp-registry", config={"driver": "acp-registry", "agent": agent, "env": env,
                                                    "cancel_timeout": 5.0}, dialect=RegistryDialect(),
                      scenarios=scenarios, cli_version="claude-code-acp@registry", secrets=(LIVE_KEY,))
    pin = load_pins()[kind]
    if peer_argv(pin) is None:
        return f"{pin.package}@{pin.version} is not installed; install with: {pin.install_hint}"
    config: dict[str, Any] = {"driver": kind, "api_key": LIVE_KEY, "model": _LIVE_MODELS[kind]}
    # Short bounds on an unacknowledged interrupt: the SIGSTOP scenario waits for them.
    config["interrupt_timeout" if kind in ("claude", "codex", "opencode") else "cancel_timeout"] = 5.0
    if kind == "codex":
        config["config"] = {
            "model_catalog_json": str(Path(__file__).with_name("codex_model_catalog.json")),
            "model_providers": {"paddock": {"request_max_retries": 0, "stream_max_retries": 0}},
            "history": {"persistence": "none"}, "features": {"shell_snapshot": False},
        }
    if kind in ("claude", "claude-acp"):
        config["env"] = {"CLAUDE_CODE_MAX_RETRIES": "0", **({"IS_SANDBOX": "1"} if os.geteuid() == 0 else {})}
    script: dict[str, list[Any]] = {}
    if kind == "qwen":
        from ._scenario import McpCall

        # Qwen Code defers MCP tools: its system prompt lists them by name and the model first
        # fetches one with tool_search ("select:<name>"), then calls it.
        script["conf_mcp"] = [McpCall(tool="tool_search", arguments={"query": "select:mcp__tools__echo"}),
                              McpCall(tool="echo", server="tools", arguments=MCP_ARGUMENTS)]
    # Gemini CLI 0.61 fails `session/load` of a session younger than a minute in a fresh process
    # (-32603; drivers/acp/flavors/_gemini.py): its resume is checked after that minute.
    resume_after = 61.0 if kind == "gemini" else 0.0
    return Target(label=kind, config=config, scenarios=scenarios, cli_version=pin.version,
                  secrets=(LIVE_KEY,), script=script, resume_after=resume_after)


def instance_target(label: str, table: dict[str, Any], secrets: tuple[str, ...], *, mock: bool = False) -> Target:
    """The target of a configured instance (its ``[instances.<label>]`` table). A ``local`` one
    is checked with the local agent's directives. One whose endpoint answers as Paddock's
    scripted model server (``paddock mock-model``), or any with ``mock``, runs against a scripted
    model server :func:`run_target` starts with this suite's script, as the suite's own targets
    do: its model keys (``endpoint``, ``api_key``, ``model``) are the pinned target's, since the
    script is written for them (Codex offers ``apply_patch`` by its model catalog), and its other
    keys are kept over the pinned target's settings.
    Any other talks to its own model in plain language (:class:`PlainDialect`)."""
    driver = table.get("driver")
    if driver == "local":
        local = local_target()
        return Target(label=label, config={**local.config, **table}, dialect=local.dialect, model_server=False,
                      corpus=local.corpus, timeout=local.timeout, secrets=secrets)
    if mock or answers_as_mock_model(table.get("endpoint")):
        pinned = live_target(driver) if driver in LIVE_DRIVERS else None
        base = pinned if isinstance(pinned, Target) else Target(label=label, config={})
        model_keys = ("endpoint", "api_key", "api_key_env", "model")
        config = {**base.config, **{k: v for k, v in table.items() if k not in model_keys}}
        config.update({k: base.config[k] for k in model_keys if k in base.config})
        return Target(label=label, config=config, secrets=(*secrets, *base.secrets), script=base.script,
                      resume_after=base.resume_after, cli_version=base.cli_version)
    return Target(label=label, config=table, dialect=PlainDialect(), model_server=False, corpus="configured-instance",
                  timeout=180.0, secrets=secrets)


def answers_as_mock_model(endpoint: object, *, timeout: float = 2.0) -> bool:
    """Whether ``endpoint`` (a loopback URL) is Paddock's scripted model server: its answers
    carry ``Server: PaddockMockModel/…``. Asks nothing beyond this machine."""
    import http.client
    import urllib.parse

    if not isinstance(endpoint, str):
        return False
    url = urllib.parse.urlsplit(endpoint)
    if url.scheme != "http" or url.hostname not in ("127.0.0.1", "localhost", "::1") or url.port is None:
        return False
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        conn.request("GET", "/")
        return conn.getresponse().getheader("Server", "").startswith("PaddockMockModel/")
    except OSError:
        return False
    finally:
        conn.close()


# 19: the model answers a usage limit that resets 3 s after its first call; the case says how the
# driver handles it: runtime.error of class usage_limit (with or without resets_at), or the agent
# retried by itself and the turn completed after the reset. A turn that fails without the class
# fails the case.
@scenario("19-usage-limit", "the model answers a usage limit (3 s)", dialect="usage_limit")
def _usage_limit(p: Probe) -> str:
    prompt = p.dialect.usage_limit()
    assert prompt is not None
    events: list[Any] = p.turn(p.thread(), prompt)
    end = events[-1]
    limits = [e for e in events if e.type == "runtime.error" and getattr(e, "error_class", None) == USAGE_LIMIT]
    if limits:
        assert end.state == "failed", end
        return f"{USAGE_LIMIT} " + ("with resets_at" if limits[0].resets_at is not None else "without resets_at")
    assert end.state == "completed", f"the turn ended {end.state} with no {USAGE_LIMIT} class: {end.error}"
    text = "".join(e.delta for e in events if e.type == "content.delta" and e.stream == "assistant_text")
    assert "Back after the reset" in text, text[-200:]
    return "the agent retried by itself and completed after the reset"


# 20: The agent is made to run one shell line that reads the state dir's ``server.token`` and another
# instance's credential file, writes into the state dir (outside every root) and signals the host.
# The case passes when the kernel refused each (``Permission denied`` / ``Operation not
# permitted`` in the command's output), neither file's contents appear in any event, nothing was
# written and the turn still ended. Where the instance is not confined (a kernel without Landlock,
# ``confinement = "none"``) the case is ``n/a`` saying so. Network confinement (``network =
# "endpoints"``) is an instance key this one-instance suite does not vary; ``tests/confine`` covers it.
def _confine_prompt(p: Probe) -> str:
    if isinstance(p.dialect, LocalDialect):
        return f"@run {CONFINE_COMMAND}\nlook around"
    if isinstance(p.dialect, PlainDialect):
        return f"Run this shell command, and nothing else: {CONFINE_COMMAND}"
    return "look around SCENARIO:conf_confine"


@scenario("20-confinement", "the kernel refuses the state dir, another instance's home and signalling the host")
def _confinement(p: Probe) -> str:
    [info] = [i for i in p.rt.instances() if i.id == p.instance]
    held = info.confinement
    opted_out = held is not None and held.setting == "none"
    if held is None or not held.confined:
        if not opted_out:
            raise NotApplicable(f"the instance is not confined: {held.reason if held and held.reason else 'confinement = none'}")
    (p.state_dir / "server.token").write_text(_TOKEN)
    other = p.state_dir / "instances" / "conf-other"
    other.mkdir(parents=True, exist_ok=True)
    (other / "credentials.json").write_text(_CREDENTIAL)
    (p.workspace / "conformance-host.pid").write_text(str(os.getpid()))
    events = p.turn(p.thread(), _confine_prompt(p))
    _end(events)  # the turn ended
    shown = " ".join(str(e) for e in events)
    # The command's output: in its events, and (for an agent whose events carry none of it, such
    # as Gemini CLI's) in the tool result it sent the scripted model.
    output = shown + " ".join(json.dumps(r.body) for r in p.server.model_calls()) if p.server is not None else shown
    if held is None or not held.confined:
        # confinement = "none", said explicitly: the same command shows what the kernel refuses
        # elsewhere (so the confined case can fail): each access succeeds, and the case says so.
        succeeded = [what for what, ok in (
            ("read server.token", _TOKEN in output), ("read another instance's credentials", _CREDENTIAL in output),
            ("wrote into the state dir", (p.state_dir / "planted").exists()),
            ("signalled the host", "Operation not permitted" not in output)) if ok]
        raise NotApplicable("the instance is not confined (confinement = none): unconfined, the agent "
                            + (", ".join(succeeded) if succeeded else "did none of it"))
    assert _TOKEN not in shown and _CREDENTIAL not in shown, "a refused file's contents reached an event"
    assert not (p.state_dir / "planted").exists(), "the agent wrote into the state dir"
    # Outside the roots Landlock answers EACCES; a state dir inside a root is covered by an empty
    # read-only folder (ENOENT, EROFS).
    refusals = sum(output.count(s) for s in ("Permission denied", "No such file or directory", "Read-only file system"))
    assert refusals >= 3, "reading and writing were not all refused"
    assert "Operation not permitted" in output or held.landlock_abi < 6, "signalling the host was not refused"
    return (f"refused by the kernel (Landlock ABI {held.landlock_abi}); the runtime modes stay the agent's and "
            "the runtime's approvals, not the kernel's")
