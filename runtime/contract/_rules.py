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
import shlex
from collections.abc import Callable, Sequence
from typing import Literal

import msgspec

from ._events import CommandSubject, FileChangeSubject, RequestSubject, ToolSubject

__all__ = [
    "ApprovalRule",
    "RuleDecision",
    "RuleMatch",
    "RuleSubject",
    "compile_glob",
    "decide",
    "rule_text",
    "split_command",
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
        def fit(m: RuleMatch, verdict: RuleVerdict, part: _Part = part) -> str | None:
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


# the shell tokenizer -------------------------------------------------------------------------------


class _Part(msgspec.Struct, frozen=True):
    """One simple command: its words (``argv``; a word holding a substitution is marked with a
    NUL so it never equals a literal), whether it assigns variables or redirects to a file."""

    argv: tuple[str, ...]
    assigns: bool
    writes: bool

    @property
    def text(self) -> str:
        return " ".join("$(…)" if "\0" in w else shlex.quote(w) for w in self.argv)


class _Ambiguous(Exception):
    pass


_MAX_DEPTH = 8
_BLANK = " \t"
_META = " \t\n;&|<>()"
_RESERVED = frozenset({
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done",
    "function", "time", "!", "[[", "]]", "{", "}", "coproc", "in",
})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_SHELL_DIRS = ("", "/bin/", "/usr/bin/", "/usr/local/bin/")
_DYNAMIC = "\0"
_SAFE_TARGETS = frozenset({"/dev/null"})


def split_command(line: str) -> list[_Part] | None:
    """The simple commands of a shell command line, or ``None`` when it is ambiguous (see the
    module's docstring). ``sh -c 'SCRIPT'`` (bash, zsh, dash; ``-lc`` too) is split into the
    parts of ``SCRIPT``."""
    try:
        return _split(line, 0)
    except (_Ambiguous, RecursionError):
        return None


def _split(line: str, depth: int) -> list[_Part]:
    if depth > _MAX_DEPTH:
        raise _Ambiguous
    if any((ord(c) < 32 and c not in "\t\n") or c == "\x7f" for c in line):
        raise _Ambiguous
    parser = _Parser(line, depth)
    parts = parser.parse_list(None)
    if not parts:
        raise _Ambiguous
    out: list[_Part] = []
    for part in parts:
        argv = part.argv
        if (len(argv) == 3 and not part.assigns and not part.writes and argv[1] in ("-c", "-lc")
                and _DYNAMIC not in argv[2] and any(argv[0] == d + s for d in _SHELL_DIRS for s in _SHELLS)):
            out.extend(_split(argv[2], depth + 1))
        else:
            out.append(part)
    return out


class _Parser:
    __slots__ = ("s", "i", "depth", "parts")

    def __init__(self, s: str, depth: int) -> None:
        self.s = s
        self.i = 0
        self.depth = depth
        self.parts: list[_Part] = []

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def parse_list(self, closer: str | None) -> list[_Part]:
        """Parse commands until the end (``closer`` ``None``) or the ``)`` that closes a
        subshell or ``$(``; every part found (also inside substitutions) joins ``self.parts``."""
        words: list[str] = []
        quoted_first = False
        assigns = writes = False
        sealed = False  # after a subshell's ')': only an operator may follow
        empty_ok = True  # a separator may follow nothing only at the start of a line

        def finish(sep: str) -> None:
            nonlocal words, assigns, writes, sealed, empty_ok, quoted_first
            if words or assigns or writes:
                if words and not quoted_first and words[0] in _RESERVED:
                    raise _Ambiguous
                self.parts.append(_Part(tuple(words), assigns, writes))
            elif not sealed and not (sep == "\n" and empty_ok):
                raise _Ambiguous  # an operator with no command before it
            words, assigns, writes, sealed, quoted_first = [], False, False, False, False
            empty_ok = sep == "\n"

        while True:
            while self.peek() and self.peek() in _BLANK:
                self.i += 1
            c = self.peek()
            if c == "":
                if closer is not None:
                    raise _Ambiguous  # unbalanced
                if words or assigns or writes or sealed:
                    finish("")
                elif not empty_ok:
                    raise _Ambiguous  # a trailing '&&', '|', ...
                return self.parts
            if c == ")":
                if closer != ")":
                    raise _Ambiguous
                self.i += 1
                if words or assigns or writes or sealed:
                    finish("")
                elif not empty_ok:
                    raise _Ambiguous
                return self.parts
            if c == "#":
                raise _Ambiguous  # a comment: what follows is unseen by the agent's reader too
            if c == "\\" and self.peek(1) == "\n":
                self.i += 2
                continue
            if c == "\n":
                self.i += 1
                if words or assigns or writes or sealed:
                    finish("\n")
                empty_ok = True
                continue
            if c in ";&|" and not (c == "&" and self.peek(1) == ">"):
                op = self._operator()
                if op in (";;", ";&", ";;&"):
                    raise _Ambiguous
                if op == "&" and not (words or assigns or writes or sealed):
                    raise _Ambiguous
                finish(op)
                if op in ("&", ";"):
                    empty_ok = True  # 'cmd &' and 'cmd;' may end the line
                continue
            if sealed:
                raise _Ambiguous  # '(cmd) word', '(cmd) > file'
            if c == "(":
                if words or assigns or writes:
                    raise _Ambiguous  # 'f()' and friends
                self.i += 1
                self._nested(")")
                sealed = True
                continue
            if c in "<>" or (c == "&" and self.peek(1) == ">"):
                if self.peek(1) == "(" and c in "<>":
                    self.i += 2
                    self._nested(")")
                    words.append(_DYNAMIC)
                    continue
                writes |= self._redirection(None)
                continue
            word, quoted, raw = self._word()
            if raw.isdigit() and self.peek() in ("<", ">"):
                writes |= self._redirection(word)
                continue
            if not words and _NAME.match(raw):
                assigns = True
                continue
            if not words:
                quoted_first = quoted
            words.append(word)

    def _nested(self, closer: str) -> None:
        if self.depth + 1 > _MAX_DEPTH:
            raise _Ambiguous
        self.depth += 1
        try:
            self.parse_list(closer)
        finally:
            self.depth -= 1

    def _operator(self) -> str:
        s, i = self.s, self.i
        for op in (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|"):
            if s.startswith(op, i):
                self.i += len(op)
                return op
        raise _Ambiguous  # pragma: no cover - called on ';', '&' or '|'

    def _redirection(self, fd: str | None) -> bool:
        """Consume a redirection; ``True`` when it reaches a file (not a descriptor, not
        ``/dev/null``). Heredocs and here-strings are ambiguous."""
        s, i = self.s, self.i
        if s.startswith("<<", i):
            raise _Ambiguous
        for op in ("&>>", "&>", ">>", ">|", "<>", ">&", "<&", ">", "<"):
            if s.startswith(op, i):
                self.i += len(op)
                break
        else:  # pragma: no cover - called on '<', '>' or '&>'
            raise _Ambiguous
        while self.peek() and self.peek() in _BLANK:
            self.i += 1
        if self.peek() == "" or self.peek() in _META:
            raise _Ambiguous  # a redirection with no target
        target, quoted, _ = self._word()
        if op in (">&", "<&") and (target == "-" or target.isdigit()) and not quoted:
            return False
        return target not in _SAFE_TARGETS

    def _word(self) -> tuple[str, bool, str]:
        """One word after quote removal, whether any of it was quoted, and its raw text (bare
        digits are a descriptor when '<' or '>' follows at once; ``NAME=`` an assignment)."""
        out: list[str] = []
        quoted = False
        start = self.i
        s = self.s
        while True:
            c = self.peek()
            if c == "" or c in _META:
                break
            if c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise _Ambiguous
                out.append(s[self.i + 1:end])
                self.i = end + 1
                quoted = True
            elif c == '"':
                self.i += 1
                self._double(out)
                quoted = True
            elif c == "\\":
                nxt = self.peek(1)
                if nxt == "":
                    raise _Ambiguous
                if nxt == "\n":
                    self.i += 2
                    continue
                out.append(nxt)
                self.i += 2
                quoted = True
            else:
                self._char(c, out, in_quotes=False)
        return "".join(out), quoted, s[start:self.i]

    def _double(self, out: list[str]) -> None:
        while True:
            c = self.peek()
            if c == "":
                raise _Ambiguous
            if c == '"':
                self.i += 1
                return
            if c == "\\":
                nxt = self.peek(1)
                if nxt in ("$", "`", '"', "\\"):
                    out.append(nxt)
                    self.i += 2
                    continue
                if nxt == "\n":
                    self.i += 2
                    continue
                out.append("\\")
                self.i += 1
            else:
                self._char(c, out, in_quotes=True)

    def _char(self, c: str, out: list[str], *, in_quotes: bool) -> None:
        """The character ``c`` at the cursor: an expansion (``$``, a backtick) or itself."""
        if c == "$":
            self._dollar(out, in_quotes=in_quotes)
        elif c == "`":
            self._backtick(out)
        else:
            out.append(c)
            self.i += 1

    def _dollar(self, out: list[str], *, in_quotes: bool) -> None:
        nxt = self.peek(1)
        if nxt == "(":
            if self.peek(2) == "(":
                raise _Ambiguous  # arithmetic
            self.i += 2
            self._nested(")")
            out.append(_DYNAMIC)
            return
        if nxt == "" or nxt in _BLANK or nxt == "\n" or (in_quotes and nxt == '"') or (not in_quotes and nxt in _META):
            out.append("$")  # a lone '$' is literal
            self.i += 1
            return
        raise _Ambiguous  # parameter expansion, $'...', $"...", $[...]: their value is not in the line

    def _backtick(self, out: list[str]) -> None:
        s = self.s
        j = self.i + 1
        inner: list[str] = []
        while True:
            if j >= len(s):
                raise _Ambiguous
            c = s[j]
            if c == "\\" and j + 1 < len(s) and s[j + 1] in "$`\\":
                inner.append(s[j + 1])
                j += 2
                continue
            if c == "`":
                break
            inner.append(c)
            j += 1
        self.i = j + 1
        self.parts.extend(_split("".join(inner), self.depth + 1))
        out.append(_DYNAMIC)
