"""What a request approves, built from what an agent sends: the exact command with its cwd, the
files an edit writes with a bounded diff, or the tool with its arguments
(:class:`~paddock.contract.RequestSubject`). Every driver builds its ``request.opened`` subject
with these functions, so a surface never has to show a model-written description alone.

They run on the session actor's thread (a dispatcher worker) while it translates a request;
:func:`written` reads the file it would replace (bounded), nothing else touches the disk.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Literal

from paddock.contract import (
    DIFF_CHARS,
    CommandSubject,
    FileChangeSubject,
    FileEdit,
    JsonValue,
    RequestSubject,
    ToolSubject,
)

__all__ = [
    "command_subject",
    "codex_changes",
    "command_text",
    "edit",
    "files_subject",
    "input_subject",
    "patch",
    "tool_subject",
    "written",
]

Change = Literal["add", "update", "delete", "move"]

# A file larger than this is not read to diff a whole-content write against (the edit then shows
# the new content as added lines, marked truncated when it is long).
_READ_LIMIT = 1 << 20

_PATH_KEYS = ("file_path", "path", "filepath", "fileName", "notebook_path", "filePath")


def command_text(command: str | Sequence[str]) -> str:
    """One command line: a string as given, an argv joined with shell quoting."""
    if isinstance(command, str):
        return command
    return shlex.join(str(part) for part in command)


def command_subject(command: str | Sequence[str], cwd: str | None) -> CommandSubject:
    return CommandSubject(command=command_text(command), cwd=cwd)


def tool_subject(tool: str, arguments: JsonValue, *, server: str | None = None) -> ToolSubject:
    """A tool call. Claude Code's MCP tool names (``mcp__<server>__<tool>``) are split into the
    server and the tool."""
    if server is None and tool.startswith("mcp__") and tool.count("__") >= 2:
        _, server, tool = tool.split("__", 2)
    return ToolSubject(tool=tool, server=server, arguments=arguments)


def _bounded(diff: str) -> tuple[str, bool]:
    if len(diff) <= DIFF_CHARS:
        return diff, False
    return diff[:DIFF_CHARS], True


_ADDS = re.compile(r"^(?:--- (?:a/)?/?dev/null$|(?:new|create) file mode )", re.M)
_DELETES = re.compile(r"^(?:\+\+\+ (?:b/)?/?dev/null$|deleted? file mode )", re.M)
_FROM_NOTHING = re.compile(r"^@@ -0,0 ", re.M)


def diff_change(path: str, diff: str) -> Change:
    """What a unified diff the agent showed does to ``path``: a ``/dev/null`` old side (or git's
    ``new file mode``; Copilot writes ``create file mode`` and ``--- a/dev/null``) adds it, a
    ``/dev/null`` new side deletes it; a diff from nothing (``@@ -0,0``, as OpenCode's write shows
    a new file) adds a file that is not on disk yet (the agent asks before it writes)."""
    head = diff[:2048]
    if _ADDS.search(head):
        return "add"
    if _DELETES.search(head):
        return "delete"
    if _FROM_NOTHING.search(head) and not os.path.lexists(path):
        return "add"
    return "update"


def patch(path: str, diff: str | None, change: Change | None = None, *, move_to: str | None = None) -> FileEdit:
    """A file with the diff the agent itself showed (cut at ``DIFF_CHARS``); ``change`` ``None``:
    read from the diff (:func:`diff_change`), ``update`` without one."""
    if change is None:
        change = "update" if diff is None else diff_change(path, diff)
    if diff is None:
        return FileEdit(path=path, change=change, move_to=move_to)
    text, cut = _bounded(diff)
    return FileEdit(path=path, change=change, diff=text, truncated=cut, move_to=move_to)


def edit(path: str, old: str | None, new: str | None, change: Change | None = None) -> FileEdit:
    """A file whose text goes from ``old`` to ``new`` (``None``: the file does not exist before,
    or after), as a unified diff."""
    if change is None:
        # An empty old text of a file not on disk is a new file (Gemini and Qwen send oldText "").
        created = old is None or (old == "" and not os.path.lexists(path))
        change = "add" if created else "delete" if new is None else "update"
    lines = difflib.unified_diff((old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True),
                                 fromfile="/dev/null" if old is None else path,
                                 tofile="/dev/null" if new is None else path)
    diff = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return patch(path, diff, change)


def _resolve(path: str, cwd: str | None) -> str:
    return path if os.path.isabs(path) or not cwd else os.path.join(cwd, path)


def written(path: str, content: str, cwd: str | None) -> FileEdit:
    """A whole-content write of ``path`` (relative to ``cwd``): the diff against the file on disk
    now, or every line added when there is none (or it is too large or not text to read)."""
    full = _resolve(path, cwd)
    old: str | None = None
    try:
        if os.path.getsize(full) <= _READ_LIMIT:
            with open(full, encoding="utf-8") as f:
                old = f.read()
    except (OSError, UnicodeDecodeError):
        old = None
    return edit(full, old, content, "add" if old is None and not os.path.exists(full) else "update")


def files_subject(files: Sequence[FileEdit]) -> FileChangeSubject:
    return FileChangeSubject(files=tuple(files))


def codex_changes(changes: Mapping[str, JsonValue]) -> list[FileEdit]:
    """Codex's ``{path: {type: add|delete|update, content | unified_diff, move_path}}`` (its
    legacy ``applyPatchApproval`` and codex-acp's ``rawInput.changes``)."""
    out = []
    for path, spec in changes.items():
        if not isinstance(spec, dict):
            continue
        kind = spec.get("type")
        if kind == "add":
            out.append(edit(path, None, _str(spec.get("content")) or ""))
        elif kind == "delete":
            out.append(edit(path, _str(spec.get("content")) or "", None))
        else:
            move = _str(spec.get("move_path"))
            out.append(patch(path, _str(spec.get("unified_diff")), "move" if move else "update", move_to=move))
    return out


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _command_of(arguments: Mapping[str, JsonValue]) -> str | None:
    """The command line in a tool's arguments: ``command`` or ``cmd`` (a string, or an argv
    list), else ``commands`` (the pieces of one line, joined with ``&&``)."""
    for key in ("command", "cmd"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value:
            return command_text([str(part) for part in value])
    pieces = arguments.get("commands")
    if isinstance(pieces, list) and pieces and all(isinstance(p, str) for p in pieces):
        return " && ".join(str(p) for p in pieces)
    return None


def input_subject(kind: str, tool: str, arguments: Mapping[str, JsonValue], cwd: str | None) -> RequestSubject:
    """The subject of a tool call from its name and its arguments, by the argument names the
    agents use: a command (``command``/``cmd``/``commands``, with ``cwd``/``workdir``/``directory``),
    an edit (a path under ``file_path``/``path``/``fileName``/...: a ``diff``, ``old_string`` ->
    ``new_string``, Claude's MultiEdit ``edits``, whole ``content``, or Codex's ``changes``), else
    the tool and its arguments. ``kind`` is the canonical request kind the agent gave."""
    if kind == "command":
        command = _command_of(arguments)
        if command is not None:
            where = next((v for v in (arguments.get(k) for k in ("cwd", "workdir", "directory")) if isinstance(v, str)), cwd)
            return command_subject(command, where)
    if kind == "file_change":
        changes = arguments.get("changes")
        if isinstance(changes, dict) and changes:
            return files_subject(codex_changes(changes))
        path = next((arguments[k] for k in _PATH_KEYS if isinstance(arguments.get(k), str)), None)
        if isinstance(path, str):
            full = _resolve(path, cwd)
            diff, old, new = arguments.get("diff"), arguments.get("old_string"), arguments.get("new_string")
            edits = arguments.get("edits")
            if isinstance(diff, str):
                return files_subject([patch(full, diff)])
            if isinstance(old, str) and isinstance(new, str):
                return files_subject([edit(full, old, new)])
            if isinstance(edits, list):
                pairs = [e for e in edits if isinstance(e, dict)]
                return files_subject([edit(full, _str(e.get("old_string")) or "", _str(e.get("new_string")) or "", "update")
                                      for e in pairs] or [patch(full, None)])
            content = arguments.get("content") if "content" in arguments else arguments.get("new_source")
            if isinstance(content, str):
                return files_subject([written(full, content, cwd)])
            return files_subject([patch(full, None)])
    return tool_subject(tool, dict(arguments))
