"""Paddock: run coding-agent harnesses as supervised child processes behind one adapter contract,
and read what they do as one canonical event stream.

``from paddock import Runtime`` is the embedding API. Names are loaded lazily so that the lower
layers can import ``paddock.contract`` without importing the facade.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# A library leaves its log output to the host: with no handler configured, Python's last-resort
# handler would print every warning of a ``paddock.*`` logger on stderr.
logging.getLogger("paddock").addHandler(logging.NullHandler())

_LAZY = {
    "Runtime": "paddock._runtime",
    "CloseReport": "paddock._runtime",
    "InstanceInfo": "paddock._instances._table",
    "Subscription": "paddock.actors",
    "StateReader": "paddock._state._reader",
    "LogFollower": "paddock._state._reader",
}

__all__ = ["CloseReport", "InstanceInfo", "LogFollower", "Runtime", "StateReader", "Subscription", "__version__"]

if TYPE_CHECKING:
    from paddock.actors import Subscription as Subscription
    from paddock._instances._table import InstanceInfo as InstanceInfo
    from paddock._runtime import CloseReport as CloseReport
    from paddock._runtime import Runtime as Runtime
    from paddock._state._reader import LogFollower as LogFollower
    from paddock._state._reader import StateReader as StateReader


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'paddock' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
