"""Joining a cluster from the host: a loopback cluster joined by a host that sets no Ray
environment variable, a cluster address that does not answer (or answers and says nothing), and
the node actor's worker gone when ``close()`` returns. The hosts that must not inherit this
process's Ray state run in a subprocess of their own."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from tests.ray.conftest import require_ray

require_ray()

from paddock import Runtime
from tests.runtime.conftest import run_turn, text_of

pytestmark = pytest.mark.slow


def _host(script: str, *args: str, timeout: float) -> dict:
    """Run ``script`` as a host process without RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER; its last
    stdout line is JSON."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    env["PYTHONPATH"] = os.getcwd()
    try:
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=env, text=True,
                             capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the host did not finish within {timeout} s: {exc.stdout!r}") from None
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


LOOPBACK_HOST = """
    import json, sys, tempfile, time
    from paddock import Runtime
    state = tempfile.mkdtemp()
    placement = {"ray": {"address": sys.argv[1], "state_dir": state + "/nodes", "resources": {"head": 0.01}}}
    with Runtime.open({"instances": {"p": {"driver": "local", "placement": placement}}}, state_dir=state + "/state") as rt:
        started = time.monotonic()
        rt.start_session("t", instance="p", cwd=state, timeout=30)
        took = time.monotonic() - started
        events = []
        with rt.subscribe(thread_id="t") as sub:
            turn = rt.send_turn("t", "@reply from a loopback cluster")
            while (ev := sub.get(timeout=30)) is not None:
                events.append(ev)
                if ev.type == "turn.completed":
                    break
        [info] = rt.instances()
    print(json.dumps({"took": took, "text": "".join(getattr(e, "delta", "") or "" for e in events),
                      "state": events[-1].state, "status": info.status, "ray": info.ray}))
"""


def test_a_loopback_cluster_is_joined_by_a_host_without_ray_environment_variables(two_nodes):
    assert two_nodes.address.startswith("127.0.0.1:")
    out = _host(LOOPBACK_HOST, two_nodes.address, timeout=45)
    assert out["state"] == "completed" and out["text"] == "from a loopback cluster", out
    assert out["status"] == "available" and out["ray"] == "alive", out
    assert out["took"] < 30, out


SILENT_HOST = """
    import json, socket, sys, tempfile, time
    from paddock import Runtime
    from paddock.contract import PaddockError
    silent = socket.create_server(("127.0.0.1", 0))  # takes connections, never says a word
    dead = socket.create_server(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()  # nothing listens there any more
    state = tempfile.mkdtemp()
    out = {}
    for name, port in (("dead", dead_port), ("silent", silent.getsockname()[1])):
        placement = {"ray": {"address": f"127.0.0.1:{port}", "state_dir": state + "/nodes"}}
        rt = Runtime.open({"instances": {"p": {"driver": "local", "placement": placement}}},
                          state_dir=f"{state}/{name}")
        [before] = rt.instances()
        started = time.monotonic()
        try:
            rt.start_session("t", instance="p", cwd=state, timeout=4)
            error = None
        except PaddockError as exc:
            error = [type(exc).__name__, str(exc)]
        took = time.monotonic() - started
        [after] = rt.instances()
        out[name] = {"error": error, "took": took, "before": [before.status, before.reason],
                     "after": [after.status, after.reason, after.ray]}
        rt.close(timeout=5)
    print(json.dumps(out), flush=True)
"""


def test_a_cluster_address_that_does_not_answer_fails_within_the_timeout_and_is_unavailable():
    out = _host(SILENT_HOST, timeout=60)
    dead, silent = out["dead"], out["silent"]
    # nothing listens: a typed error at once, and the instance is listed unavailable, saying why
    assert dead["error"][0] == "DriverError" and "nothing answers at 127.0.0.1" in dead["error"][1], dead
    assert dead["took"] < 4, dead
    for status, reason, *_ in (dead["before"], dead["after"]):
        assert status == "unavailable" and ("does not answer" in reason or "could not join" in reason.lower()), dead
    # something takes the connection and never answers: ray.init would wait for good; the call
    # gives up within its timeout (plus the transport margin) naming what it waited for
    assert silent["error"][0] == "OperationTimeout" and "joining the ray cluster at '127.0.0.1:" in silent["error"][1].lower(), silent
    assert silent["took"] < 4 + 5 + 1, silent
    assert silent["after"][0] == "unavailable" and "joining the ray cluster" in silent["after"][1].lower(), silent


def test_no_node_actor_worker_is_alive_when_close_returns(two_nodes, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    instances = {node: {"driver": "local", "placement": two_nodes.placement(tmp_path, resources={node: 0.01})}
                 for node in ("head", "second")}
    rt = Runtime.open({"instances": instances}, state_dir=tmp_path / "state")
    try:
        workers = []
        for node in instances:
            rt.start_session(node, instance=node, cwd=ws)
            assert text_of(run_turn(rt, node, "@reply up")[1]) == "up"
            info = next(i for i in rt.instances() if i.id == node)
            workers.append(psutil.Process(int(info.node.rsplit("pid ", 1)[1].rstrip(")"))))
    finally:
        rt.close(timeout=10)
    alive = [p.pid for p in workers if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"node actor workers alive after close() returned: {alive}"
