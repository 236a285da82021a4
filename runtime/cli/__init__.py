"""The ``paddock`` command line.

Each subcommand lives in its own module, imported only when used. A module defines
``HELP: str``, ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

__all__ = ["COMMANDS", "main"]

COMMANDS: dict[str, str] = {
    name: f"paddock.cli._{name.replace('-', '_')}"
    for name in (
        "demo", "run", "events", "doctor", "init", "config", "sessions", "stop", "version", "bench",
        "mock-model", "peers", "record", "serve", "chat", "requests", "approve", "generate", "conformance",
        "fork", "compact", "rules",
        "models", "diff", "usage",
    )
}
"""Subcommand name -> module path (``paddock.cli._<name>``, ``-`` as ``_``), in help order."""


def _available() -> dict[str, object]:
    found: dict[str, object] = {}
    for name, path in COMMANDS.items():
        try:
            found[name] = importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if exc.name != path:
                raise
    return found


def _drop_stdout() -> None:
    """stdout's reader is gone (``paddock events | head``): point the descriptor at /dev/null so
    the interpreter's last flush cannot fail again and print a traceback at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no usable stdout descriptor: nothing left to flush into
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (also used as ``sys.exit`` status). A closed
    stdout ends any command quietly with 0: the reader has what it wanted."""
    try:
        return _main(argv)
    except BrokenPipeError:
        _drop_stdout()
        return 0


def _main(argv: Sequence[str] | None) -> int:
    import paddock

    commands = _available()
    parser = argparse.ArgumentParser(
        prog="paddock", description="Supervised coding-agent runtime.",
        epilog="Each command: paddock COMMAND --help. Every command reads its config from --config, $PADDOCK_CONFIG, "
               "./paddock.toml or STATE_DIR/paddock.toml, and says which. The scripted model server: paddock mock-model --help.")
    parser.add_argument("--version", action="version", version=f"paddock {paddock.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in commands.items():
        p = sub.add_parser(name, help=getattr(module, "HELP", None))
        module.add_arguments(p)  # type: ignore[attr-defined]
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    from paddock.contract import ConfigError, PaddockError

    try:
        return int(commands[args.command].run(args) or 0)  # type: ignore[attr-defined]
    except KeyboardInterrupt:
        return 130
    except ConfigError as exc:  # the user's to fix: the message, not a traceback
        sys.stderr.write(f"paddock {args.command}: {exc}\n")
        return 2
    except PaddockError as exc:
        from paddock.cli._errors import explain

        sys.stderr.write(f"paddock {args.command}: {explain(exc)}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
