"""The public ACP agent registry's document format, and where a registry agent's command comes
from (``acp-registry`` driver, ``paddock peers install --registry ID``).

A registry document is ``{"version", "agents": [{"id", "name", "version", "distribution":
{"npx" | "uvx" | "binary"}}], "extensions"}`` (the registry's ``FORMAT.md``). ``npx``:
``{"package": "@scope/pkg@1.2.3", "cmd"?, "args"?, "env"?}``; ``uvx`` likewise for PyPI;
``binary``: platform (``linux-x86_64``, ``darwin-aarch64``, ...) -> ``{"archive", "cmd", "args"?,
"env"?}``. The package ships a snapshot (``registry-snapshot.json``, built from the agent.json
files of the public registry repository at commit 3de1678, 2026-02-07) for tests and offline use.

npx agents install with npm at their pinned version into the peers dir
(``<peers>/registry-<id>@<version>/``) and run as ``node <bin script> <args>``; uvx agents run
through ``uvx`` when it is on ``PATH``; binary archives are not fetched by Paddock (a clear
unavailable reason says what to download, and a configured ``binary`` runs it).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import msgspec

from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._peers import Peer, default_peers_dir, installed_version

__all__ = [
    "RegistryAgent",
    "RegistryDocument",
    "RegistryLaunch",
    "SNAPSHOT",
    "load_registry",
    "platform_key",
    "registry_command",
    "registry_launch",
    "registry_peer",
]

SNAPSHOT = Path(__file__).resolve().with_name("registry-snapshot.json")


class PackageDist(msgspec.Struct, frozen=True, kw_only=True):
    package: str
    cmd: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}

    @property
    def name_and_version(self) -> tuple[str, str | None]:
        """``@scope/pkg@1.2.3`` -> (``@scope/pkg``, ``1.2.3``); no version -> (name, None)."""
        head, at, version = self.package.rpartition("@")
        if at and head and not head.endswith("/"):
            return head, version
        return self.package, None


class BinaryTarget(msgspec.Struct, frozen=True, kw_only=True):
    archive: str
    cmd: str
    args: list[str] = []
    env: dict[str, str] = {}


class Distribution(msgspec.Struct, frozen=True, kw_only=True):
    npx: PackageDist | None = None
    uvx: PackageDist | None = None
    binary: dict[str, BinaryTarget] | None = None


class RegistryAgent(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    version: str
    distribution: Distribution
    description: str | None = None
    repository: str | None = None


class RegistryDocument(msgspec.Struct, frozen=True, kw_only=True):
    version: str
    agents: list[RegistryAgent]

    def agent(self, agent_id: str) -> RegistryAgent:
        """The agent ``agent_id``; ``KeyError`` naming the known ids otherwise."""
        for agent in self.agents:
            if agent.id == agent_id:
                return agent
        raise KeyError(f"no agent {agent_id!r} in the registry; known: {', '.join(a.id for a in self.agents)}")


_cache: dict[str, RegistryDocument] = {}


def load_registry(source: str | None = None, *, timeout: float = 10.0) -> RegistryDocument:
    """Read a registry document from a file path or an ``http(s)`` URL (``None``: the shipped
    snapshot). Cached per source for the process. Raises ``ValueError`` naming the source and
    what is wrong (unreadable, not JSON, not the registry format)."""
    key = source or str(SNAPSHOT)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    try:
        if source is not None and source.startswith(("http://", "https://")):
            with urllib.request.urlopen(source, timeout=timeout) as response:  # noqa: S310 (a configured URL)
                data = response.read()
        else:
            data = Path(os.path.expanduser(key)).read_bytes()
    except OSError as exc:
        raise ValueError(f"registry {key}: cannot be read: {exc}") from None
    try:
        doc = msgspec.json.decode(data, type=RegistryDocument)
    except msgspec.DecodeError as exc:
        raise ValueError(f"registry {key}: not a registry document: {exc}") from None
    _cache[key] = doc
    return doc


def platform_key() -> str:
    """This machine's platform id in the registry's terms (``linux-x86_64``, ``darwin-aarch64``)."""
    system = {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}.get(platform.system(), platform.system().lower())
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{system}-{machine}"


def registry_peer(agent: RegistryAgent) -> Peer:
    """The peer record of an npx agent: npm ``package@version`` into ``registry-<id>@<version>``
    (its manifest is the entry that proves the install); ``ValueError`` without npx."""
    dist = agent.distribution.npx
    if dist is None:
        raise ValueError(f"registry agent {agent.id!r} has no npx distribution")
    name, version = dist.name_and_version
    return Peer(name=f"registry-{agent.id}", package=name, version=version or agent.version,
                entry=f"{name}/package.json", protocol="acp", dialect="unknown")


def _bin_script(prefix: Path, package: str, cmd: str | None) -> Path | None:
    manifest = prefix / "node_modules" / package / "package.json"
    try:
        bins = json.loads(manifest.read_text(encoding="utf-8")).get("bin")
    except (OSError, ValueError):
        return None
    found: object = None
    if isinstance(bins, str):
        found = bins
    elif isinstance(bins, Mapping) and bins:
        short = package.rsplit("/", 1)[-1]
        found = bins.get(cmd or short) or (next(iter(bins.values())) if len(bins) == 1 or cmd is None else None)
    return manifest.parent / found if isinstance(found, str) else None


class RegistryLaunch(msgspec.Struct, frozen=True, kw_only=True):
    """How a registry agent starts: ``location`` (the agent's own script or binary, where it was
    found, its pinned version), the distribution's ``args`` and ``env``."""

    location: BinaryLocation
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}


