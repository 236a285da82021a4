"""Where a placed instance runs: the ``placement = { ray = {...} }`` table of an instance, merged
over ``[runtime] ray``, and the check that Ray is installed at all (docs/architecture.md,
"Placement on a Ray cluster")."""

from __future__ import annotations

import importlib.util

import msgspec

__all__ = ["EXTRA_HINT", "RayPlacement", "ray_missing"]

EXTRA_HINT = "pip install 'agent-paddock[ray]'"


class RayPlacement(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One instance's Ray placement.

    ``address``: the cluster (``"auto"``, ``"host:port"`` or ``"ray://host:port"``).
    ``resources``: custom resources the node actor claims (its node must offer them).
    ``label_selector``: node labels the node must carry (Ray's ``label_selector``);
    ``fallback_label_selectors``: the selectors to try in order when no live node matches it
    (Ray's ``fallback_strategy``), e.g. the head node once a worker node is gone.
    ``node_ip_address``: the address this host's Ray driver binds to (``"127.0.0.1"`` keeps it on
    loopback). ``state_dir``: the node-local state folder (leases, instance homes); default
    ``~/.local/state/paddock/nodes/<node id>`` on the node. ``host_silence``: seconds without a
    call from this host after which the node actor stops the instance and exits (the host died).
    ``max_buffered_events``: the node's event buffer; a full buffer makes emitters wait.
    ``restarts``/``period``: the node actor's restart budget (placements in ``period`` seconds).
    """

    address: str = "auto"
    resources: dict[str, float] = {}
    label_selector: dict[str, str] = {}
    fallback_label_selectors: list[dict[str, str]] = []
    node_ip_address: str | None = None
    namespace: str = "paddock"
    state_dir: str | None = None
    host_silence: float = 3.0
    max_buffered_events: int = 20_000
    restarts: int = 3
    period: float = 60.0

    def __post_init__(self) -> None:
        if not self.address:
            raise ValueError("key 'address': a cluster address, 'auto' or 'ray://host:port'")
        if self.host_silence < 1.0:
            raise ValueError("key 'host_silence': at least 1 second")
        if self.max_buffered_events < 100:
            raise ValueError("key 'max_buffered_events': at least 100")
        if any(v < 0 for v in self.resources.values()):
            raise ValueError("key 'resources': amounts are >= 0")


def ray_missing() -> str | None:
    """Why a Ray placement cannot work here (Ray is not installed), or ``None``. Imports nothing."""
    if importlib.util.find_spec("ray") is None:
        return f"placed on Ray, but Ray is not installed on this host ({EXTRA_HINT})"
    return None
