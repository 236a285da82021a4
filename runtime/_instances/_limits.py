"""An instance's resource limits as the runtime applies and reports them (issue 35).

The limits ride to every agent's orphan-guard shim in the instance's child environment
(``ResourceLimits.environment``); the shim holds the agent's whole tree to them. A placed
instance's agents run on a Ray node whose environment is built there: its limits are reported
as not enforced.
"""

from __future__ import annotations

from paddock.supervisors import LimitsInfo, ResourceLimits, limits_mechanism

__all__ = ["plan_limits"]


def plan_limits(limits: ResourceLimits, *, placed: bool) -> tuple[LimitsInfo, dict[str, str]]:
    """What ``InstanceInfo.limits`` reports, and the variables to add to the instance's child
    environment (empty when nothing here can enforce them). Thread: caller's."""
    mechanism, reason, cgroup = limits_mechanism()
    if placed:
        mechanism, reason = "none", "placed on Ray: the node builds the agent's environment (not enforced there yet)"
    info = LimitsInfo(memory_mb=limits.memory_mb, cpu_percent=limits.cpu_percent, processes=limits.processes,
                      mechanism=mechanism, reason=reason, cgroup=cgroup)
    return info, (limits.environment() if mechanism != "none" else {})
