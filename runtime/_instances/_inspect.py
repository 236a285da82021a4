"""What an instance config resolves to, without a Runtime: its driver, decoded config, home,
child environment, binary and command line. Used by ``paddock config check`` and
``paddock init``; spawns nothing, writes nothing, never returns a secret."""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec

from paddock._instances._config import InstanceEntry, RuntimeConfig, issue_from, load_config
from paddock._instances._isolation import build_env
from paddock.contract import ConfigError

if TYPE_CHECKING:
    from paddock.actors import HubHandle
    from paddock.drivers import DriverSpec

__all__ = ["InstanceCheck", "check_config"]


class InstanceCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One instance as configured: ``ok`` when it can run; ``reason`` otherwise. ``command``
    and ``binary`` are what its agent would start with; ``model`` shows the common model keys
    with the key masked."""

    id: str
    driver: str
    ok: bool
    reason: str | None = None
    home: str | None = None
    binary: str | None = None
    source: str | None = None
    command: list[str] | None = None
    model: dict[str, str] = {}
    mcp_servers: list[str] = []
    """Each configured MCP server as ``name (stdio|http|sse)``; never its env or headers."""
    preamble: int | None = None
    """The configured preamble's length in characters."""
    env: list[str] = []
    """The names of the instance's configured ``env`` variables; never their values."""
    approval_rules: int = 0
    """How many approval rules the instance has of its own (before the runtime's)."""


def _home(state_dir: Path, instance_id: str, configured: str | None) -> Path:
    return (Path(configured).expanduser() if configured else state_dir / "instances" / instance_id).resolve()


def _homes(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "TMPDIR": str(home / "tmp"), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache")}


def check_config(config: str | os.PathLike[str] | None, *, state_dir: str | os.PathLike[str] | None = None,
                 versions: bool = False) -> list[InstanceCheck]:
    """Validate ``config`` (a TOML path, or ``None`` for the built-in ``local`` instance) and
    resolve every instance, all at once (one worker thread per instance, at most 16). Without
    ``versions`` nothing is started (the binary is what the command line names); with it each
    driver's ``diagnose`` hook runs (``<binary> --version``, login state). Raises
    :class:`ConfigError` for a malformed file or table."""
    from paddock.drivers import BUILT_IN_DRIVERS

    cfg: RuntimeConfig = load_config(None if config is None else Path(config))
    root = Path(state_dir if state_dir is not None else os.environ.get("PADDOCK_STATE_DIR") or ".paddock").resolve()
    decoded_all = []
    for entry in cfg.instances:  # every table decodes before any is resolved: the first bad one raises
        spec = BUILT_IN_DRIVERS.get(entry.driver)
        try:
            decoded_all.append((entry, spec, None if spec is None else msgspec.convert(entry.table, spec.config_type)))
        except msgspec.ValidationError as exc:
            raise ConfigError(cfg.path, issue_from(exc, entry.instance_id)) from None
    if not decoded_all:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(decoded_all)), thread_name_prefix="paddock-check") as pool:
        return list(pool.map(lambda item: _check_one(*item, root=root, versions=versions), decoded_all))


def _check_one(entry: InstanceEntry, spec: DriverSpec | None, decoded: Any, *, root: Path, versions: bool) -> InstanceCheck:
    """One instance of :func:`check_config` (a worker thread)."""
    from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext
    from paddock.drivers._access import ModelAccess, model_access

    if spec is None:
        return InstanceCheck(id=entry.instance_id, driver=entry.driver, ok=False,
                             reason=f"unknown driver {entry.driver!r}; known drivers: {', '.join(sorted(BUILT_IN_DRIVERS))}")
    home = _home(root, entry.instance_id, getattr(decoded, "home", None))
    with tempfile.TemporaryDirectory(prefix="paddock-check-") as scratch:
        env = build_env(home=Path(scratch), configured=decoded.env, pass_env=decoded.pass_env)
    env.update(_homes(home))
    env.update(decoded.env)
    shown: dict[str, str] = {}
    reason: str | None = None
    try:
        access = model_access(decoded, os.environ)
    except LookupError as exc:
        access = None
        reason = str(exc)
    if access is not None:
        shown = {k: v for k, v in (("endpoint", access.endpoint), ("model", access.model)) if v}
        if access.api_key:
            shown["api_key"] = "***"
    ctx = InstanceContext(instance_id=entry.instance_id, driver=entry.driver, config=decoded, home=str(home),
                          env=env, state_dir=str(root),
                          # No adapter is built from this context: nothing emits.
                          hub=cast("HubHandle", None), access=access if access is not None else ModelAccess())
    if reason is None and spec.probe is not None:
        reason = spec.probe(ctx)
    report: dict[str, Any] = {}
    if versions and spec.diagnose is not None and reason is None:
        # A diagnose hook may run `<binary> --version`, and some CLIs write their home on any
        # run (codex): give that run a scratch home so the check creates nothing.
        with tempfile.TemporaryDirectory(prefix="paddock-check-") as scratch:
            quiet = msgspec.structs.replace(ctx, env={**env, **_homes(Path(scratch))})
            try:
                report = spec.diagnose(quiet)
            except Exception as exc:  # a report, never a crash
                reason = f"cannot inspect the binary: {exc!r}"
    command = None
    if spec.command is not None and reason is None:
        try:
            command = spec.command(ctx)
        except LookupError as exc:
            reason = str(exc)
    if reason is None and not report and command is None:
        # A driver with no command hook (opencode): its configured binary or pinned peer, found
        # the way its probe finds it (no process).
        from paddock.drivers import BinaryLocation, find_binary

        found = find_binary(getattr(decoded, "binary", None), peer=entry.driver, env=env)
        if isinstance(found, BinaryLocation):
            report = {"binary": found.path, "source": found.source}
    return InstanceCheck(id=entry.instance_id, driver=entry.driver, ok=reason is None, reason=reason,
                         home=str(home), binary=report.get("binary") or (command[0] if command else None),
                         source=report.get("source"), command=command, model=shown,
                         mcp_servers=[f"{m.name} ({getattr(m, 'transport', 'stdio')})"
                                      for m in entry.handoff.mcp_servers],
                         preamble=len(entry.handoff.preamble) if entry.handoff.preamble is not None else None,
                         env=sorted(decoded.env), approval_rules=len(entry.handoff.approval_rules))
