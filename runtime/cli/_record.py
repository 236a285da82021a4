"""``paddock record``: record a transcript of one scenario with a pinned real CLI, offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from paddock.testing import record

HELP = "record an NDJSON transcript of a pinned CLI running one scripted scenario"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--cli", help="peer name from paddock/drivers/peers.toml (codex, claude, gemini, ...): a scripted raw session")
    who.add_argument("--driver", help="an ACP flavor (gemini, qwen, claude-acp, copilot, codex-acp): the flavor's own "
                                      "driver runs the flavor session (text, multi-turn, approval accept/decline, HTTP 400)")
    parser.add_argument("--scenario", default="text", help="model scenario (text, tool_shell, tool_write, http400, ...)")
    parser.add_argument("--out", required=True, type=Path, help="transcript file to write")
    parser.add_argument("--dir", type=Path, help="peers folder (default: $PADDOCK_PEERS_DIR, else ~/.cache/paddock/peers)")
    parser.add_argument("--timeout", type=float, default=60.0)


def run(args: argparse.Namespace) -> int:
    if args.driver:
        from paddock.testing import record_flavor

        try:
            path, turns = record_flavor(args.driver, args.out, timeout=args.timeout)
        except (ValueError, LookupError) as exc:
            print(f"paddock record: {exc}", file=sys.stderr)
            return 2
        print(f"{path}: " + ", ".join(t.state for t in turns))
        return 0
    try:
        result = record(args.cli, args.scenario, args.out, peers_dir=args.dir, timeout=args.timeout)
    except (ValueError, LookupError) as exc:
        print(f"paddock record: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the session failed: show why, write nothing
        print(f"paddock record: {args.cli} {args.scenario} failed: {exc}", file=sys.stderr)
        tail = getattr(exc, "stderr_tail", "")
        if tail:
            print(tail, file=sys.stderr)
        return 1
    print(f"{result.path}: {result.frames} frames, {result.model_calls} model calls, {result.seconds} s")
    return 0
