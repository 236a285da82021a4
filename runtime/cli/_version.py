"""``paddock version``: the runtime's version and the registered drivers."""

from __future__ import annotations

import argparse

HELP = "print the version and the registered drivers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    import json

    import paddock

    try:
        from paddock.drivers import BUILT_IN_DRIVERS  # type: ignore[attr-defined]

        drivers = sorted(BUILT_IN_DRIVERS)
    except ImportError:
        drivers = []
    if args.json:
        print(json.dumps({"version": paddock.__version__, "drivers": drivers}))
    else:
        print(f"paddock {paddock.__version__}")
        print("drivers: " + (", ".join(drivers) or "(none yet)"))
    return 0
