"""The hand-off options of the commands that start sessions (``run``, ``chat``):
``--mcp-config FILE`` (the common ``{"mcpServers": {...}}`` JSON shape) and ``--preamble-file
FILE`` / ``--preamble-reminder TEXT``. Left out, a resumed thread keeps what it had."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from paddock.contract import McpServer

__all__ = ["Handoff", "add_handoff_options", "handoff_arguments"]


class Handoff(TypedDict, total=False):
    """The ``start_session`` keywords the options gave."""

    mcp_servers: list[McpServer]
    preamble: str
    preamble_reminder: str


def add_handoff_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mcp-config", metavar="FILE",
                        help='MCP servers for the session, as JSON {"mcpServers": {name: {command, args, env} | '
                             '{url, headers, type}}}; joined to the instance\'s (default: the thread\'s own)')
    parser.add_argument("--preamble-file", metavar="FILE",
                        help="grounding text put before the first prompt of each session (default: the "
                             "thread's own, else the instance's preamble)")
    parser.add_argument("--preamble-reminder", metavar="TEXT", help="one line put before every later prompt")


def handoff_arguments(args: argparse.Namespace) -> Handoff:
    """``start_session`` keywords from the options (only those given). Raises
    :class:`ConfigError` naming the file for one that cannot be read or is malformed (its
    message never quotes a value: ``env`` and ``headers`` hold secrets)."""
    from paddock.contract import ConfigError, ValidationError, mcp_servers_from_json

    out: Handoff = {}
    if args.mcp_config:
        try:
            with open(args.mcp_config, encoding="utf-8") as fh:
                data = json.load(fh)
        except OSError as exc:
            raise ConfigError(args.mcp_config, f"cannot be read: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            # the decoder's message quotes no text of the file, only where it stopped
            where = f"line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "encoding"
            raise ConfigError(args.mcp_config, f"not valid JSON ({where})") from None
        if not isinstance(data, dict):
            raise ConfigError(args.mcp_config, 'expected a JSON object {"mcpServers": {...}}')
        try:
            out["mcp_servers"] = list(mcp_servers_from_json(data))
        except ValidationError as exc:
            raise ConfigError(args.mcp_config, exc.issue) from None
    if args.preamble_file:
        try:
            with open(args.preamble_file, encoding="utf-8") as fh:
                out["preamble"] = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(args.preamble_file, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if args.preamble_reminder:
        out["preamble_reminder"] = args.preamble_reminder
    return out
