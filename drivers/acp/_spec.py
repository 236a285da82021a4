"""The registry record of an ACP flavor."""

from __future__ import annotations

from typing import Any

from paddock.contract import ProviderAdapter
from paddock.drivers._registry import DriverSpec, InstanceContext, binary_version, resolve_binary

from ._adapter import AcpAdapter
from ._capabilities import base_capabilities
from ._flavor import AcpFlavor

__all__ = ["acp_driver_spec"]


def acp_driver_spec(flavor: AcpFlavor) -> DriverSpec:
    """The registry record of ``flavor``: its config type, an :class:`AcpAdapter` factory, its
    probe and its capabilities before start-up."""
    caps = base_capabilities(client_fs=flavor.client_fs, client_terminal=flavor.client_terminal)
    if flavor.capability_overrides is not None:
        caps = flavor.capability_overrides(caps)

    def create(ctx: InstanceContext) -> ProviderAdapter:
        return AcpAdapter(ctx, flavor)

    def diagnose(ctx: InstanceContext) -> dict[str, Any]:
        binary = flavor.command(ctx)[0]
        path, _ = resolve_binary(binary, ctx.env)
        method = getattr(ctx.config, "auth_method", None) or flavor.auth_method
        auth = (
            f"authenticate with method {method!r} at session start"
            if method
            else "no authenticate call (the agent advertises its own auth methods at initialize)"
        )
        return {"binary": path or binary, "version": binary_version([path or binary], ctx.env), "auth": auth}

    return DriverSpec(
        kind=flavor.kind,
        config_type=flavor.config_type,
        create=create,
        probe=flavor.probe,
        capabilities=caps,
        diagnose=diagnose,
    )