def registry_launch(agent: RegistryAgent, env: Mapping[str, str], *, peers_dir: Path | None = None,
                    binary: str | None = None) -> RegistryLaunch | str:
    """How ``agent`` starts here, or a sentence saying why it cannot.

    Order: a configured ``binary`` (with the distribution's args for this platform); the npx
    package installed in the peers dir (``node <bin script>``); ``uvx`` on ``PATH``; otherwise
    the reason (npx: the install command; binary: what to download)."""
    dist = agent.distribution
    path = env.get("PATH", os.defpath)
    target = (dist.binary or {}).get(platform_key())
    chosen = dist.npx or dist.uvx or target
    if binary:
        found = find_binary(binary, peer=None, env=env)
        if isinstance(found, str):
            return found
        return RegistryLaunch(location=found, args=tuple(chosen.args) if chosen is not None else (),
                              env=dict(chosen.env) if chosen is not None else {})
    if dist.npx is not None:
        peer = registry_peer(agent)
        root = peers_dir if peers_dir is not None else default_peers_dir()
        if installed_version(peer, root) == peer.version:
            script = _bin_script(peer.prefix(root), peer.package, dist.npx.cmd)
            node = shutil.which("node", path=path)
            if script is not None and script.is_file() and node is not None:
                where = BinaryLocation(argv=(node, str(script)), path=str(script), source="peers", pinned=peer.version)
                return RegistryLaunch(location=where, args=tuple(dist.npx.args), env=dict(dist.npx.env))
            if node is None:
                return "node is not on PATH (needed to run an npx distribution)"
        return (f"registry agent {agent.id!r} ({peer.package}@{peer.version}) is not installed in the peers dir "
                f"({root}); install it with `paddock peers install --registry {agent.id}`")
    if dist.uvx is not None:
        uvx = shutil.which("uvx", path=path)
        if uvx is None:
            return f"registry agent {agent.id!r} is a uvx distribution ({dist.uvx.package}) and uvx is not on PATH"
        name = dist.uvx.package
        argv = (uvx, "--from", name, dist.uvx.cmd) if dist.uvx.cmd else (uvx, name)
        return RegistryLaunch(location=BinaryLocation(argv=argv, path=uvx, source="path"),
                              args=tuple(dist.uvx.args), env=dict(dist.uvx.env))
    if target is not None:
        return (f"registry agent {agent.id!r} is a binary distribution; Paddock does not fetch archives "
                f"({target.archive}): download and extract it, then set `binary` to its {target.cmd!r}")
    return (f"registry agent {agent.id!r} has no distribution for {platform_key()} "
            f"(it offers: {', '.join(sorted((dist.binary or {}).keys())) or 'nothing'})")


def registry_command(agent: RegistryAgent, env: Mapping[str, str], *, peers_dir: Path | None = None,
                     binary: str | None = None) -> tuple[list[str], dict[str, str]] | str:
    """``(argv, extra env)`` that start ``agent`` (:func:`registry_launch` flattened), or why not."""
    launch = registry_launch(agent, env, peers_dir=peers_dir, binary=binary)
    if isinstance(launch, str):
        return launch
    return [*launch.location.argv, *launch.args], dict(launch.env)
