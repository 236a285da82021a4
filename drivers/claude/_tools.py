"""Claude Code tools -> canonical item and request kinds, titles and result text."""

from __future__ import annotations

from paddock.contract import JsonObject

from ._wire import Part

__all__ = ["item_kind_of_tool", "mcp_call_data", "request_kind_of_item", "result_text", "tool_title"]

_TOOL_KINDS = {
    "Bash": "command", "BashOutput": "command", "KillShell": "command", "KillBash": "command",
    "Write": "file_change", "Edit": "file_change", "MultiEdit": "file_change", "NotebookEdit": "file_change",
    "Read": "file_read", "NotebookRead": "file_read",
    "Glob": "search", "Grep": "search", "LS": "search",
    "WebSearch": "web_search", "WebFetch": "web_search",
}
_REQUEST_KINDS = {"command": "command", "file_change": "file_change", "file_read": "file_read"}


def request_kind_of_item(kind: str) -> str:
    """The ``request.opened`` kind for a tool of item kind ``kind``."""
    return _REQUEST_KINDS.get(kind, "tool")


def item_kind_of_tool(name: str) -> str:
    """Canonical item kind of a Claude Code tool (Bash -> command, Write/Edit -> file_change, ...)."""
    if name.startswith("mcp__"):
        return "mcp_tool_call"
    return _TOOL_KINDS.get(name, "tool_call")


def mcp_call_data(name: str, inp: JsonObject, servers: tuple[str, ...]) -> JsonObject:
    """The item data of an MCP tool call named ``mcp__<server>__<tool>``: ``server``, ``tool``,
    ``arguments`` (and ``input``, as every Claude tool item has). A server name may hold ``__``,
    so the session's own server names are tried first, longest first."""
    rest = name[len("mcp__"):]
    server, _, tool = rest.partition("__")
    for known in sorted(servers, key=len, reverse=True):
        if rest.startswith(known + "__"):
            server, tool = known, rest[len(known) + 2:]
            break
    return {"server": server, "tool": tool, "arguments": inp, "input": inp}


def tool_title(name: str, inp: JsonObject) -> str:
    """A one-line title: the command, path, pattern, URL or query of the call, else the tool name."""
    for key in ("command", "file_path", "notebook_path", "pattern", "url", "query", "description"):
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value if key != "description" else f"{name}: {value}"
    return name


def result_text(content: str | list[Part] | None) -> str:
    """The text of a ``tool_result`` content (a string or a list of blocks, of which the text
    blocks count)."""
    if isinstance(content, str):
        return content
    if content is not None:
        return "".join(b.text or "" for b in content if b.type == "text")
    return ""
