"""``paddock bench NAME``: run a benchmark from ``benchmarks/`` and print its JSON figures.

A benchmark is a module ``benchmarks/<name>.py`` (dashes become underscores) with
``main(argv: list[str]) -> int`` that prints one JSON document on stdout.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

HELP = "run a benchmark (throughput, latency, sessions, teardown, hub, peer-acp, ...)"


def benchmarks_dir() -> Path:
    """The repository's ``benchmarks/`` folder (benchmarks are not installed with the package)."""
    return Path(__file__).resolve().parents[2] / "benchmarks"


def available() -> list[str]:
    folder = benchmarks_dir()
    if not folder.is_dir():
        return []
    return sorted(
        p.stem.replace("_", "-") for p in folder.glob("*.py") if not p.name.startswith("_")
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="benchmark name; `paddock bench list` lists them")
    parser.add_argument("--json", action="store_true", help="print only the JSON document")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="arguments for the benchmark")


def run(args: argparse.Namespace) -> int:
    if args.name == "list":
        print("\n".join(available()))
        return 0
    path = benchmarks_dir() / f"{args.name.replace('-', '_')}.py"
    if not path.is_file():
        print(f"paddock bench: no benchmark {args.name!r}; known: {', '.join(available())}", file=sys.stderr)
        return 2
    spec = importlib.util.spec_from_file_location(f"benchmarks.{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    argv = list(args.rest) + (["--json"] if args.json else [])
    return int(module.main(argv) or 0)
