"""The built-in local agent (`python -m drivers.local`) and its ACP flavor."""

from ._flavor import LOCAL_FLAVOR as LOCAL_FLAVOR
from ._flavor import LocalConfig as LocalConfig

__all__ = ["LOCAL_FLAVOR", "LocalConfig"]
