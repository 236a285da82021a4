"""Pinned real agent CLIs ("peers"): the pins file, the install cache and the binary paths.

The pins live in ``tests/peers.toml``. Each peer is installed with npm into its own folder
``<peers dir>/<name>@<version>/``; that folder is the cache: an install is skipped when the pinned
version is already there with its entry point. The peers dir is ``$PADDOCK_PEERS_DIR`` or
``<repository>/.paddock/peers``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path

import msgspec

from runtime.contract import ProcessError
from supervisors import run_command

__all__ = [
    "InstallResult",
    "Peer",
    "default_peers_dir",
    "default_pins_file",
    "install_peer",
    "installed_version",
    "load_pins",
    "peer_argv",
]

_REPO = Path(__file__).resolve().parents[2]

# What npm itself needs from the ambient environment (registry config lives under HOME).
_NPM_ENV_KEYS = (
    "PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE",
    "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
)


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

    def prefix(self, root: Path) -> Path:
        """The npm ``--prefix`` folder of this pin under the peers dir ``root``."""
        return Path(root) / f"{self.name}@{self.version}"

    def entry_path(self, root: Path) -> Path:
        return self.prefix(root) / "node_modules" / self.entry

    @property
    def install_hint(self) -> str:
        return f"paddock peers install --only {self.name}"


class InstallResult(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    version: str
    prefix: str
    skipped: bool
    """True when the pinned version was already installed (cache hit)."""
    seconds: float


def default_pins_file() -> Path:
    return _REPO / "tests" / "peers.toml"


def default_peers_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$PADDOCK_PEERS_DIR`` if set, else ``<repository>/.paddock/peers``."""
    env = os.environ if environ is None else environ
    value = env.get("PADDOCK_PEERS_DIR")
    return Path(value).expanduser() if value else _REPO / ".paddock" / "peers"


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


def _npm_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _NPM_ENV_KEYS or k.lower().startswith("npm_config_")}
    env.setdefault("PATH", os.defpath)
    return env


def install_peer(peer: Peer, root: Path, *, timeout: float = 900.0, npm: str = "npm") -> InstallResult:
    """Install ``peer`` under ``root`` unless the pinned version is already there.

    Runs ``npm install --prefix <root>/<name>@<version> <package>@<version>`` through
    :func:`supervisors.run_command`. Raises ``ProcessError`` when npm fails,
    ``OperationTimeout`` after ``timeout`` seconds, and ``ProcessError`` when npm succeeded but the
    entry point is missing.
    """
    started = time.monotonic()
    prefix = peer.prefix(root)
    if installed_version(peer, root) == peer.version:
        return InstallResult(name=peer.name, version=peer.version, prefix=str(prefix), skipped=True,
                             seconds=time.monotonic() - started)
    prefix.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
            "--loglevel=error", f"{peer.package}@{peer.version}"]
    npm_path = shutil.which(npm)
    if npm_path is None:
        raise ProcessError(f"npm not found on PATH; it is needed to install {peer.package}")
    argv[0] = npm_path
    run_command(argv, env=_npm_env(), cwd=str(prefix), timeout=timeout, check=True)
    if installed_version(peer, root) != peer.version:
        raise ProcessError(
            f"npm installed {peer.package}@{peer.version} but {peer.entry_path(root)} is missing"
        )
    return InstallResult(name=peer.name, version=peer.version, prefix=str(prefix), skipped=False,
                         seconds=time.monotonic() - started)
