"""The registry record of the ``opencode`` driver."""

from __future__ import annotations

from typing import Any

from paddock.actors import http_available
from paddock.contract import ProviderAdapter
from paddock.drivers._binary import find_binary
from paddock.drivers._registry import DriverSpec, InstanceContext, binary_version

from ._capabilities import OPENCODE_CAPABILITIES
from ._config import OpencodeConfig

__all__ = ["opencode_driver_spec", "probe"]


def probe(ctx: InstanceContext) -> str | None:
    """``None`` when the instance can run: httpx is installed (``agent-paddock[opencode]``) and,
    in spawned mode, the binary resolves (configured, pinned in the peers dir, or on PATH).
    Cheap: spawns nothing, never contacts an external server, never raises."""
    try:
        missing = http_available()
        if missing is not None:
            return missing
        if getattr(ctx.config, "server_url", None) is not None:
            return None

        found = find_binary(ctx.config.binary, peer="opencode", env=ctx.env)
        return found if isinstance(found, str) else None
    except Exception as exc:  # a probe never raises
        return f"cannot resolve the OpenCode binary: {exc!r}"


def diagnose(ctx: InstanceContext) -> dict[str, Any]:
    """Binary (or server URL), version and how the model is reached (never a key or password)."""
    config = ctx.config
    assert isinstance(config, OpencodeConfig)
    access = ctx.access
    if access.endpoint:
        auth = f"provider 'paddock' at {access.base_url('/v1')}" + (" with an API key" if access.api_key else "")
    else:
        auth = "OpenCode's own providers (a login stored under the instance home)"
    if config.server_url is not None:
        password = "with a password" if config.password else "without a password"
        return {"binary": f"external server {config.server_url} ({password})", "version": None,
                "auth": "the external server's own providers"}

    found = find_binary(config.binary, peer="opencode", env=ctx.env)
    if isinstance(found, str):
        return {"binary": config.binary or "opencode", "version": None, "auth": auth}
    return {"binary": found.path, "version": binary_version(list(found.argv), ctx.env), "auth": auth}


def _create(ctx: InstanceContext) -> ProviderAdapter:
    from ._adapter import OpencodeAdapter

    return OpencodeAdapter(ctx)


def opencode_driver_spec() -> DriverSpec:
    """The ``opencode`` driver: ``opencode serve`` (or an external server) over HTTP + SSE."""
    return DriverSpec(kind="opencode", config_type=OpencodeConfig, create=_create, probe=probe,
                      capabilities=OPENCODE_CAPABILITIES, diagnose=diagnose)
