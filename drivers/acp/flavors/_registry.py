"""``acp-registry``: any agent of the public ACP registry by id, with spec-only behaviour (the
generic adapter's defaults: no native modes, no authenticate call, client-boundary runtime
modes) and no code of its own.

Config: ``agent`` (the registry id, required) and ``registry`` (a registry document's file path
or URL; default: the snapshot shipped with Paddock). The command comes from the agent's
distribution (:func:`paddock.drivers.acp.registry_command`): the npx package installed at its
pinned version in the peers dir (``paddock peers install --registry ID``), ``uvx``, or a
configured ``binary`` for a binary archive Paddock does not fetch. The distribution's ``env``
is added; the common model keys are not mapped (a registry agent's variables are its own: set
them in ``env``).
"""

from __future__ import annotations

from typing import Any

from paddock.drivers.acp import AcpConfig, AcpFlavor
from paddock.drivers.acp import load_registry, registry_command

__all__ = ["REGISTRY_FLAVOR", "RegistryConfig"]


class RegistryConfig(AcpConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[instances.<id>]`` of an ``acp-registry`` instance: ``agent`` (registry id) and
    ``registry`` (file or URL of a registry document; ``None``: the shipped snapshot)."""

    agent: str
    registry: str | None = None


def _resolve(ctx: Any) -> tuple[list[str], dict[str, str]] | str:
    config = ctx.config
    try:
        agent = load_registry(config.registry).agent(config.agent)
    except (KeyError, ValueError) as exc:
        return str(exc.args[0] if isinstance(exc, KeyError) else exc)
    return registry_command(agent, ctx.env, binary=config.binary)


def _command(ctx: Any) -> list[str]:
    resolved = _resolve(ctx)
    if isinstance(resolved, str):
        raise LookupError(resolved)
    argv, _ = resolved
    return [*argv, *ctx.config.args]


def _env(ctx: Any) -> dict[str, str]:
    resolved = _resolve(ctx)
    return {} if isinstance(resolved, str) else resolved[1]


def _probe(ctx: Any) -> str | None:
    resolved = _resolve(ctx)
    return resolved if isinstance(resolved, str) else None


REGISTRY_FLAVOR = AcpFlavor(
    kind="acp-registry",
    command=_command,
    env=_env,
    probe=_probe,
    config_type=RegistryConfig,
)
