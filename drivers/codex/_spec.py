"""The registry record of the ``codex`` driver."""

from __future__ import annotations


from paddock.contract import ConfigError, JsonObject, PaddockError
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


def diagnose(ctx: InstanceContext) -> JsonObject:
    """Binary, version and where credentials come from (never their values)."""
    found = find_binary(ctx.config.binary, peer="codex", env=ctx.env)
    if not isinstance(found, BinaryLocation):
        return {"binary": ctx.config.binary or "codex", "version": None, "auth": "unknown"}
    report: JsonObject = {"binary": found.path, "version": binary_version(list(found.argv), ctx.env)}
    if ctx.access.api_key:
        report["auth"] = "the instance's api key, passed to its model provider"
    else:
        report["auth"] = "no key configured; relies on a login stored in its CODEX_HOME (auth.json)"
        report["login"] = login_state(ctx, list(found.argv))
    return report


def login_state(ctx: InstanceContext, argv: list[str]) -> str:
    """What ``codex login status`` says of the login in the instance's ``CODEX_HOME`` (exit 0
    "Logged in using ...", exit 1 "Not logged in"), never a credential."""
    from paddock.supervisors import run_command

    from ._process import codex_home_of

    home, _ = codex_home_of(ctx)
    if not home.exists():
        return "not logged in (no CODEX_HOME yet)"
    try:
        result = run_command([*argv, "login", "status"], env={**ctx.env, "CODEX_HOME": str(home)}, timeout=20)
    except PaddockError as exc:
        return f"unknown ({exc})"
    said = [line for line in (result.stdout + result.stderr).splitlines() if "logged in" in line.lower()]
    if result.returncode != 0 or not said:
        return "not logged in"
    return said[-1].strip().lower().replace("logged in using", "logged in with")


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
