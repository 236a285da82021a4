"""The scenario language of the scripted model server, shared by all four dialects.

A scenario is a list of steps. A model call plays one *segment*: segment 0 runs up to and
including the first tool step; after the CLI sends the tool's result back, segment 1 runs up to
and including the next tool step, and so on. The number of tool results sent since the user's
prompt selects the segment. A follow-up with nothing left to play answers the default final text
``Tool finished: {output}`` (``{output}`` is the first 60 characters of the tool's output). An
``error`` step answers the whole call with that HTTP status instead.

Script files are JSON or TOML::

    {"default": "greet",
     "scenarios": {"greet": [{"type": "text", "text": "Hi there", "chunks": 2, "delay": 0.05}],
                   "touch": [{"type": "shell", "command": "touch a.txt"},
                             {"type": "text", "text": "Done: {output}"}]}}

A file that is just a list of steps is the default scenario. The scenario of a call is named by
the marker ``SCENARIO:<name>`` in the last user text, else the script's default. Built-in
scenarios (a script may override them): ``text``, ``tool_shell``, ``tool_shell_escalated``,
``tool_write``, ``patch``, ``slow``, ``http400``, ``http500``, ``usage_limit`` (429 for 3 s
from its first call, then ``Back after the reset``), ``rate_limits`` (a reply whose headers say
the account's window is 42 % used), and ``mcp_echo`` (calls the
``echo`` tool of the test MCP server, :mod:`paddock.testing.mcp_server`).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Literal, Union

import msgspec

__all__ = [
    "BUILTIN_SCENARIOS",
    "DEFAULT_FINAL_TEXT",
    "Fail",
    "McpCall",
    "Patch",
    "Script",
    "Shell",
    "Step",
    "Text",
    "RateLimits",
    "UsageLimit",
    "Write",
    "find_marker",
    "load_script",
    "parse_script",
]


class Text(msgspec.Struct, frozen=True, kw_only=True, tag="text", tag_field="type"):
    """Stream ``text`` in ``chunks`` pieces, waiting ``delay`` seconds before each piece after
    the first. ``{output}`` is replaced by the head of the last tool output."""

    text: str
    chunks: int = 3
    delay: float = 0.0


class Shell(msgspec.Struct, frozen=True, kw_only=True, tag="shell", tag_field="type"):
    """Call the shell tool offered in the request with ``command``. ``escalate`` asks Codex for
    ``sandbox_permissions: require_escalated`` (forces an approval under ``on-request``)."""

    command: str
    escalate: bool = False


class Write(msgspec.Struct, frozen=True, kw_only=True, tag="write", tag_field="type"):
    """Call the write-file tool. A relative ``path`` is joined to the server's workspace."""

    path: str
    content: str


class Patch(msgspec.Struct, frozen=True, kw_only=True, tag="patch", tag_field="type"):
    """Add the file ``path`` through ``apply_patch`` where the request offers it, else as an
    ``apply_patch`` heredoc to Codex's shell tool (``exec_command``), else through the write-file
    tool."""

    path: str
    content: str


class McpCall(msgspec.Struct, frozen=True, kw_only=True, tag="mcp", tag_field="type"):
    """Call the MCP tool ``tool`` (of ``server``, when given) that the request offers, in the
    agent's own naming: an offered tool matches when its name is ``tool`` or ends with ``tool``
    after a separator (``mcp__srv__echo``, ``srv__echo``, ``srv_echo``, ``srv-echo``) and, with
    ``server``, also contains the server name."""

    tool: str
    arguments: dict[str, object] = {}
    server: str | None = None


class Fail(msgspec.Struct, frozen=True, kw_only=True, tag="error", tag_field="type"):
    """Answer the call with HTTP ``status`` and the dialect's error body."""

    status: int
    message: str | None = None


