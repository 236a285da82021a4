"""Drivers: the registry (``BUILT_IN_DRIVERS``) and one subpackage per kind of agent.

``paddock.drivers.acp`` is the shared ACP adapter plus small flavors, ``paddock.drivers.local`` the built-in agent,
``paddock.testing`` the scripted model server, recorder and replayer. A driver never imports the
facade (``paddock`` outside ``paddock.contract``) or another driver.

Names load on first use, so that agent programs living under ``drivers`` (``python -m
paddock.drivers.local``) start without importing the runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "BUILT_IN_DRIVERS",
    "BinaryLocation",
    "ModelAccess",
    "DriverConfig",
    "DriverSpec",
    "InstanceContext",
    "binary_version",
    "find_binary",
    "model_access",
    "resolve_binary",
]

if TYPE_CHECKING:
    from ._access import ModelAccess as ModelAccess
    from ._access import model_access as model_access
    from ._binary import BinaryLocation as BinaryLocation
    from ._binary import find_binary as find_binary
    from ._registry import DriverConfig as DriverConfig
    from ._registry import DriverSpec as DriverSpec
    from ._registry import InstanceContext as InstanceContext
    from ._registry import binary_version as binary_version
    from ._registry import resolve_binary as resolve_binary

    BUILT_IN_DRIVERS: dict[str, DriverSpec]


def _built_in() -> dict[str, DriverSpec]:
    from .acp import GENERIC_FLAVOR, acp_driver_spec
    from .acp.flavors import FLAVORS, OTHER_FLAVORS
    from .claude import claude_driver_spec
    from .codex import codex_driver_spec
    from .local import LOCAL_FLAVOR
    from .opencode import opencode_driver_spec

    # Every driver shipped with Paddock, by kind. Adding a driver is one line here (an ACP
    # flavor: one entry in paddock.drivers.acp.flavors.FLAVORS).
    return {
        "acp": acp_driver_spec(GENERIC_FLAVOR),
        "claude": claude_driver_spec(),
        "codex": codex_driver_spec(),
        "local": acp_driver_spec(LOCAL_FLAVOR),
        "opencode": opencode_driver_spec(),
        **{kind: acp_driver_spec(flavor) for kind, flavor in {**FLAVORS, **OTHER_FLAVORS}.items()},
    }


def __getattr__(name: str) -> Any:
    if name == "BUILT_IN_DRIVERS":
        value = _built_in()
        globals()[name] = value  # built once
        return value
    if name in ("ModelAccess", "model_access"):
        from . import _access

        return getattr(_access, name)
    if name in ("BinaryLocation", "find_binary"):
        from . import _binary

        return getattr(_binary, name)
    if name in __all__:
        from . import _registry

        return getattr(_registry, name)
    raise AttributeError(f"module 'paddock.drivers' has no attribute {name!r}")
