"""``paddock rules check``: which approval rule decides a command, a file change or a tool call,
and why (a dry run of :func:`paddock.contract.decide` on the config's rules; nothing starts)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from paddock.cli._common import write
from paddock.cli._places import CONFIG_HELP, announce_config, find_config

HELP = "dry-run the approval rules: which rule decides a command, a file change or a tool call, and why"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rules_command", metavar="ACTION", required=True)
    p = sub.add_parser("check", help="say which rule decides COMMAND (or --path, --tool) and why")
    p.add_argument("line", nargs="?", metavar="COMMAND", help="a command line, as the agent would run it (quote it)")
    p.add_argument("--path", action="append", default=[], help="a file an edit writes (repeatable; relative to --cwd)")
    p.add_argument("--change", default="update", choices=("add", "update", "delete", "move"),
                   help="the kind of change of --path (default update)")
    p.add_argument("--tool", help="a tool call: TOOL, or SERVER/TOOL for an MCP server's tool")
    p.add_argument("--instance", help="apply this instance's rules before the runtime's (default: the only instance)")
    p.add_argument("--cwd", default=".", help="the session's folder, the workspace root (default: the current one)")
    p.add_argument("--config", help=CONFIG_HELP)
    p.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    p.add_argument("--json", action="store_true", help="print the decision as one JSON object")


def run(args: argparse.Namespace) -> int:
    import msgspec

    from paddock._instances._config import load_config
    from paddock.contract import (
        DECISIONS,
        CommandSubject,
        ConfigError,
        FileChangeSubject,
        FileEdit,
        RequestSubject,
        RuleSubject,
        ToolSubject,
        decide,
        split_command,
    )

    given = [x for x in (args.line, args.path or None, args.tool) if x]
    if len(given) != 1:
        write("paddock rules check: give one of COMMAND, --path or --tool\n", err=True)
        return 2
    found = find_config(args)
    announce_config("rules check", found)
    try:
        config = load_config(found.path)
    except ConfigError as exc:
        write(f"paddock rules check: {exc}\n", err=True)
        return 2
    instance = args.instance
    if instance is None and len(config.instances) == 1:
        instance = config.instances[0].instance_id
    entry = next((e for e in config.instances if e.instance_id == instance), None)
    if instance is not None and entry is None:
        write(f"paddock rules check: no instance {instance!r} in the config\n", err=True)
        return 2
    own = entry.handoff.approval_rules if entry is not None else ()
    rules = own + config.settings.approval_rules
    origins = [f"[instances.{instance}] approval_rules[{i}]" for i in range(len(own))] + [
        f"[runtime] approval_rules[{i}]" for i in range(len(config.settings.approval_rules))]

    cwd = os.path.abspath(args.cwd)
    subject: RequestSubject
    if args.line:
        subject = CommandSubject(command=args.line, cwd=cwd)
    elif args.path:
        subject = FileChangeSubject(files=tuple(FileEdit(path=p, change=args.change) for p in args.path))
    else:
        server, _, tool = args.tool.rpartition("/")
        subject = ToolSubject(tool=tool, server=server or None)
    got = decide(rules, RuleSubject(subject=subject, cwd=cwd, roots=(cwd,)), DECISIONS)
    parts = split_command(args.line) if args.line else None

    if args.json:
        out = {"instance": instance, "rules": len(rules),
               "decision": msgspec.to_builtins(got) if got is not None else None,
               "origin": origins[got.index] if got is not None else None}
        if args.line:
            out["parts"] = [p.text for p in parts] if parts is not None else None
        write(json.dumps(out) + "\n")
        return 0
    write(f"rules: {len(own)} of instance {instance!r}, then {len(config.settings.approval_rules)} of the runtime\n"
          if instance is not None else f"rules: {len(rules)} of the runtime (no --instance)\n")
    if args.line:
        if parts is None:
            write("parts: none: the command line is ambiguous (only a rule that declines it can decide)\n")
        else:
            write("parts: " + "; ".join(p.text for p in parts) + "\n")
    if got is None:
        write("decides: no rule; the host's hook, else a person, decides\n")
    else:
        write(f"decides: {got.decision}, by rule #{got.index} ({origins[got.index]}): {got.rule}\n"
              f"why: {got.reason}\n")
    sys.stdout.flush()
    return 0
