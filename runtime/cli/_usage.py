"""``paddock usage``: what the agents spent, from the usage ledger (per instance and thread, in
total; per turn with ``--thread``)."""

from __future__ import annotations

import argparse
import time

from paddock.cli._common import write
from paddock.cli._connect import connect

HELP = "show tokens, cost, turns and turn time per instance and thread (the usage ledger)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument("--config", help="config file (for the [pricing] table)")
    parser.add_argument("--thread", help="only this thread, turn by turn")
    parser.add_argument("--instance", help="only this instance")
    parser.add_argument("--since", type=float, metavar="HOURS", help="only turns started in the last HOURS hours")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")


def _cost(f) -> str:
    if f.cost is None:
        return "?"
    return f"${f.cost:.4f}" + ("" if f.cost_source == "provider" else f" ({f.cost_source})")


def run(args: argparse.Namespace) -> int:
    import msgspec

    since = time.time() - args.since * 3600 if args.since is not None else None
    rt, _ = connect(args, "usage")
    try:  # a PaddockError reaches main(), which prints it explained and returns 1
        report = rt.usage(args.thread, args.instance, since)
    finally:
        rt.close()
    if args.json:
        write(msgspec.json.encode(report).decode() + "\n")
        return 0
    head = ("", "input", "cached", "output", "reasoning", "cost", "turns", "turn time")
    rows: list[tuple[str, ...]] = [head]

    def add(label: str, f) -> None:
        rows.append((label, str(f.input_tokens), str(f.cached_input_tokens), str(f.output_tokens),
                     str(f.reasoning_tokens), _cost(f), str(f.turns), f"{f.turn_seconds:.1f} s"))

    for i in report.instances:
        add(f"instance {i.instance_id} ({i.driver})", i)
    for t in report.threads:
        add(f"thread {t.thread_id}", t)
    for u in report.turns:
        add(f"  turn {u.turn_id} [{u.state}]", u)
    add("total", report.total)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        write("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip() + "\n")
    return 0
