"""Flavors: the few hooks that differ between ACP agents, as one plain record each.

A flavor names how to spawn its agent, which ``authenticate`` method to call, which capability
flags differ from what ``initialize`` negotiates (each with a comment naming the protocol fact),
what each runtime mode answers without asking the host, which native mode implements each
runtime mode, and how long to wait for evidence that a turn started before cancelling it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping

import msgspec

from paddock.contract import Capabilities
from paddock.drivers._registry import InstanceContext

from ._config import AcpConfig
from ._permissions import DEFAULT_AUTO_ALLOW

__all__ = ["AcpFlavor", "GENERIC_FLAVOR"]


class AcpFlavor(msgspec.Struct, frozen=True, kw_only=True):
    """One kind of ACP agent. Hooks take the instance's :class:`~paddock.drivers.InstanceContext`
    and run on the caller's thread (``command``/``env`` on the instance's root supervisor thread).

    - ``kind``: the driver kind (also the ``driver`` of its resume cursors);
    - ``command(ctx) -> argv``: the spawn command (``ctx.config`` holds ``binary`` and ``args``);
    - ``env(ctx) -> dict``: keys added on top of the runtime-built child environment;
    - ``probe(ctx) -> reason | None``: why an instance cannot run (``None``: it can);
    - ``auth_method``: ``authenticate`` method id, or ``None`` for agents that need none;
    - ``capability_overrides(caps) -> caps``: applied after negotiation;
    - ``auto_allow``: runtime mode -> ACP ToolKinds answered "allow" without asking the host
      (``"*"``: all); every other permission request is asked;
    - ``native_modes``: runtime mode or ``plan`` -> the agent's mode id, set with
      ``session/set_mode`` when the agent advertises that mode;
    - ``cancel_guard``: seconds to wait (at most) for the first update of a turn before sending
      ``session/cancel``, for agents that drop a cancel arriving right after the prompt;
    - ``client_fs`` / ``client_terminal``: whether to advertise them by default.
    """

    kind: str
    command: Callable[[InstanceContext], list[str]]
    env: Callable[[InstanceContext], dict[str, str]] | None = None
    probe: Callable[[InstanceContext], str | None] | None = None
    auth_method: str | None = None
    capability_overrides: Callable[[Capabilities], Capabilities] | None = None
    auto_allow: Mapping[str, frozenset[str]] = msgspec.field(default_factory=lambda: dict(DEFAULT_AUTO_ALLOW))
    native_modes: Mapping[str, str] = {}
    cancel_guard: float = 1.0
    client_fs: bool = False
    client_terminal: bool = False
    config_type: type[AcpConfig] = AcpConfig


def _generic_command(ctx: InstanceContext) -> list[str]:
    config = ctx.config
    return [config.binary or "", *config.args]


def _generic_probe(ctx: InstanceContext) -> str | None:
    binary = ctx.config.binary
    if not binary:
        return "no `binary` configured"
    if os.sep in binary:
        path = os.path.expanduser(binary)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return None
        return f"binary {binary!r} does not exist or is not executable"
    if shutil.which(binary, path=ctx.env.get("PATH", os.defpath)) is None:
        return f"binary {binary!r} not found on PATH"
    return None


GENERIC_FLAVOR = AcpFlavor(
    kind="acp",
    command=_generic_command,
    probe=_generic_probe,
    # Runtime modes map to no native mode by default (configure `native_modes`); the runtime
    # enforces them at the client boundary through `auto_allow`:
    #   approval-required: asks for everything but read/search/think;
    #   auto-accept-edits: also allows edit/delete/move;
    #   full-access: allows everything, choosing allow_always when offered.
    # Like T3 Code, fs and terminal are not advertised unless configured.
)
"""Any ACP agent from a command line: ``binary`` + ``args``."""
