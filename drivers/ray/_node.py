"""The node side of a placed instance: one Ray actor per instance incarnation.

:class:`NodeActor` is a plain class; the host wraps it with ``ray.remote`` (threaded,
``max_concurrency`` > 1, so an ``interrupt_turn`` never queues behind a slow ``start_session``
and the host's event pulls run beside control calls). On :meth:`NodeActor.setup` it:

1. sweeps the leases that dead incarnations left in the node's state folder (an actor whose
   worker was SIGKILLed left its agents to their shims, and a shim killed with it left its
   adopted processes: the sweep kills what still matches its recorded birth identity);
2. builds the instance's home and environment *on the node* from the config, with the host's
   own recipe (:attr:`NodeRecipe.prepare`), against the node's environment;
3. runs the driver's probe there (binary lookup, peers dir of the node);
4. creates the real adapter with a :class:`~._sink.NodeSink` in the ``HubHandle``'s place, so
   the adapter's whole supervisor subtree (process actors, the shim and its leases, session
   actors) lives in this worker;
5. starts the host-silence watchdog: when the host has not called for ``host_silence`` seconds
   (it died, and Ray's owner fate-sharing has not reached us), the instance is closed and the
   worker exits; the shims then SIGKILL whatever is left.

Thread: Ray runs each method on one of the actor's threads; every method is thread-safe.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import msgspec
import psutil

from paddock.actors import HubHandle
from paddock.contract import Capabilities, DriverError, InstanceNotFoundError, PaddockError
from paddock.drivers._access import ModelAccess
from paddock.drivers._registry import DriverConfig, DriverSpec, InstanceContext
from paddock.supervisors import sweep_leases

from ._placement import RayPlacement
from ._sink import NodeSink, Pulled, encode_pulled

__all__ = ["CONTROL_METHODS", "NodeActor", "NodeRecipe", "NodeReport", "Prepared"]

CONTROL_METHODS = frozenset({
    "start_session", "send_turn", "interrupt_turn", "fail_turn", "steer_turn", "respond_to_request",
    "respond_to_user_input", "stop_session", "stop_all", "read_thread", "rollback_thread",
    "fork_thread", "fork_native", "compact_thread", "models",
})
"""The adapter methods the host may call on the node (``NodeActor.control``)."""


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """An instance's home, child environment, model access and secrets, as built on a node."""

    home: str
    env: dict[str, str]
    access: ModelAccess
    secrets: list[str]
    reason: str | None = None
    """Why the instance cannot run there (e.g. ``api_key_env`` names a variable the node lacks)."""


class NodeRecipe(msgspec.Struct, frozen=True, kw_only=True):
    """What the host sends a node to build one instance. ``table`` is the instance's config
    table (credentials travel only as configured there, never in events); ``prepare(instance_id,
    config, state_dir)`` is the runtime's own home and environment recipe, run on the node."""

    instance_id: str
    driver: str
    table: dict[str, Any]
    placement: RayPlacement
    prepare: Callable[[str, DriverConfig, str], Prepared]


class NodeReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a node says once :meth:`NodeActor.setup` ran."""

    node_id: str
    node_ip: str
    pid: int
    state_dir: str
    created: float = 0.0
    """The worker process's start time (``psutil``'s ``create_time``): its identity with ``pid``."""
    home: str | None = None
    capabilities: Capabilities | None = None
    reason: str | None = None
    swept: int = 0
    """Leased processes of dead incarnations the start-up sweep killed on this node."""


def node_state_dir(placement: RayPlacement, node_id: str) -> str:
    """The node-local state folder of this host's placed instances (0700)."""
    base = placement.state_dir or os.path.join(os.path.expanduser("~"), ".local", "state", "paddock", "nodes")
    path = Path(base).expanduser() / node_id[:16]
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return str(path)