class UsageLimit(msgspec.Struct, frozen=True, kw_only=True, tag="usage_limit", tag_field="type"):
    """A model's usage limit: the first call that reaches this step starts a window of
    ``resets_in`` seconds (per scenario, server-wide); every call in the window is answered HTTP
    429 in the dialect's shape (body, ``retry-after`` and the provider's reset headers, and a
    message saying when it resets); after the window the step is skipped and the rest plays."""

    resets_in: float = 3.0
    message: str | None = None


class RateLimits(msgspec.Struct, frozen=True, kw_only=True, tag="rate_limits", tag_field="type"):
    """The account's rate-limit window on this reply (it adds headers, no output): a window of
    ``window_minutes`` used to ``used_percent`` that resets ``resets_in`` seconds after the
    reply, with Anthropic's unified ``status``, in the headers the dialect's CLI reads (Codex's
    ``x-codex-primary-*``, Anthropic's ``anthropic-ratelimit-unified-*``; the others none)."""

    used_percent: float = 42.0
    resets_in: float = 3600.0
    window_minutes: int = 300
    status: Literal["allowed", "allowed_warning", "rejected"] = "allowed"


Step = Union[Text, Shell, Write, Patch, McpCall, Fail, UsageLimit, RateLimits]
TOOL_STEPS = (Shell, Write, Patch, McpCall)
DEFAULT_FINAL_TEXT = "Tool finished: {output}"


class Script(msgspec.Struct, frozen=True, kw_only=True):
    """Named scenarios plus the default one. ``scenarios`` is merged over the built-ins."""

    scenarios: dict[str, tuple[Step, ...]] = {}
    default: str = "text"

    def resolve(self, name: str | None) -> tuple[str, tuple[Step, ...]]:
        """The scenario called ``name`` (None: the default). Unknown names fall back to the
        default, so a stray ``SCENARIO:`` word in a prompt never breaks a CLI."""
        table = {**BUILTIN_SCENARIOS, **self.scenarios}
        if name is not None and name in table:
            return name, table[name]
        return self.default, table.get(self.default, BUILTIN_SCENARIOS["text"])


_SLOW_TEXT = "".join(f"tick{i} " for i in range(100))

BUILTIN_SCENARIOS: dict[str, tuple[Step, ...]] = {
    "text": (Text(text="Hello from mock"),),
    "tool_shell": (Shell(command="touch hello.txt"),),
    "tool_shell_escalated": (Shell(command="touch hello.txt", escalate=True),),
    "tool_write": (Write(path="hello.txt", content="hello from mock\n"),),
    "patch": (Patch(path="patched.txt", content="created by apply_patch\n"),),
    "slow": (Text(text=_SLOW_TEXT, chunks=100, delay=0.2),),
    "http400": (Fail(status=400),),
    "http500": (Fail(status=500),),
    "usage_limit": (UsageLimit(resets_in=3.0), Text(text="Back after the reset")),
    "rate_limits": (RateLimits(), Text(text="Counted against the window")),
    "mcp_echo": (McpCall(tool="echo", arguments={"text": "ping from the model"}),),
}

_MARKER = re.compile(r"SCENARIO:([A-Za-z0-9_.\-]+)")


def find_marker(text: str | None) -> str | None:
    """The last ``SCENARIO:<name>`` in ``text``, or None."""
    if not text:
        return None
    found = _MARKER.findall(text)
    return found[-1] if found else None


def parse_script(raw: object) -> Script:
    """Build a :class:`Script` from decoded JSON/TOML. Raises ``ValueError`` naming the bad field."""
    if isinstance(raw, list):
        raw = {"scenarios": {"default": raw}, "default": "default"}
    try:
        return msgspec.convert(raw, Script)
    except msgspec.ValidationError as exc:
        raise ValueError(f"bad scenario script: {exc}") from None


def load_script(path: str | Path) -> Script:
    """Read a JSON (``.json``) or TOML (``.toml``) script file."""
    path = Path(path)
    data = path.read_bytes()
    raw = tomllib.loads(data.decode("utf-8")) if path.suffix == ".toml" else json.loads(data)
    return parse_script(raw)
