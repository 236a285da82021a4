"""The peers installer: ``paddock peers install`` puts each pinned CLI into the peers dir.

Pins and locations live in :mod:`paddock.drivers._peers` (drivers resolve their pinned binary from
them); this module only installs. An install is skipped when the pinned version is already there
with its entry point: the peers dir is the cache.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import msgspec

from paddock.contract import ProcessError
from paddock.drivers._peers import Peer, installed_version
from paddock.supervisors import run_command

__all__ = ["InstallResult", "install_peer"]

# What npm itself needs from the ambient environment (registry config lives under HOME).
_NPM_ENV_KEYS = (
    "PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE",
    "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
)


class InstallResult(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    version: str
    prefix: str
    skipped: bool
    """True when the pinned version was already installed (cache hit)."""
    seconds: float


def _npm_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _NPM_ENV_KEYS or k.lower().startswith("npm_config_")}
    env.setdefault("PATH", os.defpath)
    return env


def install_peer(peer: Peer, root: Path, *, timeout: float = 900.0, npm: str = "npm") -> InstallResult:
    """Install ``peer`` under ``root`` unless the pinned version is already there.

    Runs ``npm install --prefix <root>/<name>@<version> <package>@<version>`` through
    :func:`paddock.supervisors.run_command`. Raises ``ProcessError`` when npm fails,
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
