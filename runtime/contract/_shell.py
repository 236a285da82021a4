"""The shell tokenizer approval rules read a command line with (:func:`split_command`): its own,
small and strict, since ``shlex`` alone does not see operators.

It splits a line into simple commands (:class:`CommandPart`): words after quote removal, whether
the command assigns variables, whether it redirects to a file. Operators (``;``, ``&&``, ``||``,
``|``, ``|&``, ``&``, newlines) separate parts; subshells, ``$(...)``, backticks and process
substitution are parsed recursively (a bounded depth) and their commands become parts too; a
word holding a substitution is marked so it never equals a literal. ``sh``/``bash``/``zsh``/
``dash -c`` (or ``-lc``) ``SCRIPT`` is read as SCRIPT. What it cannot classify (parameter
expansion, ``$'...'``, arithmetic, heredocs and here-strings, control keywords and ``{ }``,
function definitions, comments, an unbalanced quote, control characters, an operator with no
command) makes the whole line ambiguous: ``None``. Pure; runs on any thread.
"""

from __future__ import annotations

import re
import shlex

import msgspec

__all__ = ["CommandPart", "split_command"]


class CommandPart(msgspec.Struct, frozen=True):
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


def split_command(line: str) -> list[CommandPart] | None:
    """The simple commands of a shell command line, or ``None`` when it is ambiguous (see the
    module's docstring). ``sh -c 'SCRIPT'`` (bash, zsh, dash; ``-lc`` too) is split into the
    parts of ``SCRIPT``."""
    try:
        return _split(line, 0)
    except (_Ambiguous, RecursionError):
        return None


def _split(line: str, depth: int) -> list[CommandPart]:
    if depth > _MAX_DEPTH:
        raise _Ambiguous
    if any((ord(c) < 32 and c not in "\t\n") or c == "\x7f" for c in line):
        raise _Ambiguous
    parser = _Parser(line, depth)
    parts = parser.parse_list(None)
    if not parts:
        raise _Ambiguous
    out: list[CommandPart] = []
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
        self.parts: list[CommandPart] = []

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def parse_list(self, closer: str | None) -> list[CommandPart]:
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
                self.parts.append(CommandPart(tuple(words), assigns, writes))
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
