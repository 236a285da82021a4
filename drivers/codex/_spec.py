"""The registry record of the ``codex`` driver."""

from __future__ import annotations

from typing import Any

from paddock.contract import ConfigError
from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.contract import ProviderAdapter
from paddock.drivers._registry import DriverSpec, InstanceContext, binary_version

from ._capabilities import CODEX_CAPABILITIES
from ._config import CodexConfig

__all__ = ["codex_driver_spec", "probe"]


def probe(ctx: InstanceContext) -> str | None:
    """``None`` when the app-server binary resolves (configured, pinned peer, or on PATH) and a
    configured shadow home would be accepted, else why not. Cheap: spawns nothing, writes
    nothing."""
    try:
        found = find_binary(ctx.config.binary, peer="codex", env=ctx.env)
        if not isinstance(found, BinaryLocation):
            return found
        from ._home import check_shadow
        from ._process import codex_home_of

        home, main = codex_home_of(ctx)
        if main is not None:
            check_shadow(home, main)
    except ConfigError as exc:
        return str(exc)
    except Exception as exc:  # a probe never raises
        return f"cannot resolve the codex binary: {exc!r}"
    return None


def diagnose(ctx: InstanceContext) -> dict[str, Any]:
    """Binary, version and where credentials come from (never their values)."""
    found = find_binary(ctx.config.binary, peer="codex", env=ctx.env)
    if not isinstance(found, BinaryLocation):
        return {"binary": ctx.config.binary or "codex", "version": None, "auth": "unknown"}
    if ctx.access.api_key:
        auth = "the instance's api key, passed to its model provider"
    else:
        auth = "no key configured; relies on a login stored in its CODEX_HOME (auth.json)"
    return {"binary": found.path, "version": binary_version(list(found.argv), ctx.env), "auth": auth}


def command(ctx: InstanceContext) -> list[str]:
    """The app-server's command line (``paddock config check``); spawns nothing."""
    found = find_binary(ctx.config.binary, peer="codex", env=ctx.env)
    if not isinstance(found, BinaryLocation):
        raise LookupError(found)
    return [*found.argv, *ctx.config.args, "app-server"]


def _create(ctx: InstanceContext) -> ProviderAdapter:
    from ._adapter import CodexAdapter

    return CodexAdapter(ctx)


def codex_driver_spec() -> DriverSpec:
    """The ``codex`` driver: the Codex app-server, one process per instance."""
    return DriverSpec(kind="codex", config_type=CodexConfig, create=_create, probe=probe,
                      capabilities=CODEX_CAPABILITIES, diagnose=diagnose, command=command)
