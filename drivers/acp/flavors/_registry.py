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

from paddock.drivers._binary import BinaryLocation
from paddock.drivers._registry import InstanceContext
from paddock.drivers.acp import AcpConfig, AcpFlavor, RegistryLaunch, load_registry, registry_launch

__all__ = ["REGISTRY_FLAVOR", "RegistryConfig"]


class RegistryConfig(AcpConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[instances.<id>]`` of an ``acp-registry`` instance: ``agent`` (registry id) and
    ``registry`` (file or URL of a registry document; ``None``: the shipped snapshot)."""

    agent: str
    registry: str | None = None


def _resolve(ctx: InstanceContext) -> RegistryLaunch | str:
    config = ctx.config
    assert isinstance(config, RegistryConfig)
    try:
        agent = load_registry(config.registry).agent(config.agent)
    except KeyError as exc:
        return str(exc.args[0])
    except ValueError as exc:
        return str(exc)
    return registry_launch(agent, ctx.env, binary=config.binary)


def _locate(ctx: InstanceContext) -> BinaryLocation | str:
    launch = _resolve(ctx)
    return launch if isinstance(launch, str) else launch.location


def _command(ctx: InstanceContext) -> list[str]:
    launch = _resolve(ctx)
    if isinstance(launch, str):
        raise LookupError(launch)
    return [*launch.location.argv, *launch.args, *ctx.config.args]


def _env(ctx: InstanceContext) -> dict[str, str]:
    launch = _resolve(ctx)
    return {} if isinstance(launch, str) else dict(launch.env)


REGISTRY_FLAVOR = AcpFlavor(
    kind="acp-registry",
    command=_command,
    locator=_locate,
    env=_env,
    config_type=RegistryConfig,
)
