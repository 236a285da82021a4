"""Ray's failures of a call, as the ``PaddockError`` family (a host never sees a Ray type)."""

from __future__ import annotations

from paddock.contract import DriverError, OperationTimeout, PaddockError

__all__ = ["NodeLost", "unwrap"]


class NodeLost(PaddockError):
    """The node actor of a placed instance died (worker killed, node gone)."""


def unwrap(exc: BaseException, operation: str, limit: float, where: dict[str, str | None]) -> PaddockError:
    """Ray's failure of a call -> the ``PaddockError`` family (never a Ray type)."""
    import ray

    if isinstance(exc, PaddockError):
        return exc
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, PaddockError):
            return cause
        return DriverError(where.get("driver") or "ray", where.get("instance_id"),
                           f"{operation} failed on the node: {cause!r}")
    if isinstance(exc, (ray.exceptions.GetTimeoutError, TimeoutError)):
        return OperationTimeout(operation, limit, **where)
    if isinstance(exc, (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                        ray.exceptions.NodeDiedError, ray.exceptions.ActorUnschedulableError)):
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return NodeLost(f"the instance's Ray node actor is gone ({first})", **where)
    return DriverError(where.get("driver") or "ray", where.get("instance_id"), f"{operation} failed: {exc!r}")
