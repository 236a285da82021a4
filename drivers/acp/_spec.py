"""The registry record of an ACP flavor."""

from __future__ import annotations

from paddock.contract import ProviderAdapter
from paddock.drivers._registry import DriverSpec, InstanceContext

from ._adapter import AcpAdapter
from ._capabilities import base_capabilities
from ._flavor import AcpFlavor

__all__ = ["acp_driver_spec"]


def acp_driver_spec(flavor: AcpFlavor) -> DriverSpec:
    """The registry record of ``flavor``: its config type, an :class:`AcpAdapter` factory, its
    probe (binary resolution unless the flavor has its own), its ``doctor`` report (the agent's
    own binary and version), its command line and its capabilities before start-up."""
    caps = base_capabilities(client_fs=flavor.client_fs, client_terminal=flavor.client_terminal)
    if flavor.capability_overrides is not None:
        caps = flavor.capability_overrides(caps)

    def create(ctx: InstanceContext) -> ProviderAdapter:
        return AcpAdapter(ctx, flavor)

    return DriverSpec(
        kind=flavor.kind,
        config_type=flavor.config_type,
        create=create,
        probe=flavor.check,
        capabilities=caps,
        diagnose=flavor.diagnose,
        command=flavor.argv,
    )
