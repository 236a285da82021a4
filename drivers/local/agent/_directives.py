"""Directive lines in a prompt: the local agent's whole behaviour comes from them.

A directive line is a line of the prompt text whose first character is ``@``; its name runs to
the first whitespace and its argument is the rest of the line, stripped. All other lines are the
prompt proper. Unknown directive names are ignored (the line is still not part of the prompt).
A directive with a malformed argument makes the prompt fail with JSON-RPC -32602.

A host's preamble block (and its one-line reminder block) at the start of the text is the
host's grounding, not the user's prompt: it is set aside whole and no directive in it is read.
The tags are the session base's (``paddock.contract.PREAMBLE_OPEN`` and friends); this module
repeats them so that the agent's process imports nothing of the runtime.

``@run``, ``@write`` and ``@mcp`` are tool steps and run in prompt order.
"""

from __future__ import annotations

import math

import msgspec

__all__ = ["Action", "DirectiveError", "Directives", "parse_prompt", "split_host_blocks"]

_PREAMBLE = ("<paddock-preamble>\n", "\n</paddock-preamble>\n\n")
_REMINDER = ("<paddock-reminder>", "</paddock-reminder>\n\n")


class DirectiveError(ValueError):
    """A directive's argument is malformed; the message names the directive."""


class Action(msgspec.Struct, frozen=True):
    """A tool step, in prompt order: ``kind`` is ``"run"`` (arg: command), ``"write"`` (arg:
    path, text: content) or ``"mcp"`` (arg: server, text: tool, ``arguments``)."""

    kind: str
    arg: str
    text: str = ""
    arguments: dict[str, object] = {}


class Directives(msgspec.Struct, frozen=True, kw_only=True):
    """What a prompt asks for. ``prompt`` is the text without directive lines, stripped."""

    prompt: str
    preamble: str | None = None
    """The host's preamble block's text, when the prompt began with one (never parsed)."""
    reply: str | None = None
    reply_history: bool = False
    chunks: int | None = None  # None: up to 3 chunks, never repeating a short answer
    delay: float = 0.0
    plan: tuple[str, ...] = ()
    usage: tuple[int, int] | None = None
    cost: float | None = None
    limit_until: float | None = None
    limit_account: str | None = None
    """``@limit-until T ACCOUNT``: the limit holds only where the agent's ``ACCOUNT`` variable is this."""
    actions: tuple[Action, ...] = ()
    env: str | None = None
    crash: int | None = None
    spawn: float | None = None
    alloc: int | None = None
    fork: int | None = None
    burn: float | None = None
    ignore_sigterm: bool = False
    garbage: bool = False


def _int(name: str, value: str, *, minimum: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise DirectiveError(f"@{name} needs an integer, got {value!r}") from None
    if number < minimum:
        raise DirectiveError(f"@{name} needs an integer >= {minimum}, got {number}")
    return number


def _seconds(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise DirectiveError(f"@{name} needs a number of seconds, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise DirectiveError(f"@{name} needs a finite number of seconds >= 0, got {value!r}")
    return number


def split_host_blocks(text: str) -> tuple[str | None, str]:
    """``(preamble, rest)``: the host's preamble block (or reminder block) at the start of
    ``text`` set aside, and the user's text after it. The runtime refuses a preamble holding its
    closing tag, so the first closing tag ends the block."""
    preamble = None
    for opening, closing in (_PREAMBLE, _REMINDER):
        if text.startswith(opening):
            end = text.find(closing, len(opening))
            if end >= 0:
                if opening is _PREAMBLE[0]:
                    preamble = text[len(opening):end]
                text = text[end + len(closing):]
    return preamble, text


def parse_prompt(text: str) -> Directives:
    """Split ``text`` into directives and prompt, the host's preamble block aside (none of its
    lines is read as a directive); raises :class:`DirectiveError`."""
    preamble, text = split_host_blocks(text)
    kept: list[str] = []
    found: dict[str, object] = {} if preamble is None else {"preamble": preamble}
    actions: list[Action] = []
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if not line.startswith("@"):
            kept.append(line)
            continue
        name, _, arg = line[1:].partition(" ")
        raw_arg = arg
        arg = arg.strip()
        if name == "reply":
            found["reply"] = arg
        elif name == "reply-history":
            found["reply_history"] = True
        elif name == "chunks":
            found["chunks"] = _int(name, arg, minimum=1)
        elif name == "delay":
            found["delay"] = _seconds(name, arg)
        elif name == "plan":
            found["plan"] = tuple(step.strip() for step in arg.split(";") if step.strip())
        elif name == "usage":
            parts = arg.split()
            if len(parts) != 2:
                raise DirectiveError(f"@usage needs two integers IN OUT, got {arg!r}")
            found["usage"] = (_int(name, parts[0], minimum=0), _int(name, parts[1], minimum=0))
        elif name == "limit-until":
            when, _, account = arg.partition(" ")
            try:
                found["limit_until"] = float(when)
            except ValueError:
                raise DirectiveError(f"@limit-until needs a Unix time, got {arg!r}") from None
            found["limit_account"] = account.strip() or None
        elif name == "cost":
            try:
                cost = float(arg)
            except ValueError:
                cost = -1.0
            if not cost >= 0:  # also NaN
                raise DirectiveError(f"@cost needs a number of USD, got {arg!r}")
            found["cost"] = cost
        elif name == "run":
            if not arg:
                raise DirectiveError("@run needs a command")
            actions.append(Action("run", arg))
        elif name == "write":
            # TEXT is everything after PATH and one space, verbatim (no escapes, no newline added).
            path, _, body = raw_arg.lstrip(" ").partition(" ")
            if not path:
                raise DirectiveError("@write needs a path")
            actions.append(Action("write", path, body))
        elif name == "mcp":
            server, _, rest = arg.partition(" ")
            tool, _, raw_json = rest.strip().partition(" ")
            if not server or not tool:
                raise DirectiveError("@mcp needs SERVER TOOL [JSON object of arguments]")
            arguments: object = {}
            if raw_json.strip():
                try:
                    arguments = msgspec.json.decode(raw_json)
                except msgspec.DecodeError as exc:
                    raise DirectiveError(f"@mcp arguments must be a JSON object: {exc}") from None
            if not isinstance(arguments, dict):
                raise DirectiveError(f"@mcp arguments must be a JSON object, got {raw_json.strip()!r}")
            actions.append(Action("mcp", server, tool, arguments=arguments))
        elif name == "env":
            if not arg:
                raise DirectiveError("@env needs a variable name")
            found["env"] = arg
        elif name == "crash":
            found["crash"] = _int(name, arg, minimum=0) if arg else 1
        elif name == "spawn":
            found["spawn"] = _seconds(name, arg)
        elif name == "alloc":
            found["alloc"] = _int(name, arg, minimum=1)
        elif name == "fork":
            found["fork"] = _int(name, arg, minimum=1)
        elif name == "burn":
            found["burn"] = _seconds(name, arg)
        elif name == "ignore-sigterm":
            found["ignore_sigterm"] = True
        elif name == "garbage":
            found["garbage"] = True
    if actions:
        found["actions"] = tuple(actions)
    return Directives(prompt="\n".join(kept).strip(), **found)  # type: ignore[arg-type]
