"""A real local Ray cluster for the placement tests: a head node and a second node on this
machine, each with its own custom resource and ``paddock-node`` label, every Ray process bound
to 127.0.0.1, usage stats off. Started once for the folder, torn down at its end with every
Ray daemon it started.

Without Ray (the ``ray`` extra) the modules that need a cluster are skipped; the config and sink tests still run.
"""

from __future__ import annotations

import importlib.util
import os

import psutil
import pytest

from tests.conftest import _living_descendants, fail_on_leaks, kill_described, leaked_since

HINT = "Ray is not installed: pip install 'agent-paddock[ray]'"

# Before Ray is imported: nothing leaves the machine, and "127.0.0.1" is not rewritten into the
# machine's outward address when this process joins the cluster.
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


def require_ray() -> None:
    """Skip the calling module, naming the extra, when Ray is not installed."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip(HINT, allow_module_level=True)


def _ray_process(proc: psutil.Process) -> bool:
    """Ray's own daemons and workers (idle workers stay pooled between tests)."""
    try:
        cmd = proc.cmdline()
    except psutil.Error:
        return False
    text = " ".join(cmd)
    return bool(cmd) and (cmd[0].startswith("ray::") or "/site-packages/ray/" in text)


@pytest.fixture(autouse=True)
def no_leaked_processes():
    """tests/conftest.py's check, less Ray's own processes (the cluster fixture accounts for
    those): an agent or shim left behind by a placed instance still fails the test."""
    before = set(_living_descendants())
    yield
    fail_on_leaks(before, grace=3.0, poll=0.05, ignore=_ray_process)


class TwoNodes:
    """The running cluster: ``address``, ``head`` and ``second`` (Ray node handles)."""

    def __init__(self, cluster, head, second) -> None:
        self.cluster = cluster
        self.address = cluster.address
        self.head = head
        self.second = second

    def placement(self, tmp_path, **ray_keys):
        """A ``placement`` table for this cluster with a node-local state dir under ``tmp_path``."""
        table = {"address": self.address, "node_ip_address": "127.0.0.1", "state_dir": str(tmp_path / "nodes")}
        table.update(ray_keys)
        return {"ray": table}


# Package scope: torn down after the folder's last test (session scope let the cluster live on
# through every later folder of a full run).
@pytest.fixture(scope="package")
def two_nodes():
    from ray.cluster_utils import Cluster

    before = set(_living_descendants())
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"head": 1}, "labels": {"paddock-node": "head"},
        "node_ip_address": "127.0.0.1", "include_dashboard": False,
    })
    head = cluster.head_node
    import ray

    # Join now, while the head's raylet is the only one on 127.0.0.1: a driver attached to the
    # second node's raylet would be killed with it when a test removes that node.
    ray.init(address=cluster.address, _node_ip_address="127.0.0.1", namespace="paddock",
             log_to_driver=False, configure_logging=False)
    second = cluster.add_node(num_cpus=1, resources={"second": 1}, labels={"paddock-node": "second"},
                              node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    try:
        yield TwoNodes(cluster, head, second)
    finally:
        ray.shutdown()
        cluster.shutdown()
        left = leaked_since(before, grace=10.0, poll=0.1)
        described = kill_described(left.values())
        assert not left, f"the Ray cluster left processes alive: {described}"
