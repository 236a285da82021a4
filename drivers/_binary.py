"""Where an instance's CLI comes from: the configured ``binary``, else the pinned peer in the peers
dir, else the CLI's command on ``PATH``.

A node-run peer (its pin has ``runner = "node"``) resolves to ``[node, entry.js]``, so a user never
writes ``binary = "node"`` plus a script path. Resolution spawns nothing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

from ._peers import default_peers_dir, installed_version, load_pins

__all__ = ["BinaryLocation", "find_binary"]

BinarySource = Literal["config", "peers", "path"]


class BinaryLocation(msgspec.Struct, frozen=True, kw_only=True):
    """A resolved CLI: ``argv`` starts it (before the driver's protocol flags); ``path`` is the
    agent's own executable or script (what ``doctor`` shows); ``source`` says where it was found;
    ``pinned`` is the pinned version when it came from the peers dir."""

    argv: tuple[str, ...]
    path: str
    source: BinarySource
    pinned: str | None = None


def _on_path(name: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=env.get("PATH", os.defpath))


def find_binary(
    configured: str | None,
    *,
    peer: str | None,
    env: Mapping[str, str],
    command: str | None = None,
    peers_dir: Path | None = None,
) -> BinaryLocation | str:
    """Resolve a CLI, or return a sentence saying why it cannot be found.

    - ``configured`` (the instance's ``binary``): a path (must be executable) or a name on the
      child's ``PATH``; it always wins.
    - else the pin named ``peer`` in the peers dir (``$PADDOCK_PEERS_DIR``, else
      ``~/.cache/paddock/peers``; ``peers_dir`` overrides), when installed at its pinned version;
    - else ``command`` (default: the pin's ``command``, else ``peer``) on the child's ``PATH``.
    """
    if configured:
        if os.sep in configured:
            path = os.path.abspath(os.path.expanduser(configured))
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return BinaryLocation(argv=(path,), path=path, source="config")
            return f"binary {configured!r} does not exist or is not executable"
        found = _on_path(configured, env)
        if found is None:
            return f"binary {configured!r} not found on PATH"
        return BinaryLocation(argv=(found,), path=found, source="config")
    if peer is None and command is None:
        return "no `binary` configured"
    pins = load_pins()
    pin = pins.get(peer) if peer is not None else None
    root = peers_dir if peers_dir is not None else default_peers_dir()
    name = command or (pin.command if pin is not None and pin.command else peer) or ""
    if pin is not None and installed_version(pin, root) == pin.version:
        entry = str(pin.entry_path(root))
        if pin.runner is None:
            return BinaryLocation(argv=(entry,), path=entry, source="peers", pinned=pin.version)
        runner = _on_path(pin.runner, env)
        if runner is not None:
            return BinaryLocation(argv=(runner, entry), path=entry, source="peers", pinned=pin.version)
    found = _on_path(name, env)
    if found is not None:
        return BinaryLocation(argv=(found,), path=found, source="path")
    if pin is None:
        return f"{name!r} not found on PATH"
    return f"{name!r} is neither in the peers dir ({root}) nor on PATH; install the pinned one with " \
           f"`paddock peers install --only {peer}`"
