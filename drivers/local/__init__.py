"""The built-in local agent (`python -m paddock.drivers.local`) and its ACP flavor.

The flavor is loaded on first use, so that the agent program (``paddock.drivers.local.agent``) starts
without importing the runtime's actors, pykka or psutil.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["LOCAL_FLAVOR", "LocalConfig"]

if TYPE_CHECKING:
    from ._flavor import LOCAL_FLAVOR as LOCAL_FLAVOR
    from ._flavor import LocalConfig as LocalConfig


def __getattr__(name: str) -> object:
    if name in __all__:
        from . import _flavor

        return getattr(_flavor, name)
    raise AttributeError(f"module 'paddock.drivers.local' has no attribute {name!r}")
