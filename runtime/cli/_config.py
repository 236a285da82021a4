"""``paddock config check``: validate a config and show what each instance resolves to."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

import msgspec

from paddock.cli._common import write
from paddock.cli._places import CONFIG_HELP, announce_config, find_config

HELP = "check a config without starting anything: each instance's resolved command, home and binary (no secrets)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    p = sub.add_parser("check", help="validate the config and print each instance's command, home and binary")
    p.add_argument("--config", help=CONFIG_HELP)
    p.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    p.add_argument("--json", action="store_true", help="print one JSON object per instance")
    p.add_argument("--versions", action="store_true",
                   help="also run each agent's --version and login check (starts processes; the check alone starts none)")


_SOURCES = {"peers": "pinned, from the peers dir", "path": "found on PATH", "config": "configured"}


def run(args: argparse.Namespace) -> int:
    from paddock._instances._inspect import check_config
    from paddock.contract import ConfigError

    found = find_config(args)
    announce_config("config check", found)
    try:
        checks = check_config(found.path, state_dir=args.state_dir, versions=args.versions)
    except ConfigError as exc:
        print(f"paddock config check: {exc}", file=sys.stderr)
        return 2
    if args.json:
        for c in checks:
            write(json.dumps(msgspec.to_builtins(c)) + "\n")
    else:
        for c in checks:
            write(f"{'ok ' if c.ok else '!! '}{c.id} (driver {c.driver})\n")
            where = f" ({_SOURCES[c.source]})" if c.source in _SOURCES else ""
            rows = [("command", shlex.join(c.command) if c.command else None), ("binary", f"{c.binary or '-'}{where}"),
                    ("home", c.home or "-"), *((key, c.model.get(key)) for key in ("endpoint", "api_key", "model")),
                    ("env", ", ".join(f"{name}=***" for name in c.env)), ("mcp", ", ".join(c.mcp_servers)),
                    ("preamble", None if c.preamble is None else f"{c.preamble} characters"),
                    ("rules", f"{c.approval_rules} approval rules of its own (paddock rules check)" if c.approval_rules else None),
                    ("reason", c.reason)]
            for label, value in rows:
                if value:
                    write(f"    {label + ':':10}{value}\n")
    return 0 if all(c.ok for c in checks) else 1