class NodeActor:
    """One placed instance on its node (see the module docstring)."""

    def __init__(self, recipe: NodeRecipe) -> None:
        self._recipe = recipe
        self._adapter: Any = None
        self._sink: NodeSink | None = None
        self._lock = threading.Lock()
        self._contact = time.monotonic()
        self._closing = False

    def setup(self) -> NodeReport:
        """Build the instance on this node (thread: a Ray actor thread)."""
        import ray  # present: this runs in a Ray worker

        from paddock.drivers import BUILT_IN_DRIVERS

        node_id = ray.get_runtime_context().get_node_id()
        node_ip = ray.util.get_node_ip_address()

        recipe = self._recipe
        state_dir = node_state_dir(recipe.placement, node_id)
        swept = len(sweep_leases(state_dir).killed)
        report = NodeReport(node_id=node_id, node_ip=node_ip, pid=os.getpid(), created=psutil.Process().create_time(),
                            state_dir=state_dir, swept=swept)
        spec: DriverSpec | None = BUILT_IN_DRIVERS.get(recipe.driver)
        if spec is None:
            return msgspec.structs.replace(report, reason=f"unknown driver {recipe.driver!r} on this node")
        config = msgspec.convert(recipe.table, spec.config_type)
        prepared = recipe.prepare(recipe.instance_id, config, state_dir)
        report = msgspec.structs.replace(report, home=prepared.home)
        sink = NodeSink(recipe.instance_id, prepared.secrets, max_events=recipe.placement.max_buffered_events)
        ctx = InstanceContext(
            instance_id=recipe.instance_id, driver=recipe.driver, config=config, home=prepared.home,
            env=dict(prepared.env), state_dir=state_dir, hub=cast(HubHandle, sink), access=prepared.access,
        )
        reason = prepared.reason or (spec.probe(ctx) if spec.probe is not None else None)
        if reason:
            return msgspec.structs.replace(report, reason=sink.mask(reason))
        try:
            adapter = spec.create(ctx)
        except PaddockError as exc:
            return msgspec.structs.replace(report, reason=sink.mask(str(exc)))
        with self._lock:
            self._sink = sink
            self._adapter = adapter
        threading.Thread(target=self._watch_host, name="paddock-node-watchdog", daemon=True).start()
        return msgspec.structs.replace(report, capabilities=adapter.capabilities())

    # host calls -----------------------------------------------------------------------------

    def control(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run one adapter method (``CONTROL_METHODS``) with the host's arguments and timeout.
        Raises the adapter's own ``PaddockError`` (Ray wraps it; the host unwraps it)."""
        self._contact = time.monotonic()
        if method not in CONTROL_METHODS:
            raise DriverError(self._recipe.driver, self._recipe.instance_id, f"{method!r} is not a control call")
        adapter = self._live()
        fn = getattr(adapter, method, None)
        if fn is None:
            raise DriverError(self._recipe.driver, self._recipe.instance_id, f"the adapter has no {method!r}")
        try:
            return fn(*args, **kwargs)
        except PaddockError as exc:  # it travels to the host: mask the instance's secrets first
            sink = self._sink
            if sink is not None:
                for name, value in list(vars(exc).items()):
                    if isinstance(value, str):
                        setattr(exc, name, sink.mask(value))
                exc.args = tuple(sink.mask(a) if isinstance(a, str) else a for a in exc.args)
            raise

    def capabilities(self) -> Capabilities:
        self._contact = time.monotonic()
        caps: Capabilities = self._live().capabilities()
        return caps

    def pull(self, max_events: int, wait: float) -> bytes:
        """The next batches (up to about ``max_events`` events, waiting up to ``wait`` s for the
        first) and the live sessions, encoded (``decode_pulled``). Also the host's heartbeat."""
        self._contact = time.monotonic()
        sink = self._sink
        if sink is None:
            return encode_pulled(Pulled(batches=[], sessions=[]))
        batches = sink.drain(max_events, wait)
        self._contact = time.monotonic()
        adapter = self._adapter
        sessions = adapter.list_sessions() if adapter is not None else []
        return encode_pulled(Pulled(batches=batches, sessions=sessions, buffered=sink.buffered))

    def close(self, timeout: float) -> bool:
        """Close the adapter (every session emits ``session.exited``; no process of the instance
        is left) within ``timeout``; the host drains the last events afterwards."""
        self._contact = time.monotonic()
        with self._lock:
            self._closing = True
            adapter = self._adapter
        if adapter is not None:
            adapter.close(timeout=timeout)
        return True

    def pid(self) -> int:
        return os.getpid()

    # -------------------------------------------------------------------------------------------

    def _live(self) -> Any:
        adapter = self._adapter
        if adapter is None or self._closing:
            raise InstanceNotFoundError(self._recipe.instance_id, "its node actor is not running",
                                        driver=self._recipe.driver)
        return adapter

    def _watch_host(self) -> None:
        silence = self._recipe.placement.host_silence
        while not self._closing:
            time.sleep(min(0.5, silence / 4))
            if time.monotonic() - self._contact > silence:
                self._host_gone()
                return

    def _host_gone(self) -> None:
        # The host stopped calling: it died (or lost the cluster). Ray kills an owner's actors
        # when it notices, but not before; and it reaps only direct children. Close what we
        # can in 1 s, then exit the worker: every shim sees its watchdog pipe close and
        # SIGKILLs its agent's tree.
        self._closing = True
        adapter = self._adapter
        if adapter is not None:
            closer = threading.Thread(target=adapter.close, kwargs={"timeout": 1.0}, daemon=True)
            closer.start()
            closer.join(1.5)
        os._exit(70)

