"""The shared ACP (Agent Client Protocol v1) adapter and its small per-agent flavors.

An instance is an :class:`AcpAdapter` built by a flavor's :class:`DriverSpec`; a flavor
(:class:`AcpFlavor`) holds only what differs between agents. ``GENERIC_FLAVOR`` runs any ACP
agent from a command line (the registry turns each flavor into a ``DriverSpec`` with ``drivers.acp_driver_spec``).
"""

from ._adapter import AcpAdapter as AcpAdapter
from ._config import AcpConfig as AcpConfig
from ._capabilities import base_capabilities as base_capabilities
from ._flavor import GENERIC_FLAVOR as GENERIC_FLAVOR
from ._flavor import AcpFlavor as AcpFlavor
from ._permissions import DEFAULT_AUTO_ALLOW as DEFAULT_AUTO_ALLOW

__all__ = [
    "DEFAULT_AUTO_ALLOW",
    "GENERIC_FLAVOR",
    "AcpAdapter",
    "AcpConfig",
    "AcpFlavor",
    "base_capabilities",
]
