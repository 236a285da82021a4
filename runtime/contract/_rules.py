"""Approval rules: what an operator writes once to answer requests the same way on every driver.

A rule is ``{ match = {...}, decision = "accept" | "decline" }``; :func:`decide` reads an ordered
list of them against one request's subject (what its ``request.opened`` carries) and gives the
first match's decision, or ``None``: a person decides. Pure and total: it never raises, writes
nothing and reads the disk only to resolve symlinks (``os.path.realpath``).

Safe by construction (docs/architecture.md, "Approval rules"):

- a command line is parsed by a small shell tokenizer of its own (words, quotes, operators,
  substitutions, redirections); a compound command is accepted only when every part matches an
  accept rule, and declined when any part matches a decline rule; whatever the tokenizer cannot
  classify (parameter expansion, heredocs, control keywords, comments, unbalanced quotes, control
  characters) is ambiguous and goes to a person (a whole-line decline glob still declines it);
- a part that assigns variables (``X=1 git status``) or redirects to a file is never accepted;
- a path (a file an edit writes, a command's cwd) that resolves outside the workspace roots never
  matches an accept rule;
- a rule chooses only a decision the request offered, and never ``accept_for_session``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Literal

import msgspec

from ._events import CommandSubject, FileChangeSubject, RequestSubject, ToolSubject
from ._shell import CommandPart, split_command

__all__ = [
    "ApprovalRule",
    "RuleDecision",
    "RuleMatch",
    "RuleSubject",
    "compile_glob",
    "decide",
    "rule_text",
]

RuleVerdict = Literal["accept", "decline"]
ChangeKind = Literal["add", "update", "delete", "move"]


class RuleMatch(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """What a rule matches; every key given must match. Commands: ``program`` (the argument
    prefix, word for word: ``["git", "status"]``), ``command`` (a glob on the command line of
    each part) and ``cwd`` (a glob on the folder, relative to the workspace root unless it starts
    with ``/``). File changes: ``path`` (a glob on each file, relative to the workspace root:
    ``*`` stays within a folder, ``**`` crosses folders) and ``change`` (``add``, ``update``,
    ``delete``, ``move``). Tools: ``server`` and ``tool`` (globs; ``server`` names the MCP
    server). ``kind`` (``command``, ``file_change``, ``tool``) is implied by the keys; alone it
    matches every request of that kind."""

    kind: Literal["command", "file_change", "tool"] | None = None
    program: tuple[str, ...] | None = None
    command: str | None = None
    cwd: str | None = None
    path: str | None = None
    change: tuple[ChangeKind, ...] | None = None
    server: str | None = None
    tool: str | None = None

    def __post_init__(self) -> None:
        kinds = {k for k, keys in _KIND_KEYS.items() if any(getattr(self, key) is not None for key in keys)}
        if self.kind is not None:
            kinds.add(self.kind)
        if not kinds:
            raise ValueError("a match needs at least one key (kind, program, command, cwd, path, change, server, tool)")
        if len(kinds) > 1:
            raise ValueError(f"a match mixes keys of {' and '.join(sorted(kinds))} requests; write one rule for each")
        if self.program is not None and (not self.program or any(not w for w in self.program)):
            raise ValueError("program is a non-empty list of non-empty words, e.g. [\"git\", \"status\"]")
        if self.change is not None and not self.change:
            raise ValueError("change lists at least one of add, update, delete, move")
        for key in ("command", "cwd", "path", "server", "tool"):
            value = getattr(self, key)
            if value is not None:
                compile_glob(value, key)

    @property
    def subject_kind(self) -> str:
        if self.kind is not None:
            return self.kind
        return next(k for k, keys in _KIND_KEYS.items() if any(getattr(self, key) is not None for key in keys))


_KIND_KEYS = {"command": ("program", "command", "cwd"), "file_change": ("path", "change"), "tool": ("server", "tool")}


class ApprovalRule(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """One rule: the first rule whose ``match`` matches decides ``decision``."""

    match: RuleMatch
    decision: RuleVerdict


class RuleSubject(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`decide` reads: the request's ``subject`` (from its ``request.opened``), the
    session's cwd (a command's cwd when its subject names none, the base of relative paths) and
    its workspace roots (``()``: the cwd alone)."""

    subject: RequestSubject | None
    cwd: str
    roots: tuple[str, ...] = ()


class RuleDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A rule's answer: ``decision`` (one the request offered), ``index`` (the rule's position in
    the list given), ``rule`` (its text, :func:`rule_text`) and ``reason`` (why it matched)."""

    decision: RuleVerdict
    index: int
    rule: str
    reason: str


def rule_text(rule: ApprovalRule) -> str:
    """A rule as one line of JSON (``{"match":{...},"decision":"accept"}``), for the audit."""
    return msgspec.json.encode(rule).decode()


# decide --------------------------------------------------------------------------------------------


def decide(rules: Sequence[ApprovalRule], subject: RuleSubject, offered: Sequence[str]) -> RuleDecision | None:
    """The decision of the first matching rule, or ``None`` (a person decides): no rule matches,
    the subject is ambiguous, the parts disagree, or the decision is not one ``offered``.

    A request is split into parts (a command's simple commands, an edit's files, a tool call);
    each part's decision is its first matching rule's. Any part declined: the request is declined
    (by the first such rule); every part accepted: accepted (the first part's rule); else
    ``None``. Pure and total; runs on any thread."""
    try:
        verdict = _decide(rules, subject)
    except RecursionError:  # pragma: no cover - bounded by _MAX_DEPTH; kept so decide never raises
        return None
    if verdict is None:
        return None
    wanted = verdict.decision
    if wanted not in offered:
        return None
    return verdict


def _decide(rules: Sequence[ApprovalRule], subject: RuleSubject) -> RuleDecision | None:
    s = subject.subject
    if isinstance(s, CommandSubject):
        return _decide_command(rules, s, subject)
    if isinstance(s, FileChangeSubject):
        return _decide_files(rules, s, subject)
    if isinstance(s, ToolSubject):
        return _first(rules, "tool", [(f"tool {s.tool!r}", _tool_fits(s))], ambiguous=False)
    return None


_Fit = Callable[[RuleMatch, RuleVerdict], "str | None"]
"""A part's test of one rule: the reason the rule's match fits it, else ``None``."""


def _first(rules: Sequence[ApprovalRule], kind: str, parts: list[tuple[str, _Fit]], *,
           ambiguous: bool) -> RuleDecision | None:
    """Decide over ``parts`` (each a label and a fit: ``fit(match, verdict)`` gives the reason it
    matches, else ``None``). ``ambiguous``: nothing can be accepted (declines still apply)."""
    if not parts:
        return None
    found: list[RuleDecision | None] = []
    for label, fit in parts:
        hit: RuleDecision | None = None
        for index, rule in enumerate(rules):
            if rule.match.subject_kind != kind:
                continue
            why = fit(rule.match, rule.decision)
            if why is None:
                continue
            if rule.decision == "accept" and ambiguous:
                continue
            hit = RuleDecision(decision=rule.decision, index=index, rule=rule_text(rule), reason=f"{label}: {why}")
            break
        found.append(hit)
    declines = [d for d in found if d is not None and d.decision == "decline"]
    if declines:
        return min(declines, key=lambda d: d.index)
    if ambiguous or any(d is None for d in found):
        return None
    first = found[0]
    assert first is not None
    if len(found) > 1:
        reasons = "; ".join(d.reason for d in found if d is not None)
        return msgspec.structs.replace(first, reason=f"every part is accepted: {reasons}")
    return first


# commands ------------------------------------------------------------------------------------------


def _decide_command(rules: Sequence[ApprovalRule], s: CommandSubject, subject: RuleSubject) -> RuleDecision | None:
    line = s.command
    cwd = s.cwd or subject.cwd
    real_cwd, rel_cwd = _resolve(cwd, subject)
    parts = split_command(line)
    if parts is None:
        # Ambiguous: only a decline that needs no parts (a glob on the whole line, the cwd) applies.
        def whole(m: RuleMatch, verdict: RuleVerdict) -> str | None:
            if m.program is not None:
                return None
            return _command_fits(m, line, None, real_cwd, rel_cwd, whole_line=line, decline=True)
        return _first(rules, "command", [("the command (not parsed: a person decides unless a rule declines it)",
                                          whole)], ambiguous=True)
    outside = rel_cwd is None
    entries: list[tuple[str, _Fit]] = []
    for part in parts:
        def fit(m: RuleMatch, verdict: RuleVerdict, part: CommandPart = part) -> str | None:
            if verdict == "accept" and (outside or part.assigns or part.writes):
                return None
            return _command_fits(m, part.text, part.argv, real_cwd, rel_cwd, whole_line=line,
                                 decline=verdict == "decline")
        entries.append((f"part {part.text!r}", fit))
    return _first(rules, "command", entries, ambiguous=False)


def _command_fits(m: RuleMatch, text: str, argv: tuple[str, ...] | None, real_cwd: str, rel_cwd: str | None, *,
                  whole_line: str, decline: bool) -> str | None:
    """Why ``m`` fits one part (``text``, ``argv``); ``None`` when it does not. A ``command``
    glob reads the part's own line; a decline's also reads the whole line."""
    why: list[str] = []
    if m.program is not None:
        if argv is None or argv[: len(m.program)] != m.program:
            return None
        why.append(f"program starts {list(m.program)!r}")
    if m.command is not None:
        glob = compile_glob(m.command, "command", path=False)
        if glob.fullmatch(text):
            why.append(f"command matches {m.command!r}")
        elif decline and glob.fullmatch(whole_line):
            why.append(f"the whole line matches {m.command!r}")
        else:
            return None
    if m.cwd is not None:
        if not _path_glob_fits(m.cwd, real_cwd, rel_cwd):
            return None
        why.append(f"cwd matches {m.cwd!r}")
    return ", ".join(why) or "any command"


# files ---------------------------------------------------------------------------------------------


def _decide_files(rules: Sequence[ApprovalRule], s: FileChangeSubject, subject: RuleSubject) -> RuleDecision | None:
    entries: list[tuple[str, _Fit]] = []
    for edit in s.files:
        paths = [edit.path] + ([edit.move_to] if edit.move_to else [])
        resolved = [_resolve(p, subject) for p in paths]

        def fit(m: RuleMatch, verdict: RuleVerdict, resolved: list[tuple[str, str | None]] = resolved,
                change: str = edit.change) -> str | None:
            if verdict == "accept" and any(rel is None for _, rel in resolved):
                return None  # a path outside the workspace
            if m.change is not None and change not in m.change:
                return None
            if m.path is not None and not all(_path_glob_fits(m.path, real, rel) for real, rel in resolved):
                return None
            return ", ".join(filter(None, [f"path matches {m.path!r}" if m.path else None,
                                           f"change {change!r}" if m.change else None])) or "any file change"
        entries.append((f"file {edit.path!r}", fit))
    return _first(rules, "file_change", entries, ambiguous=False)


def _resolve(path: str, subject: RuleSubject) -> tuple[str, str | None]:
    """``path`` resolved against the cwd (symlinks followed) and its form relative to the
    workspace root holding it (``None``: outside every root)."""
    try:
        base = subject.cwd or "/"
        real = os.path.realpath(os.path.join(base, path))
        roots = subject.roots or (subject.cwd,)
        for root in roots:
            if not root:
                continue
            real_root = os.path.realpath(root)
            if real == real_root:
                return real, "."
            if real.startswith(real_root.rstrip(os.sep) + os.sep):
                return real, os.path.relpath(real, real_root)
        return real, None
    except (OSError, ValueError):  # a NUL byte, a loop: not a path we can vouch for
        return path, None


def _path_glob_fits(glob: str, real: str, rel: str | None) -> bool:
    if glob.startswith("/"):
        return bool(compile_glob(glob, "path").fullmatch(real))
    return rel is not None and bool(compile_glob(glob, "path").fullmatch(rel))


# tools ---------------------------------------------------------------------------------------------


def _tool_fits(s: ToolSubject) -> _Fit:
    def fit(m: RuleMatch, verdict: RuleVerdict) -> str | None:
        why = []
        if m.server is not None:
            if s.server is None or not compile_glob(m.server, "server", path=False).fullmatch(s.server):
                return None
            why.append(f"server matches {m.server!r}")
        if m.tool is not None:
            if not compile_glob(m.tool, "tool", path=False).fullmatch(s.tool):
                return None
            why.append(f"tool matches {m.tool!r}")
        return ", ".join(why) or "any tool"
    return fit


# globs ---------------------------------------------------------------------------------------------

_GLOBS: dict[tuple[str, bool], re.Pattern[str]] = {}


def compile_glob(glob: str, key: str, *, path: bool = True) -> re.Pattern[str]:
    """The regular expression of a glob: ``*`` any text (within one folder for a ``path``),
    ``**`` any text across folders, ``?`` one character, ``[...]`` a class (``[!...]``
    negated). Raises ``ValueError`` naming ``key`` for a malformed glob (empty, an unclosed
    ``[``, a control character)."""
    cached = _GLOBS.get((glob, path))
    if cached is not None:
        return cached
    if not glob:
        raise ValueError(f"{key}: the glob is empty")
    if any(ord(c) < 32 or c == "\x7f" for c in glob):
        raise ValueError(f"{key}: the glob {glob!r} holds a control character")
    out: list[str] = []
    i, n = 0, len(glob)
    star = "[^/]*" if path else ".*"
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                i += 2
                if path and glob.startswith("/", i):
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append(star)
        elif c == "?":
            out.append("[^/]" if path else ".")
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            end = glob.find("]", j)
            if end < 0:
                raise ValueError(f"{key}: the glob {glob!r} has a '[' that is never closed")
            body = glob[i + 1:end]
            negated = body[:1] in ("!", "^")
            chars = "".join("\\" + ch if ch in "\\[]^" else ch for ch in (body[1:] if negated else body))
            out.append("[" + ("^" if negated else "") + chars + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    try:
        pattern = re.compile("".join(out), re.DOTALL)
    except re.error as exc:
        raise ValueError(f"{key}: the glob {glob!r} is malformed ({exc})") from None
    if len(_GLOBS) < 4096:
        _GLOBS[(glob, path)] = pattern
    return pattern
