"""Where every CLI command reads: the state directory, and the one config file.

The config is found the same way for every command: ``--config``, then ``$PADDOCK_CONFIG``,
then ``./paddock.toml``, then ``STATE_DIR/paddock.toml``, else the built-in ``local`` instance.
Each command says on stderr, in one line, which one it read.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NamedTuple


__all__ = ["CONFIG_HELP", "CONFIG_NAME", "ConfigFile", "announce", "announce_config", "find_config", "state_dir_of"]

CONFIG_NAME = "paddock.toml"
CONFIG_HELP = (f"TOML config (default: $PADDOCK_CONFIG, else ./{CONFIG_NAME}, else STATE_DIR/{CONFIG_NAME}, "
               "else the built-in 'local' instance)")


def state_dir_of(args: argparse.Namespace) -> Path:
    """``--state-dir``, else ``$PADDOCK_STATE_DIR``, else ``./.paddock``; absolute, not created."""
    return Path(getattr(args, "state_dir", None) or os.environ.get("PADDOCK_STATE_DIR") or ".paddock").resolve()


class ConfigFile(NamedTuple):
    path: str | None
    """The file to read, absolute; ``None``: the built-in ``local`` instance."""
    source: str
    """Where it was named: ``--config``, ``$PADDOCK_CONFIG``, ``the current directory``,
    ``the state directory`` or ``built-in``."""

    def describe(self) -> str:
        if self.path is None:
            return (f"config: none found (--config, $PADDOCK_CONFIG, ./{CONFIG_NAME}, STATE_DIR/{CONFIG_NAME}); "
                    "using the built-in 'local' instance")
        return f"config: {self.path} (from {self.source})"


def find_config(args: argparse.Namespace) -> ConfigFile:
    """The config file a command reads (see the module docstring). A named file that does not
    exist is still returned: reading it says so."""
    named = getattr(args, "config", None)
    if named:
        return ConfigFile(os.path.abspath(named), "--config")
    env = os.environ.get("PADDOCK_CONFIG")
    if env:
        return ConfigFile(os.path.abspath(env), "$PADDOCK_CONFIG")
    if os.path.isfile(CONFIG_NAME):
        return ConfigFile(os.path.abspath(CONFIG_NAME), "the current directory")
    in_state = state_dir_of(args) / CONFIG_NAME
    if in_state.is_file():
        return ConfigFile(str(in_state), "the state directory")
    return ConfigFile(None, "built-in")


def announce_config(command: str, found: ConfigFile) -> None:
    """Say which config ``paddock COMMAND`` reads, then each warning about it (an empty file).
    A file that cannot be read is not reported here: reading it for real says why."""
    announce(command, found.describe())
    if found.path is None:
        return
    from paddock._instances._config import config_warnings, load_config
    from paddock.contract import ConfigError

    try:
        warnings = config_warnings(load_config(found.path))
    except ConfigError:
        return
    for warning in warnings:
        announce(command, f"warning: {warning}")


def announce(command: str, text: str) -> None:
    """One line on stderr: which config (or server, or file) ``paddock COMMAND`` reads."""
    sys.stderr.write(f"paddock {command}: {text}\n")
    sys.stderr.flush()
