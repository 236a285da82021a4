"""Generic supervision: Supervisor, child specs, restart policy, Scope, process-tree teardown,
the orphan guard and process leases. Knows nothing about agents."""
