"""What an instance's agents may touch, derived from the instance (never per driver).

:func:`plan_confinement` turns an instance's keys (``confinement``, ``roots``, ``network``,
``allow_ports``, ``hide``), its home and environment into a :class:`ConfinementPlan`: the
Landlock rules (``paddock.supervisors.Confinement``) every process of the instance is spawned
under, what the runtime reports (``ConfinementInfo``), and the check of a session's cwd.

- read and execute: the system (``/usr``, ``/lib*``, ``/bin``, ``/sbin``, ``/etc`` minus
  ``hide``, ``/proc`` and ``/sys``), a few devices, the folders of the instance's ``PATH``, the
  peers dir, this Python's prefixes and Paddock's own package (the local agent and the MCP relay
  run on them); the spawner adds the spawned executable's installation;
- read and write: the instance home (its ``TMPDIR`` is inside it) and the workspace roots;
- never: the state dir, another instance's home, the host's dotfiles.
"""

from __future__ import annotations

import os
import pwd
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from paddock._state._dir import private_dir
from paddock.contract import ConfinementInfo, RuntimeWarningEvent, ValidationError
from paddock.drivers import DriverConfig
from paddock.supervisors import Confinement, landlock_abi

__all__ = ["ConfinementPlan", "describe_confinement", "plan_confinement"]

SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/sys",
               "/dev/fd", "/run/systemd/resolve")
