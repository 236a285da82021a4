"""What an ACP permission request approves (its ``request.opened`` subject), from the tool call
it names: the ``diff`` content items of an edit (ACP ``ToolCallContent``), else the arguments in
``rawInput`` (every agent names them its own way, :func:`~paddock.drivers._subjects.input_subject`
knows the names in use), else for a flavor whose title is the command, the title. A
command runs in the session's cwd unless its arguments name another."""

from __future__ import annotations

from paddock.contract import FileEdit, JsonValue, RequestSubject
from paddock.drivers._subjects import command_subject, edit, files_subject, input_subject, tool_subject

from . import _wire as w

__all__ = ["permission_subject"]


def _diffs(content: list[JsonValue] | None) -> list[FileEdit]:
    out = []
    for block in content or ():
        if not isinstance(block, dict) or block.get("type") != "diff":
            continue
        path, old, new = block.get("path"), block.get("oldText"), block.get("newText")
        if isinstance(path, str):
            out.append(edit(path, old if isinstance(old, str) else None, new if isinstance(new, str) else None))
    return out


def permission_subject(kind: str, call: w.ToolCallFields, cwd: str | None, *,
                       title_is_command: bool = False) -> RequestSubject | None:
    """The subject of a ``session/request_permission`` of canonical request kind ``kind``;
    ``None`` when the agent says nothing a person could check (no arguments, no diff)."""
    # Trap: Gemini CLI's execute content says "[current working directory <dir>]" with the
    # agent process's own cwd, yet runs the command in the session's cwd (checked on disk).
    if kind == "file_change":
        diffs = _diffs(call.content)
        if diffs:
            return files_subject(diffs)
    raw = call.rawInput
    tool = call.title or call.kind or "tool"
    if isinstance(raw, dict) and raw:
        return input_subject(kind, tool, raw, cwd)
    if kind == "command" and title_is_command and call.title:
        return command_subject(call.title, cwd)
    if raw not in (None, {}):
        return tool_subject(tool, raw)
    return None
