"""Placement on a Ray cluster: a placed instance's real adapter runs in a Ray actor on a node,
and the runtime holds a proxy ``ProviderAdapter`` on the host (docs/architecture.md, "Placement
on a Ray cluster").

Importing this package does not import Ray; Ray is the optional extra ``agent-paddock[ray]``.
Without it a placed instance is listed as unavailable with a reason naming the extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paddock.contract import InstanceNotFoundError, ProviderAdapter
from paddock.drivers._registry import DriverConfig, DriverSpec, InstanceContext

from ._node import NodeRecipe, Prepared
from ._placement import EXTRA_HINT, RayPlacement, ray_missing

__all__ = ["EXTRA_HINT", "Prepared", "RayPlacement", "placed_spec", "ray_missing"]


def placed_spec(spec: DriverSpec, placement: RayPlacement, table: dict[str, Any],
                prepare: Callable[[str, DriverConfig, str], Prepared]) -> DriverSpec:
    """``spec`` placed on Ray: ``create(ctx)`` returns the host-side proxy (nothing is placed
    before the first session), ``probe`` says why Ray placement cannot work on this host.
    ``table`` is the instance's config table without ``placement``; ``prepare(instance_id,
    config, state_dir)`` builds the home and environment, and runs on the node."""

    def create(ctx: InstanceContext) -> ProviderAdapter:
        missing = ray_missing()
        if missing is not None:
            raise InstanceNotFoundError(ctx.instance_id, missing, driver=ctx.driver)
        from ._proxy import RayAdapter

        recipe = NodeRecipe(instance_id=ctx.instance_id, driver=ctx.driver, table=table,
                            placement=placement, prepare=prepare)
        config = ctx.config
        return RayAdapter(ctx, placement, recipe, spec.capabilities,
                          request_timeout=float(getattr(config, "request_timeout", 30.0)),
                          start_timeout=float(getattr(config, "start_timeout", 60.0)))

    def probe(ctx: InstanceContext) -> str | None:
        # The driver's own probe (binary, peers dir) runs on the node, at placement.
        return ray_missing()

    def diagnose(ctx: InstanceContext) -> dict[str, Any]:
        from ._cluster import cluster_status

        return {"ray": cluster_status(placement)}

    return DriverSpec(kind=spec.kind, config_type=spec.config_type, create=create, probe=probe,
                      capabilities=spec.capabilities, diagnose=diagnose, command=spec.command)