TOOLCHAIN_SECRETS = (".cargo/credentials", ".cargo/credentials.toml", ".npmrc", ".pypirc", ".gem/credentials")
"""Credential files inside toolchain folders of the host's home: covered even where the folder
is granted."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
           "/dev/pts", "/dev/shm")


class ConfinementPlan:
    """One instance's confinement: ``rules`` (``None``: its agents run unconfined), ``info``
    (what is reported), ``unavailable`` (why a ``"required"`` instance cannot run), ``warning``
    (why a ``"workspace"`` instance runs unconfined: said at every session start) and the
    workspace ``roots``. Immutable; thread-safe."""

    __slots__ = ("hidden", "home", "info", "rules", "roots", "unavailable", "warning")

    def __init__(self, info: ConfinementInfo, rules: Confinement | None, roots: tuple[str, ...],
                 hidden: tuple[str, ...], home: str, unavailable: str | None = None,
                 warning: str | None = None) -> None:
        self.home = home
        self.info = info
        self.rules = rules
        self.roots = roots
        self.hidden = hidden
        self.unavailable = unavailable
        self.warning = warning

    def check_cwd(self, cwd: str, *, shared: bool, thread_id: str) -> None:
        """Refuse (``ValidationError`` naming ``roots``) a session cwd the agent could not
        work in: for a shared-process instance one outside its roots; for any confined instance
        one inside a hidden path (the state dir, another instance's home). The instance's own
        home is always allowed."""
        if self.rules is None or cwd == self.home or _beneath(cwd, self.home):
            return
        if any(cwd == h or _beneath(cwd, h) for h in self.hidden):
            raise ValidationError("start_session", f"cwd {cwd!r} is inside a folder the instance's agents may never "
                                  "touch (the state dir, another instance's home or the host's dotfiles)",
                                  thread_id=thread_id)
        if shared and not any(cwd == r or _beneath(cwd, r) for r in self.roots):
            shown = ", ".join(self.roots) or "none"
            raise ValidationError("start_session", f"cwd {cwd!r} is outside the instance's workspace roots "
                                  f"(key 'roots': {shown}); its agent process is shared by every session and "
                                  "confined to those roots: add the folder to 'roots'", thread_id=thread_id)

    def session_info(self, cwd: str, *, shared: bool) -> ConfinementInfo:
        """What a session's ``session.started`` reports (a per-session process adds its cwd)."""
        if shared or self.rules is None or cwd in self.info.roots:
            return self.info
        return ConfinementInfo(confined=True, setting=self.info.setting, landlock_abi=self.info.landlock_abi,
                               roots=(*self.info.roots, cwd), network=self.info.network)

    def start_warning(self, driver: str, instance_id: str, thread_id: str) -> RuntimeWarningEvent | None:
        """The ``runtime.warning`` every session start of an unconfined ``"workspace"`` instance
        carries (``confinement.unavailable``), else ``None``."""
        if self.warning is None:
            return None
        return RuntimeWarningEvent(driver=driver, instance_id=instance_id, thread_id=thread_id,
                                   code="confinement.unavailable", message=self.warning)


def describe_confinement(info: ConfinementInfo) -> str:
    """One line for ``paddock doctor``: what the kernel confines the instance's agents to."""
    if info.setting == "none":
        return 'off (confinement = "none"): the agents run with the host user\'s whole filesystem and network'
    if not info.confined:
        return f"NOT confined: {info.reason or 'unknown'}"
    roots = ", ".join(info.roots) or "none"
    return f"confined by Landlock ABI {info.landlock_abi}; workspace roots: {roots}; network: {info.network}"


def _beneath(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip("/") + "/")


def _host_homes() -> tuple[str, ...]:
    """The host user's home as ``$HOME`` says and as the password database says: a host that
    points ``HOME`` elsewhere (a test, a service) still has its toolchains (pyenv, cargo) and its
    dotfiles in the latter."""
    homes = [_real(Path.home())]
    try:
        homes.append(_real(pwd.getpwuid(os.getuid()).pw_dir))
    except (KeyError, OSError):
        pass
    return tuple(dict.fromkeys(h for h in homes if h != "/"))


def _real(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


def _port(url: str) -> int | None:
    try:
        parts = urlsplit(url)
        return parts.port or {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(parts.scheme)
    except ValueError:
        return None


def _package_folders() -> list[str]:
    """Where Paddock's own code lives (a checkout maps one import name onto several folders)."""
    folders = set()
    for name in ("paddock", "paddock.supervisors", "paddock.actors", "paddock.drivers", "paddock.contract"):
        module = sys.modules.get(name)
        if module is not None and module.__file__:
            folders.add(os.path.dirname(os.path.abspath(module.__file__)))
    return sorted(folders)


def _site_folders() -> list[str]:
    """This Python's package folders outside its prefixes: a ``.pth`` file can put another
    environment's ``site-packages`` on ``sys.path`` (a layered venv), and the local agent and the
    MCP relay import from it. Only folders named ``site-packages``/``dist-packages`` count (never
    the working directory or a bare home)."""
    return [_real(p) for p in sys.path
            if p and os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages") and os.path.isdir(p)]


def plan_confinement(
    instance_id: str,
    config: DriverConfig,
    *,
    home: str,
    env: Mapping[str, str],
    state_dir: str,
    other_homes: Iterable[str],
    opened_in: str,
    mcp_urls: Iterable[str] = (),
) -> ConfinementPlan:
    """The instance's :class:`ConfinementPlan` (thread: caller; reads the kernel's Landlock ABI
    once per process, ``paddock.supervisors.landlock_abi``)."""
    setting = config.confinement
    network = config.network
    host_homes = _host_homes()
    own_home = _real(home)
    hidden = {_real(state_dir), *(_real(h) for h in other_homes)}
    hidden.discard(own_home)
    for host_home in host_homes:
        try:
            hidden |= {e.path for e in os.scandir(host_home) if e.name.startswith(".")}
        except OSError:
            pass
    hidden |= {_real(p) for p in config.hide}
    if config.roots is not None:
        roots = tuple(dict.fromkeys(_real(r) for r in config.roots))
    else:
        roots = tuple(dict.fromkeys(r for r in (_real(opened_in), _real(tempfile.gettempdir())) if r != "/"))
    for host_home in host_homes:
        if any(_beneath(host_home, r) for r in roots):
            hidden.add(host_home)  # a root above the host's home: none of the home is a workspace
    hidden.discard(own_home)  # a granted path inside a hidden one stays granted (Confinement.hide)
    if setting == "none":
        info = ConfinementInfo(confined=False, setting="none", roots=roots, network=network)
        return ConfinementPlan(info, None, roots, tuple(sorted(hidden)), own_home)
    abi = landlock_abi()
    if abi < 1:
        why = "the kernel offers no Landlock (Linux 5.13+ with Landlock enabled is needed)"
        info = ConfinementInfo(confined=False, setting=setting, roots=roots, network=network, reason=why)
        if setting == "required":
            return ConfinementPlan(info, None, roots, tuple(sorted(hidden)), own_home,
                                   unavailable=f"confinement = \"required\" but {why}")
        return ConfinementPlan(info, None, roots, tuple(sorted(hidden)), own_home,
                               warning=f"the agent runs unconfined: {why} (confinement = \"workspace\")")
    read = [*SYSTEM_READ, *_package_folders(), *_site_folders(), sys.prefix, sys.base_prefix, sys.exec_prefix,
            sys.base_exec_prefix]
    peers = env.get("PADDOCK_PEERS_DIR") or os.environ.get("PADDOCK_PEERS_DIR") or str(Path.home() / ".cache" / "paddock" / "peers")
    read.append(_real(peers))
    for folder in env.get("PATH", "").split(os.pathsep):
        if folder and os.path.isabs(folder):
            real = _real(folder)
            if real != "/" and not any(real == h or _beneath(h, real) for h in host_homes):
                # A tool folder in the host's home is a toolchain's (pyenv's shims, cargo's bin):
                # its launchers need the rest of it, so the toolchain's folder is granted; not
                # ~/.local (its share/ holds other programs' data).
                parent = os.path.dirname(real)
                inside_home = (any(_beneath(real, h) and parent != h for h in host_homes)
                               and os.path.basename(parent) != ".local")
                read.append(parent if inside_home else real)
    resolv = os.path.dirname(_real("/etc/resolv.conf"))
    if resolv not in ("/etc", "/"):
        read.append(resolv)
    # The threads' git worktrees (workspace = "worktree") live in the state dir; a shared process
    # serves threads created after it started, so their folder is granted from the start.
    try:
        write_trees = [_real(private_dir(private_dir(Path(state_dir, "workspaces")) / "trees"))]
    except OSError:
        write_trees = []
    write = [own_home, *DEVICES, *roots, *write_trees]
    connect: tuple[int, ...] | None = None
    if network == "endpoints":
        ports = [_port(u) for u in (config.endpoint or "", *mcp_urls) if u]
        connect = tuple(sorted({p for p in ports if p is not None} | set(config.allow_ports)))
    granted = set(read) | set(write)
    hidden = {h for h in hidden if h not in granted}  # a dotfile granted as a toolchain stays granted
    hidden |= {os.path.join(h, name) for h in host_homes for name in TOOLCHAIN_SECRETS}
    rules = Confinement(read=tuple(dict.fromkeys(read)), write=tuple(dict.fromkeys(write)),
                        hide=tuple(sorted(hidden)), connect=connect, never=host_homes)
    info = ConfinementInfo(confined=True, setting=setting, landlock_abi=abi, roots=roots, network=network)
    return ConfinementPlan(info, rules, roots, tuple(sorted(hidden)), own_home)
