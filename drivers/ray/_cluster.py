"""Joining a Ray cluster from the host, once per process, and what ``paddock doctor`` says of
it before anything is placed (docs/architecture.md, "Placement on a Ray cluster")."""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any

from paddock.contract import DriverError

from ._placement import RayPlacement

__all__ = ["cluster_status", "connect"]

_connect_lock = threading.Lock()
_joined: str | None = None  # the cluster address this process joined through connect()


def connect(placement: RayPlacement) -> None:
    """Join the Ray cluster of ``placement`` once per host process (thread: any). Raises
    :class:`DriverError` when it cannot; a host joins one cluster at a time."""
    import ray

    global _joined
    with _connect_lock:
        if ray.is_initialized():
            if _joined is not None and _joined != placement.address:
                raise DriverError("ray", None, f"this host has joined the Ray cluster at {_joined!r}; "
                                               f"one host process joins one cluster, not also {placement.address!r}")
            return  # joined by us for another instance, or by the host application itself
        # Trap: ray.init retries an address that does not answer for minutes; ask it first.
        silent = _unreachable(placement.address)
        if silent is not None:
            raise DriverError("ray", None, f"could not join the Ray cluster at {placement.address!r}: {silent}")
        kwargs: dict[str, Any] = {"address": placement.address, "namespace": placement.namespace,
                                  "log_to_driver": False, "configure_logging": False}
        if placement.node_ip_address and not placement.address.startswith("ray://"):
            kwargs["_node_ip_address"] = placement.node_ip_address
        # Trap: ray.init replaces the main thread's SIGTERM handler with its own sys.exit; the
        # host's own handling (paddock's exit_on_signals, or the host's) is put back.
        main = threading.current_thread() is threading.main_thread()
        sigterm = signal.getsignal(signal.SIGTERM) if main else None
        try:
            ray.init(**kwargs)
        except Exception as exc:
            raise DriverError("ray", None, f"could not join the Ray cluster at {placement.address!r}: {exc}") from None
        finally:
            if main and sigterm is not None:
                signal.signal(signal.SIGTERM, sigterm)
        _joined = placement.address


def _unreachable(address: str, timeout: float = 3.0) -> str | None:
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


def cluster_status(placement: RayPlacement) -> str:
    """For ``paddock doctor`` before anything is placed: whether the cluster answers and how many
    of its live nodes fit the placement (joins the cluster; places nothing). Never raises."""
    try:
        connect(placement)
        import ray

        alive = [n for n in ray.nodes() if n.get("Alive")]
    except Exception as exc:
        return f"unreachable: {exc}"
    fits = [n for n in alive
            if all(n.get("Resources", {}).get(k, 0.0) >= v for k, v in placement.resources.items())
            and all(n.get("Labels", {}).get(k) == v for k, v in placement.label_selector.items())]
    return f"not placed; cluster reachable, {len(alive)} live node(s), {len(fits)} fit the placement"
