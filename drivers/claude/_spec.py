"""The registry record of the ``claude`` driver."""

from __future__ import annotations

from typing import Any

from paddock.contract import ProviderAdapter
from paddock.drivers._registry import DriverSpec, InstanceContext, binary_version

from ._adapter import ClaudeAdapter
from ._capabilities import CLAUDE_CAPABILITIES
from ._command import build_argv, locate
from ._config import ClaudeConfig

__all__ = ["claude_driver_spec", "locate", "probe"]


def probe(ctx: InstanceContext) -> str | None:
    """``None`` when the binary resolves, else why not. Cheap: spawns nothing."""
    try:
        where = locate(ctx)
    except Exception as exc:  # a probe never raises
        return f"cannot resolve the Claude Code binary: {exc!r}"
    return where if isinstance(where, str) else None


def diagnose(ctx: InstanceContext) -> dict[str, Any]:
    """Binary (and where it was found), version and where credentials come from (never their values)."""
    where = locate(ctx)
    keys = [k for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN") if ctx.env.get(k)]
    if ctx.access.api_key:
        auth = "model key from the config (ANTHROPIC_API_KEY)"
    elif keys:
        auth = f"credentials from the instance env ({', '.join(keys)})"
    else:
        auth = "no key in the instance env; relies on a login stored under its CLAUDE_CONFIG_DIR"
    report: dict[str, Any] = {"auth": auth}
    if isinstance(where, str):
        report.update(binary=None, reason=where)
    else:
        report.update(binary=where.path, source=where.source,
                      version=where.pinned or binary_version(list(where.argv), ctx.env))
    for key in ("endpoint", "model"):
        if getattr(ctx.access, key):
            report[key] = getattr(ctx.access, key)
    if ctx.access.api_key:
        report["api_key"] = "***"
    return report


def command(ctx: InstanceContext) -> list[str]:
    """The command line of a new session in approval-required mode (``<session>``: the id the
    driver picks per session)."""
    where = locate(ctx)
    if isinstance(where, str):
        raise LookupError(where)
    config = ctx.config
    assert isinstance(config, ClaudeConfig)
    return build_argv(where.path, config, permission_mode="default", model=ctx.config.model,
                      session_id="<session>", resume=False)


def _create(ctx: InstanceContext) -> ProviderAdapter:
    return ClaudeAdapter(ctx)


def claude_driver_spec() -> DriverSpec:
    """The ``claude`` driver: Claude Code in stream-json mode, one process per session."""
    return DriverSpec(kind="claude", config_type=ClaudeConfig, create=_create, probe=probe,
                      capabilities=CLAUDE_CAPABILITIES, diagnose=diagnose, command=command)
