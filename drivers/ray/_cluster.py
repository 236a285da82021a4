"""Joining a Ray cluster from the host, once per process, and what ``paddock doctor`` says of
it before anything is placed (docs/architecture.md, "Placement on a Ray cluster")."""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

from paddock.contract import DriverError, OperationTimeout, PaddockError

from ._placement import RayPlacement

__all__ = ["cluster_status", "connect", "unreachable"]

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class _Join:
    """One ``ray.init`` in flight on its own thread (it takes no timeout of its own)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.done = threading.Event()
        self.error: str | None = None


_connect_lock = threading.Lock()
_join: _Join | None = None  # the join this process started through connect(), once started


def connect(placement: RayPlacement, timeout: float) -> None:
    """Join the Ray cluster of ``placement`` once per host process, within ``timeout`` seconds
    (thread: any). Raises :class:`OperationTimeout` ("joining the Ray cluster at ...") when the
    join does not finish in time (it goes on in the background; a later call waits for it
    again), :class:`DriverError` when it cannot join; a host joins one cluster at a time."""
    import ray

    global _join
    with _connect_lock:
        join = _join
        in_flight = join is not None and not join.done.is_set()
        if join is not None and join.address != placement.address and (in_flight or ray.is_initialized()):
            raise DriverError("ray", None, f"this host has joined the Ray cluster at {join.address!r}; "
                                           f"one host process joins one cluster, not also {placement.address!r}")
        if not in_flight and ray.is_initialized():
            return  # joined by us for another instance, or by the host application itself
        if join is None or not in_flight:
            # Trap: ray.init retries an address that does not answer for minutes; ask it first.
            silent = unreachable(placement.address, min(3.0, max(0.1, timeout)))
            if silent is not None:
                raise DriverError("ray", None, f"could not join the Ray cluster at {placement.address!r}: {silent}")
            join = _join = _Join(placement.address)
            threading.Thread(target=_run_join, args=(join, placement), daemon=True,
                             name="paddock-ray-join").start()
    if not join.done.wait(max(0.0, timeout)):
        raise OperationTimeout(f"joining the Ray cluster at {placement.address!r}", timeout)
    if join.error is not None:
        raise DriverError("ray", None, f"could not join the Ray cluster at {placement.address!r}: {join.error}")


def _run_join(join: _Join, placement: RayPlacement) -> None:
    """``ray.init`` for ``join`` (thread: its own, so that the caller's wait is bounded; off the
    main thread Ray also leaves the host's SIGTERM handler alone)."""
    import ray
    from ray._private import ray_constants

    kwargs: dict[str, Any] = {"address": placement.address, "namespace": placement.namespace,
                              "log_to_driver": False, "configure_logging": False}
    node_ip = placement.node_ip_address
    loopback = _loopback_cluster(placement.address)
    if loopback and node_ip is None:
        node_ip = "127.0.0.1"
    if node_ip and not placement.address.startswith("ray://"):
        kwargs["_node_ip_address"] = node_ip
    _quiet_sigterm_warning()
    # Trap: ray.init rewrites a bootstrap address of 127.0.0.1/localhost/::1 into this machine's
    # outward address (services.canonicalize_bootstrap_address -> resolve_ip_for_localhost ->
    # get_node_ip_address) unless ray_constants.ENABLE_RAY_CLUSTER is off, which Ray reads from
    # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER once, at its import. A cluster bound to loopback only has
    # nothing there, and ray.init waits for a GCS at that address for good. So for such a
    # cluster the flag is off for the join (it is read again only before a node exists).
    restore = ray_constants.ENABLE_RAY_CLUSTER
    try:
        if loopback:
            ray_constants.ENABLE_RAY_CLUSTER = False
        ray.init(**kwargs)
    except Exception as exc:
        join.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = restore
        join.done.set()


def _loopback_cluster(address: str) -> bool:
    """Whether ``address`` names a cluster bound to loopback only: a loopback host whose port
    does not also answer at the outward address Ray would rewrite it to (a cluster started
    without a loopback node address listens on every interface and registered its nodes under
    the outward address: Ray's own rewrite is right for it)."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if address.startswith("ray://") or not sep or not port.isdigit() or host.strip("[]") not in _LOOPBACK:
        return False
    from ray._private.services import node_ip_address_from_perspective

    try:
        outward = node_ip_address_from_perspective()
    except Exception:
        return True
    if outward in _LOOPBACK or outward.startswith("127."):
        return True
    return unreachable(f"{outward}:{port}", 0.5) is not None


def _quiet_sigterm_warning() -> None:
    """Ray warns on every ``ray.init`` off the main thread that it set no SIGTERM handler: that
    is the point here, and a library does not print."""
    logger = logging.getLogger("ray._private.worker")
    if not any(isinstance(f, _NoSigtermWarning) for f in logger.filters):
        logger.addFilter(_NoSigtermWarning())


class _NoSigtermWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("SIGTERM handler is not set")


def unreachable(address: str, timeout: float = 3.0) -> str | None:
    """Why ``host:port`` (or ``ray://host:port``) takes no TCP connection within ``timeout``
    seconds, or ``None`` (also for ``"auto"``, which Ray resolves itself)."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        return f"nothing answers at {host}:{port} ({exc.strerror or exc})"
    return None


def cluster_status(placement: RayPlacement, timeout: float = 10.0) -> str:
    """For ``paddock doctor`` before anything is placed: whether the cluster answers and how many
    of its live nodes fit the placement (joins the cluster within ``timeout``; places nothing).
    Never raises."""
    started = time.monotonic()
    try:
        connect(placement, timeout)
        import ray

        alive = [n for n in ray.nodes() if n.get("Alive")]
    except PaddockError as exc:
        return f"unreachable: {exc}"
    except Exception as exc:
        return f"unreachable: {exc} (after {time.monotonic() - started:.1f} s)"
    fits = [n for n in alive
            if all(n.get("Resources", {}).get(k, 0.0) >= v for k, v in placement.resources.items())
            and all(n.get("Labels", {}).get(k) == v for k, v in placement.label_selector.items())]
    return f"not placed; cluster reachable, {len(alive)} live node(s), {len(fits)} fit the placement"
