"""Pinned real agent CLIs ("peers"): the pins, the peers dir and where each pinned binary lives.

The pins ship with the package (``paddock/drivers/peers.toml``). Each peer is installed by
``paddock peers install`` (:mod:`paddock.testing`) with npm into its own folder
``<peers dir>/<name>@<version>/``. The peers dir is ``$PADDOCK_PEERS_DIR``, else
``$XDG_CACHE_HOME/paddock/peers``, else ``~/.cache/paddock/peers``: one default for the installer,
``peers list``/``peers path``, the drivers' binary resolution and the README.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections.abc import Mapping
from pathlib import Path

import msgspec


__all__ = ["Peer", "default_peers_dir", "default_pins_file", "installed_version", "load_pins", "peer_argv"]

_PINS = Path(__file__).resolve().with_name("peers.toml")


class Peer(msgspec.Struct, frozen=True, kw_only=True):
    """One pinned CLI: npm ``package@version`` and its entry point inside ``node_modules``."""

    name: str
    package: str
    version: str
    entry: str
    protocol: str
    dialect: str
    runner: str | None = None
    """``"node"`` when ``entry`` is a JavaScript file; ``None`` for a native executable."""
    command: str | None = None
    """The CLI's command name on ``PATH`` when it is not ``name`` (binary resolution's fallback)."""

    def prefix(self, root: Path) -> Path:
        """The npm ``--prefix`` folder of this pin under the peers dir ``root``."""
        return Path(root) / f"{self.name}@{self.version}"

    def entry_path(self, root: Path) -> Path:
        return self.prefix(root) / "node_modules" / self.entry

    @property
    def install_hint(self) -> str:
        return f"paddock peers install --only {self.name}"


def default_pins_file() -> Path:
    """The pins shipped with the package."""
    return _PINS


def default_peers_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$PADDOCK_PEERS_DIR`` if set, else ``$XDG_CACHE_HOME/paddock/peers``, else
    ``~/.cache/paddock/peers``. Reads the host's environment (or ``environ``), never the repo."""
    env = os.environ if environ is None else environ
    value = env.get("PADDOCK_PEERS_DIR")
    if value:
        return Path(value).expanduser()
    cache = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return Path(cache) / "paddock" / "peers"


def load_pins(path: Path | None = None) -> dict[str, Peer]:
    """Read the pins file; keys are peer names in file order. Raises ``ValueError`` on bad pins."""
    path = Path(path) if path else default_pins_file()
    with open(path, "rb") as fh:
        raw = tomllib.load(fh)
    pins: dict[str, Peer] = {}
    for name, table in raw.items():
        try:
            pins[name] = msgspec.convert({"name": name, **table}, Peer)
        except msgspec.ValidationError as exc:
            raise ValueError(f"{path}: pin {name!r}: {exc}") from None
    return pins


def installed_version(peer: Peer, root: Path) -> str | None:
    """The version installed for ``peer`` under ``root``, or None when absent or incomplete.

    Incomplete means the package is there but its entry point is not (an interrupted install, or
    npm skipped the platform package).
    """
    manifest = peer.prefix(root) / "node_modules" / peer.package / "package.json"
    try:
        version = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None
    if not peer.entry_path(root).is_file():
        return None
    return version if isinstance(version, str) else None


def peer_argv(peer: Peer, root: Path | None = None) -> list[str] | None:
    """The command line that starts ``peer`` (before protocol flags), or None if not installed."""
    root = default_peers_dir() if root is None else Path(root)
    if installed_version(peer, root) != peer.version:
        return None
    entry = str(peer.entry_path(root))
    if peer.runner is None:
        return [entry]
    runner = shutil.which(peer.runner)
    return [runner, entry] if runner else None
