"""Required capabilities: a host names what it needs of an instance by capability path, and the
runtime refuses a start that cannot satisfy it before any process starts.

A path names a flag, ``"<group>.<flag>"`` (``"approvals.commands"``, ``"turns.steer"``,
``"sessions.resume"``, ``"sessions.fork"``, ``"tools.mcp"``), or one member of a tuple flag,
``"<group>.<flag>.<member>"`` (``"tools.mcp_transports.http"``, ``"runtime_policy.modes.full-access"``).
An identity strength (``"identity.turn"``) is satisfied by ``strong`` or ``weak``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._capabilities import Capabilities
from ._errors import CapabilityUnsupportedError

__all__ = ["capability_on", "check_runtime_mode", "require_capabilities"]


def capability_on(caps: Capabilities, path: str) -> bool:
    """Whether ``path`` holds for ``caps``. Raises ``KeyError`` naming an unknown path."""
    parts = path.split(".", 2)
    if len(parts) < 2:
        raise KeyError(path)
    group = getattr(caps, parts[0], None)
    if group is None or parts[0].startswith("_") or not hasattr(group, parts[1]) or parts[1].startswith("_"):
        raise KeyError(path)
    value = getattr(group, parts[1])
    if len(parts) == 3:
        if not isinstance(value, tuple):
            raise KeyError(path)
        return parts[2] in value
    if isinstance(value, tuple):
        return bool(value)
    if isinstance(value, str):
        return value != "none"
    return bool(value)


def require_capabilities(caps: Capabilities, required: Iterable[str]) -> None:
    """Raise :class:`CapabilityUnsupportedError` naming the first path of ``required`` that
    ``caps`` does not hold (``KeyError`` for an unknown path). Pure."""
    for path in required:
        if not capability_on(caps, path):
            raise CapabilityUnsupportedError(path, "this instance cannot provide it (required by the host)")


def check_runtime_mode(caps: Capabilities, runtime_mode: str) -> None:
    """Raise :class:`CapabilityUnsupportedError` (capability ``runtime_policy.modes``) when the
    instance cannot honour ``runtime_mode``: never run a session in a mode it would break."""
    if runtime_mode not in caps.runtime_policy.modes:
        raise CapabilityUnsupportedError(
            "runtime_policy.modes",
            f"this agent cannot honour runtime mode {runtime_mode!r} (it honours: "
            f"{', '.join(caps.runtime_policy.modes) or 'none'})",
        )
