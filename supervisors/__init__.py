"""Generic supervision: Supervisor, child specs, restart policy, Scope, process-tree teardown,
the orphan guard and process leases. Knows nothing about agents.

Threads: a Supervisor is a pykka actor (daemon thread); every child reports its death through the
:class:`ChildContext` its ``ChildSpec.start`` factory received (see :class:`SupervisedActor`).
All processes are forked by one long-lived spawner thread (see :func:`spawn` for the Linux and
macOS orphan-guard guarantees).
"""

from ._child import ChildContext as ChildContext
from ._child import ChildSpec as ChildSpec
from ._child import ExitReason as ExitReason
from ._child import RestartType as RestartType
from ._child import SupervisedActor as SupervisedActor
from ._child import request_shutdown as request_shutdown
from ._child import tell_urgent as tell_urgent
from ._confine import Confinement as Confinement
from ._confine import landlock_abi as landlock_abi
from ._confine import set_landlock_probe as set_landlock_probe
from ._errors import map_exceptions as map_exceptions
from ._halted import halted as halted
from ._halted import hung_reason as hung_reason
from ._halted import limit_reason as limit_reason
from ._leases import Lease as Lease
from ._limits import LIMITS_VAR as LIMITS_VAR
from ._limits import LimitsInfo as LimitsInfo
from ._limits import ResourceLimits as ResourceLimits
from ._limits import describe_limits as describe_limits
from ._limits import limits_mechanism as limits_mechanism
from ._leases import LeaseStore as LeaseStore
from ._leases import SweepReport as SweepReport
from ._leases import argv_hash as argv_hash
from ._leases import sweep_leases as sweep_leases
from ._run import CommandOutput as CommandOutput
from ._run import CommandResult as CommandResult
from ._run import run_command as run_command
from ._run import run_short as run_short
from ._scope import Scope as Scope
from ._scope import ProxyCache as ProxyCache
from ._scope import close_all_scopes as close_all_scopes
from ._scope import exit_on_signals as exit_on_signals
from ._spawn import SpawnRequest as SpawnRequest
from ._spawn import resolve_executable as resolve_executable
from ._spawn import spawn as spawn
from ._supervisor import ChildInfo as ChildInfo
from ._supervisor import RestartLimitExceeded as RestartLimitExceeded
from ._supervisor import Strategy as Strategy
from ._supervisor import Supervisor as Supervisor
from ._supervisor import SupervisorOptions as SupervisorOptions
from ._teardown import TeardownReport as TeardownReport
from ._teardown import kill_tree as kill_tree
from ._teardown import snapshot_tree as snapshot_tree
from ._teardown import teardown as teardown

__all__ = [
    "LIMITS_VAR",
    "ChildContext",
    "ChildInfo",
    "ChildSpec",
    "CommandOutput",
    "CommandResult",
    "Confinement",
    "ExitReason",
    "Lease",
    "ProxyCache",
    "LeaseStore",
    "LimitsInfo",
    "ResourceLimits",
    "RestartLimitExceeded",
    "RestartType",
    "Scope",
    "SpawnRequest",
    "Strategy",
    "SupervisedActor",
    "Supervisor",
    "SupervisorOptions",
    "SweepReport",
    "TeardownReport",
    "argv_hash",
    "close_all_scopes",
    "describe_limits",
    "exit_on_signals",
    "halted",
    "hung_reason",
    "kill_tree",
    "landlock_abi",
    "limit_reason",
    "limits_mechanism",
    "map_exceptions",
    "request_shutdown",
    "resolve_executable",
    "run_command",
    "run_short",
    "set_landlock_probe",
    "snapshot_tree",
    "spawn",
    "sweep_leases",
    "teardown",
    "tell_urgent",
]
