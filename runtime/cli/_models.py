"""``paddock models``: an instance's model catalog (``Runtime.models``), one model a line, or
JSON with ``--json``."""

from __future__ import annotations

import argparse
import json

import msgspec

from paddock.cli._attach import model_lines
from paddock.cli._common import add_runtime_options, handle_termination, write
from paddock.cli._connect import connect
from paddock.cli._errors import explain

HELP = "list an instance's models (id, default, what each reads, reasoning efforts)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)
    parser.add_argument("--instance", default="local", help="instance id (default: local)")
    parser.add_argument("--refresh", action="store_true", help="ask the agent again instead of the cached catalog")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the catalog")


def run(args: argparse.Namespace) -> int:
    from paddock.contract import PaddockError

    handle_termination()
    rt, _ = connect(args, "models")
    try:
        models = rt.models(args.instance, refresh=args.refresh, timeout=args.timeout)
    except PaddockError as exc:
        write(f"paddock models: {explain(exc)}\n", err=True)
        return 1
    finally:
        rt.close()
    if args.json:
        write("".join(json.dumps(msgspec.to_builtins(m)) + "\n" for m in models))
    else:
        write("\n".join(model_lines(models)) + "\n")
    return 0
