"""``paddock init --driver D``: write a commented ``paddock.toml`` for any driver."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import msgspec

from paddock.drivers._toml import toml_value

HELP = "write a commented paddock.toml for one driver (check it with `paddock config check`)"

# Example model endpoints per API dialect (from the pins); each driver appends its own version
# suffix, so the URL may be given with or without it.
_ENDPOINTS = {
    "gemini": ("https://generativelanguage.googleapis.com", "GEMINI_API_KEY"),
    "chat": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "responses": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
}
_COMMON = {"driver", "binary", "home", "env", "args", "pass_env", "endpoint", "api_key", "api_key_env", "model"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--driver", required=True, help="the driver kind (paddock init --driver list: every kind)")
    parser.add_argument("--instance", help="the instance id (default: the driver kind)")
    parser.add_argument("--out", default="paddock.toml", help="file to write (default: ./paddock.toml; '-': stdout)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")


def _toml(value: Any) -> str:
    try:
        return toml_value(value)
    except TypeError:  # a default TOML cannot hold (e.g. a path object): written as its text
        return json.dumps(str(value))


def template(kind: str, instance: str | None = None) -> str:
    """The commented config text for driver ``kind``; raises ``KeyError`` for an unknown one."""
    from paddock.drivers import BUILT_IN_DRIVERS
    from paddock.drivers._peers import load_pins

    spec = BUILT_IN_DRIVERS[kind]
    pins = load_pins()
    pin = pins.get(kind)
    instance = instance or kind
    endpoint, key_var = _ENDPOINTS.get(pin.dialect if pin else "", ("https://your-gateway.example/v1", "MODEL_API_KEY"))
    lines = [
        f"# Paddock configuration, written by `paddock init --driver {kind}`.",
        "# One [instances.<id>] table per agent instance; check it with `paddock config check`,",
        "# then run a turn with `paddock run --instance " + instance + " \"hello\"`.",
        "",
        f"[instances.{instance}]",
        f'driver = "{kind}"',
        "",
    ]
    if kind == "local":
        lines += ["# The built-in agent calls no model; the model keys below reach it as PADDOCK_MODEL_*."]
    else:
        lines += ["# The model API. Leave these out to use the agent's own login."]
    lines += [
        f'# endpoint = "{endpoint}"   # with or without its version suffix',
        f'# api_key_env = "{key_var}"   # a host variable holding the key (or api_key = "...": a secret, never logged)',
        '# model = "..."',
        "",
    ]
    if pin is not None:
        lines += [f"# With no `binary`, the pinned {pin.package}@{pin.version} in the peers dir is used",
                  f"# (`paddock peers install --only {kind}`), else `{pin.command or kind}` on PATH.",
                  '# binary = "/path/to/the/agent"']
    elif kind == "acp":
        lines += ["# Any ACP agent: its command line (required).", 'binary = "/path/to/agent"', '# args = ["--acp"]']
    else:
        lines += ['# binary = "/path/to/the/agent"']
    lines += [
        "# args = []          # extra arguments after the binary",
        "# env = {}           # extra variables for the agent (they win over the mapping of the keys above)",
        "# pass_env = []      # host variables passed through unchanged (credentials are stripped otherwise)",
        "# home = \"...\"       # private home (default: <state dir>/instances/<id>)",
    ]
    extra = [f for f in msgspec.structs.fields(spec.config_type) if f.name not in _COMMON]
    required = [f for f in extra if f.required]
    if required:
        lines += ["", f"# {kind} needs:"]
        for field in required:
            if kind == "acp-registry" and field.name == "agent":
                from paddock.drivers.acp import load_registry

                ids = [a.id for a in load_registry().agents]
                lines += [f"# the registry id of the agent; in the shipped snapshot: {', '.join(ids)}",
                          f'agent = "{ids[0]}"']
            else:
                lines.append(f'{field.name} = "..."')
        extra = [f for f in extra if not f.required]
    if extra:
        lines += ["", f"# {kind}'s own keys, at their defaults:"]
        for field in extra:
            default = field.default if field.default is not msgspec.NODEFAULT else (
                field.default_factory() if field.default_factory is not msgspec.NODEFAULT else None)
            if default is None:
                lines.append(f"# {field.name} = ...   # unset: the driver's own default")
            else:
                lines.append(f"# {field.name} = {_toml(default)}")
    lines += _handoff_lines(instance)
    return "\n".join(lines) + "\n"


def _handoff_lines(instance: str) -> list[str]:
    """The commented hand-off keys (``paddock._instances._handoff``); last, because an uncommented
    ``[[...mcp_servers]]`` takes every key below it."""
    return [
        "",
        "# What every session of this instance is handed (a session's own entries win by name).",
        '# preamble = "..."               # grounding put before the first prompt of each session',
        '# preamble_file = "grounding.md" # or read from a file (relative to this one)',
        "# preamble_max_chars = 70000     # a longer preamble is omitted with a warning, never cut",
        '# preamble_reminder = "..."      # one line put before every later prompt',
        "# MCP servers; every env and headers value is a secret (masked, kept only in 0600 files):",
        f"# [[instances.{instance}.mcp_servers]]",
        '# name = "files"',
        '# command = "npx"',
        '# args = ["-y", "@modelcontextprotocol/server-filesystem", "."]',
        '# env = { FILES_TOKEN = "..." }',
        f"# [[instances.{instance}.mcp_servers]]",
        '# name = "docs"',
        '# url = "https://mcp.example/mcp"   # type = "sse" for an SSE server',
        '# headers = { Authorization = "Bearer ..." }',
    ]


def run(args: argparse.Namespace) -> int:
    from paddock.drivers import BUILT_IN_DRIVERS

    if args.driver == "list":
        print("\n".join(sorted(BUILT_IN_DRIVERS)))
        return 0
    try:
        text = template(args.driver, args.instance)
    except KeyError:
        print(f"paddock init: unknown driver {args.driver!r}; known: {', '.join(sorted(BUILT_IN_DRIVERS))}",
              file=sys.stderr)
        return 2
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    if os.path.exists(args.out) and not args.force:
        print(f"paddock init: {args.out} exists; use --force to overwrite it", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {args.out} (driver {args.driver}); check it with: paddock config check --config {args.out}")
    return 0
