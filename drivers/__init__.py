"""Drivers: the registry (``BUILT_IN_DRIVERS``) and one subpackage per kind of agent.

``drivers.acp`` is the shared ACP adapter plus small flavors, ``drivers.local`` the built-in agent,
``drivers.testing`` the scripted model server, recorder and replayer. A driver never imports the
facade (``runtime`` outside ``runtime.contract``) or another driver.
"""

from ._registry import DriverConfig as DriverConfig
from ._registry import DriverSpec as DriverSpec
from ._registry import InstanceContext as InstanceContext
from ._registry import acp_driver_spec as acp_driver_spec
from ._registry import resolve_binary as resolve_binary
from .acp import GENERIC_FLAVOR as _GENERIC_ACP
from .local import LOCAL_FLAVOR as _LOCAL

BUILT_IN_DRIVERS: dict[str, DriverSpec] = {
    "acp": acp_driver_spec(_GENERIC_ACP),
    "local": acp_driver_spec(_LOCAL),
}
"""Every driver shipped with Paddock, by kind. Adding a driver is one line here."""

__all__ = [
    "BUILT_IN_DRIVERS",
    "DriverConfig",
    "DriverSpec",
    "InstanceContext",
    "acp_driver_spec",
    "resolve_binary",
]
