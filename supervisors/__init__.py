"""Generic supervision: Supervisor, child specs, restart policy, Scope, process-tree teardown,
the orphan guard and process leases. Knows nothing about agents."""

from ._run import CommandResult as CommandResult
from ._run import run_command as run_command

__all__ = ["CommandResult", "run_command"]
