"""What the model says, independent of the wire dialect: the parsed request (:class:`Call`), the
planned answer (:class:`Reply`) and the planner that maps a scenario onto the tools a request
offers. Plain frozen dataclasses: built and used on one server handler thread."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ._scenario import (
    DEFAULT_FINAL_TEXT, TOOL_STEPS, Fail, McpCall, Patch, RateLimits, Script, Shell, Text, UsageLimit, Write, find_marker,
)

__all__ = ["Call", "ErrorOut", "Ids", "Reply", "TextOut", "ToolOut", "ToolSpec", "plan_reply", "rfc3339", "split_text"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered by the request: ``kind`` is ``function`` or ``custom`` (Responses grammar tools).
    ``namespace``: the Responses ``namespace`` tool it sits in (Codex offers each MCP server's
    tools as one namespace, ``mcp__<server>``), else ``None``."""

    name: str
    kind: str = "function"
    properties: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()
    namespace: str | None = None

    @property
    def qualified(self) -> str:
        """``<namespace>__<name>``, or the name of a tool outside a namespace."""
        return f"{self.namespace}__{self.name}" if self.namespace else self.name


@dataclass(frozen=True)
class Call:
    """One model request, as far as the scenario cares.

    ``prompt_text`` is the last text of the user's prompt message (the nearest user message that
    is not a tool result); ``tool_rounds`` counts tool results sent since that prompt;
    ``tool_output`` is the newest tool output (a follow-up when ``tool_rounds > 0``).
    """

    prompt_text: str | None
    tool_rounds: int
    tool_output: str | None
    tools: tuple[ToolSpec, ...]
    stream: bool
    model: str


@dataclass(frozen=True)
class TextOut:
    chunks: tuple[str, ...]
    delay: float = 0.0

    @property
    def text(self) -> str:
        return "".join(self.chunks)


@dataclass(frozen=True)
class ToolOut:
    """A tool call. ``arguments`` for function tools; ``input`` (raw text) for custom tools."""

    call_id: str
    name: str
    kind: str = "function"
    arguments: dict | None = None
    input: str | None = None
    namespace: str | None = None

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments or {}, separators=(",", ":"))


@dataclass(frozen=True)
class ErrorOut:
    status: int
    message: str
    resets_at: float | None = None
    """A usage limit's end (Unix time): the dialects put it in their reset headers and body."""

    @property
    def resets_in(self) -> float | None:
        return None if self.resets_at is None else max(0.0, self.resets_at - time.time())


@dataclass(frozen=True)
class RateLimitsOut:
    """The account's window a reply reports in its headers (``RateLimits``)."""

    used_percent: float
    resets_at: float
    window_minutes: int
    status: str


@dataclass(frozen=True)
class Reply:
    scenario: str | None
    segment: int
    parts: tuple[TextOut | ToolOut, ...] = ()
    error: ErrorOut | None = None
    note: str | None = None
    """Why the reply differs from the script (e.g. no matching tool offered); logged."""
    rate_limits: RateLimitsOut | None = None


@dataclass
class Ids:
    """Server-wide counters for response, message and call ids (thread-safe: ``next`` on
    ``itertools.count`` is atomic under the GIL)."""

    _counter: itertools.count = field(default_factory=lambda: itertools.count(1))
    _limits: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter)}"

    def limit_window(self, scenario: str, seconds: float) -> float:
        """When the usage-limit window of ``scenario`` ends: opened by the first call to ask."""
        with self._lock:
            return self._limits.setdefault(scenario, float(math.ceil(time.time() + seconds)))  # a whole second


_ERROR_MESSAGES = {400: "mock bad request", 500: "mock internal error"}

SHELL_TOOLS = ("exec_command", "Bash", "bash", "run_shell_command", "shell", "shell_command")
WRITE_TOOLS = ("Write", "write", "write_file", "create", "write_to_file")
PATCH_TOOLS = ("apply_patch",)
PATCH_SHELLS = ("exec_command",)
"""Shell tools that apply an ``apply_patch`` heredoc as a patch (Codex's)."""


def rfc3339(ts: float) -> str:
    """Unix time ``ts`` as RFC 3339 in UTC, to the second (``2026-01-02T03:04:05Z``)."""
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def split_text(text: str, chunks: int) -> tuple[str, ...]:
    """Split ``text`` into ``chunks`` pieces at word boundaries when possible (never empty pieces)."""
    if chunks <= 1 or len(text) <= 1:
        return (text,)
    words = re.findall(r"\S+\s*|\s+", text)
    pieces = words if len(words) >= chunks else list(text)
    chunks = min(chunks, len(pieces))
    out, start = [], 0
    for i in range(chunks):
        end = round((i + 1) * len(pieces) / chunks)
        out.append("".join(pieces[start:end]))
        start = end
    return tuple(out)


def _pick(tools: tuple[ToolSpec, ...], names: tuple[str, ...]) -> ToolSpec | None:
    by_name = {t.name: t for t in tools}
    for name in names:
        if name in by_name:
            return by_name[name]
    return None


def _first(props: frozenset[str], names: tuple[str, ...], default: str) -> str:
    return next((n for n in names if n in props), default)


