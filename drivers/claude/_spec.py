"""The registry record of the ``claude`` driver."""

from __future__ import annotations

import json

from paddock.contract import JsonObject, PaddockError, ProviderAdapter
from paddock.drivers._registry import DriverSpec, InstanceContext, binary_version
from paddock.supervisors import run_command

from ._adapter import ClaudeAdapter
from ._capabilities import CLAUDE_CAPABILITIES
from ._command import build_argv, child_env, locate
from ._config import ClaudeConfig

__all__ = ["claude_driver_spec", "locate", "probe"]


def probe(ctx: InstanceContext) -> str | None:
    """``None`` when the binary resolves, else why not. Cheap: spawns nothing."""
    try:
        where = locate(ctx)
    except Exception as exc:  # a probe never raises
        return f"cannot resolve the Claude Code binary: {exc!r}"
    return where if isinstance(where, str) else None


def diagnose(ctx: InstanceContext) -> JsonObject:
    """Binary (and where it was found), version and where credentials come from (never their values)."""
    where = locate(ctx)
    keys = [k for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN") if ctx.env.get(k)]
    if ctx.access.api_key:
        auth = "model key from the config (ANTHROPIC_API_KEY)"
    elif keys:
        auth = f"credentials from the instance env ({', '.join(keys)})"
    else:
        auth = "no key in the instance env; relies on a login stored under its CLAUDE_CONFIG_DIR"
    report: JsonObject = {"auth": auth}
    if isinstance(where, str):
        report.update(binary=None, reason=where)
    else:
        report.update(binary=where.path, source=where.source,
                      version=where.pinned or binary_version(list(where.argv), ctx.env),
                      login=login_state([*where.argv, "auth", "status"], child_env(ctx)))
    for key in ("endpoint", "model"):
        if getattr(ctx.access, key):
            report[key] = getattr(ctx.access, key)
    if ctx.access.api_key:
        report["api_key"] = "***"
    return report


def login_state(argv: list[str], env: dict[str, str]) -> str:
    """What ``claude auth status`` says of the login (JSON ``loggedIn``, ``authMethod``,
    ``apiKeySource``; exit 1 when not logged in), never a credential: ``logged in (<method>
    from <source>)``, ``not logged in``, or ``unknown (<why>)``."""
    try:
        result = run_command(argv, env=env, timeout=20)
    except PaddockError as exc:
        return f"unknown ({exc})"
    try:
        status = json.loads(result.stdout)
    except ValueError:
        return "unknown (claude auth status printed no JSON)"
    if not isinstance(status, dict) or not status.get("loggedIn"):
        return "not logged in"
    method, source = status.get("authMethod"), status.get("apiKeySource")
    how = f"{method} from {source}" if method and source else method or ""
    return f"logged in ({how})" if how else "logged in"


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
