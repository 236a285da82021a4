"""The registry record of the ``claude`` driver."""

from __future__ import annotations

from typing import Any

from paddock.contract import ProviderAdapter
from paddock.drivers._registry import DriverSpec, InstanceContext, binary_version, resolve_binary

from ._adapter import ClaudeAdapter
from ._capabilities import CLAUDE_CAPABILITIES
from ._config import ClaudeConfig

__all__ = ["claude_driver_spec", "probe"]


def probe(ctx: InstanceContext) -> str | None:
    """``None`` when the configured binary resolves on the child's PATH (or as a path), else why
    not. Cheap: spawns nothing."""
    try:
        _, reason = resolve_binary(ctx.config.binary, ctx.env)
    except Exception as exc:  # a probe never raises
        return f"cannot resolve the Claude Code binary: {exc!r}"
    return reason


def diagnose(ctx: InstanceContext) -> dict[str, Any]:
    """Binary, version and where credentials come from (never their values)."""
    path, _ = resolve_binary(ctx.config.binary, ctx.env)
    keys = [k for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN") if ctx.env.get(k)]
    auth = (
        f"credentials from the instance env ({', '.join(keys)})"
        if keys
        else "no key in the instance env; relies on a login stored under its CLAUDE_CONFIG_DIR"
    )
    return {"binary": path or ctx.config.binary, "version": path and binary_version([path], ctx.env), "auth": auth}


def _create(ctx: InstanceContext) -> ProviderAdapter:
    return ClaudeAdapter(ctx)


def claude_driver_spec() -> DriverSpec:
    """The ``claude`` driver: Claude Code in stream-json mode, one process per session."""
    return DriverSpec(kind="claude", config_type=ClaudeConfig, create=_create, probe=probe,
                      capabilities=CLAUDE_CAPABILITIES, diagnose=diagnose)