def _abs(path: str, workspace: str | None) -> str:
    return path if os.path.isabs(path) or not workspace else os.path.join(workspace, path)


def _patch_text(path: str, content: str) -> str:
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def _mcp_tool(tools: tuple[ToolSpec, ...], step: McpCall) -> ToolSpec | None:
    for tool in tools:
        name = tool.qualified
        if name != step.tool and not re.search(rf"[_\-.:/]{re.escape(step.tool)}$", name):
            continue
        if step.server is None or step.server in name or step.server.replace("-", "_") in name:
            return tool
    return None


def _tool_call(step, call: Call, ids: Ids, workspace: str | None) -> ToolOut | str:
    """The call for a tool step, or a note explaining why no offered tool fits."""
    offered = ", ".join(t.qualified for t in call.tools) or "none"
    call_id = ids.next("call_")
    if isinstance(step, McpCall):
        tool = _mcp_tool(call.tools, step)
        if tool is None:
            return f"mock: no MCP tool {step.tool!r} offered (tools: {offered})"
        return ToolOut(call_id=call_id, name=tool.name, arguments=dict(step.arguments), namespace=tool.namespace)
    if isinstance(step, Patch):
        tool = _pick(call.tools, PATCH_TOOLS)
        if tool is not None:
            patch = _patch_text(step.path, step.content)
            if tool.kind == "custom":
                return ToolOut(call_id=call_id, name=tool.name, kind="custom", input=patch)
            return ToolOut(call_id=call_id, name=tool.name, arguments={"input": patch})
        tool = _pick(call.tools, PATCH_SHELLS)
        if tool is not None:
            # Protocol fact: Codex takes an `apply_patch` heredoc given to its shell tool as a
            # patch (a fileChange item, approved as one). It offers no apply_patch tool for a
            # model its catalog does not know, such as a gateway's own model name.
            return ToolOut(call_id=call_id, name=tool.name,
                           arguments={"cmd": f"apply_patch <<'PATCH'\n{_patch_text(step.path, step.content)}PATCH\n"})
        step = Write(path=step.path, content=step.content)
    if isinstance(step, Shell):
        tool = _pick(call.tools, SHELL_TOOLS)
        if tool is None:
            return f"mock: no shell tool offered (tools: {offered})"
        args: dict = {_first(tool.properties, ("cmd", "command"), "command"): step.command}
        if "description" in tool.properties:
            args["description"] = "Run a scripted shell command"
        if step.escalate and "sandbox_permissions" in tool.properties:
            args["sandbox_permissions"] = "require_escalated"
            args["justification"] = "The scripted scenario asks for an escalated command"
        return ToolOut(call_id=call_id, name=tool.name, arguments=args)
    tool = _pick(call.tools, WRITE_TOOLS)
    if tool is None:
        return f"mock: no write tool offered (tools: {offered})"
    path_key = _first(tool.properties, ("file_path", "filePath", "path", "absolute_path"), "file_path")
    content_key = _first(tool.properties, ("content", "file_text", "text"), "content")
    return ToolOut(
        call_id=call_id,
        name=tool.name,
        arguments={path_key: _abs(step.path, workspace), content_key: step.content},
    )


def plan_reply(call: Call, script: Script, ids: Ids, *, workspace: str | None = None) -> Reply:
    """Choose the scenario and segment for ``call`` and turn it into a :class:`Reply`."""
    name, steps = script.resolve(find_marker(call.prompt_text))
    segments: list[list] = [[]]
    for step in steps:
        segments[-1].append(step)
        if isinstance(step, TOOL_STEPS):
            segments.append([])
    index = min(call.tool_rounds, len(segments) - 1)
    segment = segments[index]
    output_head = (call.tool_output or "")[:60]
    if not segment and call.tool_rounds > 0:
        segment = [Text(text=DEFAULT_FINAL_TEXT, chunks=1)]
    for step in segment:
        if isinstance(step, Fail):
            message = step.message or _ERROR_MESSAGES.get(step.status, f"mock error {step.status}")
            return Reply(scenario=name, segment=index, error=ErrorOut(step.status, message))
        if isinstance(step, UsageLimit):
            ends = ids.limit_window(name or "", step.resets_in)
            if time.time() < ends:
                message = step.message or f"mock usage limit reached; resets at {rfc3339(ends)}"
                return Reply(scenario=name, segment=index, error=ErrorOut(429, message, resets_at=ends))
    parts: list[TextOut | ToolOut] = []
    notes: list[str] = []
    rate: RateLimitsOut | None = None
    for step in segment:
        if isinstance(step, Text):
            text = step.text.replace("{output}", output_head)
            parts.append(TextOut(chunks=split_text(text, step.chunks), delay=step.delay))
        elif isinstance(step, UsageLimit):
            continue  # its window is over
        elif isinstance(step, RateLimits):
            rate = RateLimitsOut(step.used_percent, time.time() + step.resets_in, step.window_minutes, step.status)
        else:
            made = _tool_call(step, call, ids, workspace)
            if isinstance(made, str):
                notes.append(made)
                parts.append(TextOut(chunks=(made,)))
            else:
                parts.append(made)
    return Reply(scenario=name, segment=index, parts=tuple(parts), note="; ".join(notes) or None, rate_limits=rate)
