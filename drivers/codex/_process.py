"""The app-server process of a codex instance: its ``CODEX_HOME`` (or shadow home), its
``config.toml``, its environment and command line (:func:`process_spec`).

Thread: the caller's (the adapter's start, under its start lock).
"""

from __future__ import annotations

import os
from pathlib import Path

from paddock.actors import ProcessSpec
from paddock.contract import DriverError
from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._registry import InstanceContext

from ._config import CodexConfig
from ._home import API_KEY_VAR, build_config, prepare_home, write_config

__all__ = ["codex_home_of", "process_spec"]

_PRIVATE_DIRS = (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                 ("XDG_STATE_HOME", ".local/state"), ("XDG_CACHE_HOME", ".cache"), ("TMPDIR", "tmp"))


def _config(ctx: InstanceContext) -> CodexConfig:
    config = ctx.config
    assert isinstance(config, CodexConfig)
    return config


def codex_home_of(ctx: InstanceContext) -> tuple[Path, Path | None]:
    """``(CODEX_HOME, main home or None)`` of an instance: the shadow and the main home it
    shadows, or ``<instance home>/codex`` alone."""
    config = _config(ctx)
    if config.shadow_home:
        return Path(os.path.abspath(os.path.expanduser(config.shadow_home))), Path(ctx.home)
    return Path(ctx.home) / "codex", None


def _child_env(ctx: InstanceContext, codex_home: Path, main_home: Path | None) -> dict[str, str]:
    """Create ``CODEX_HOME`` (or the shadow), write ``config.toml``, and return the child env.
    Raises :class:`ConfigError` for a refused shadow home."""
    home = prepare_home(codex_home, main_home)
    access = ctx.access
    data = build_config(
        endpoint=access.base_url("/v1"), has_key=access.api_key is not None, model=access.model,
        sqlite_home=str(main_home) if main_home is not None else None, overrides=_config(ctx).config,
    )
    write_config(home, data)
    env = dict(ctx.env)
    env["CODEX_HOME"] = str(home)
    if main_home is not None and env.get("HOME") == str(ctx.home):
        # With a shadow home the instance's `home` is the MAIN Codex home, shared with other
        # instances: give the process (and the commands it runs) a private HOME instead.
        private = home / ".home"
        for key, sub in _PRIVATE_DIRS:
            path = private / sub if sub else private
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
            env[key] = str(path)
    if access.api_key is not None:
        env[API_KEY_VAR] = access.api_key
    env.setdefault("RUST_LOG", "warn")
    return env


def process_spec(ctx: InstanceContext) -> ProcessSpec:
    """The app-server's spec: home and config written, binary found (:class:`DriverError` when
    it is not)."""
    config = _config(ctx)
    codex_home, main_home = codex_home_of(ctx)
    env = _child_env(ctx, codex_home, main_home)
    found = find_binary(config.binary, peer="codex", env=ctx.env)
    if not isinstance(found, BinaryLocation):
        raise DriverError("codex", ctx.instance_id, f"cannot start the app-server: {found}")
    return ProcessSpec(
        argv=(*found.argv, *config.args, "app-server"), env=env, cwd=str(codex_home),
        name=f"{ctx.instance_id}:codex-app-server", owner=ctx.instance_id, lease_dir=ctx.state_dir,
        confinement=ctx.confinement,
        shutdown_timeout=config.shutdown_timeout,
        # The app-server writes (and flushes) one line per delta: read them in batches.
        read_coalesce=config.read_coalesce,
    )
