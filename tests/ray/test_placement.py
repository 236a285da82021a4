"""Instances placed on a real two-node Ray cluster (tests/ray/conftest.py): the same scenarios as
local instances (turns, approvals, interrupt, resume), isolation between nodes, and faults
(the node actor's worker SIGKILLed mid-turn, the second node removed, the host SIGKILLed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import msgspec
import psutil
import pytest

from tests.ray.conftest import require_ray

require_ray()

from paddock import Runtime
from paddock.contract import DriverError, InstanceNotFoundError
from tests.runtime.conftest import run_turn, text_of

pytestmark = pytest.mark.slow


def _open(two_nodes, tmp_path, instances, **runtime):
    return Runtime.open({"runtime": runtime, "instances": instances}, state_dir=tmp_path / "state")


def _node_of(rt, instance_id):
    info = next(i for i in rt.instances() if i.id == instance_id)
    return info


def _pid_of(info):
    return int(info.node.rsplit("pid ", 1)[1].rstrip(")"))


@pytest.mark.parametrize("node", ["head", "second"])
def test_turns_approvals_interrupt_and_resume_on_each_node(two_nodes, tmp_path, node):
    ws = tmp_path / "ws"
    ws.mkdir()
    instances = {"placed": {"driver": "local", "placement": two_nodes.placement(tmp_path, resources={node: 0.01})}}
    with _open(two_nodes, tmp_path, instances) as rt:
        [report] = rt.diagnose()  # before placement: the cluster, seen from the host
        assert report["placement"] == "ray" and report["node"] is None
        assert report["ray"] == "not placed; cluster reachable, 2 live node(s), 1 fit the placement", report
        rt.start_session("t1", instance="placed", cwd=ws, runtime_mode="approval-required")
        [report] = rt.diagnose()
        assert report["ray"] == "alive" and report["node"].startswith(
            (two_nodes.head if node == "head" else two_nodes.second).node_id[:12])
        info = _node_of(rt, "placed")
        expected = (two_nodes.head if node == "head" else two_nodes.second).node_id
        assert info.placement == "ray" and info.ray == "alive" and info.node.startswith(expected[:12]), info
        assert str(tmp_path / "nodes") in info.home  # the home was built on the node

        # a turn: the host's subscriber sees the node's events, stamped by the host's hub
        _, events = run_turn(rt, "t1", "@reply hello from a node")
        assert text_of(events) == "hello from a node"
        assert {e.instance_id for e in events} == {"placed"} and all(e.seq > 0 for e in events)
        assert [e.seq for e in events] == sorted(e.seq for e in events)

        # an approval travels host -> node and back
        answered = []

        def accept(event):
            answered.append(event.request_id)
            rt.respond_to_request("t1", event.request_id, "accept")

        _, events = run_turn(rt, "t1", "@run echo approved-on-node", on_request=accept)
        assert answered and events[-1].state == "completed"
        assert "approved-on-node" in "".join(getattr(e, "delta", "") or "" for e in events)

        # interrupt is not queued behind anything: the turn ends interrupted
        with rt.subscribe(thread_id="t1", types=["turn.completed"]) as sub:
            turn = rt.send_turn("t1", "@chunks 200\n@delay 0.05")
            rt.interrupt_turn("t1", turn.turn_id)
            done = sub.get(timeout=15)
        assert done.turn_id == turn.turn_id and done.state == "interrupted"

        # stop, then resume from the cursor on the same node
        rt.stop_session("t1")
        assert not rt.has_session("t1")
        session = rt.start_session("t1", instance="placed", cwd=ws, runtime_mode="approval-required")
        assert session.resumed
        _, events = run_turn(rt, "t1", "@reply-history")
        assert "3" in text_of(events) or "4" in text_of(events), text_of(events)
        assert rt.has_session("t1") and [s.thread_id for s in rt.list_sessions()] == ["t1"]


def test_two_instances_of_one_driver_on_two_nodes_are_isolated(two_nodes, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    instances = {
        "on-head": {"driver": "local", "env": {"ACCOUNT": "head-account"},
                    "placement": two_nodes.placement(tmp_path, resources={"head": 0.01})},
        "on-second": {"driver": "local", "env": {"ACCOUNT": "second-account"},
                      "placement": two_nodes.placement(tmp_path, resources={"second": 0.01})},
    }
    with _open(two_nodes, tmp_path, instances) as rt:
        seen = {}
        for inst in instances:
            rt.start_session(inst, instance=inst, cwd=ws)
            seen[inst] = {name: text_of(run_turn(rt, inst, f"@env {name}")[1]) for name in ("ACCOUNT", "HOME")}
        infos = {i.id: i for i in rt.instances()}
    assert seen["on-head"]["ACCOUNT"] == "head-account" and seen["on-second"]["ACCOUNT"] == "second-account"
    assert seen["on-head"]["HOME"] != seen["on-second"]["HOME"]
    for inst in instances:
        assert seen[inst]["HOME"] == infos[inst].home and infos[inst].home.endswith(f"/instances/{inst}")
    assert infos["on-head"].node[:12] == two_nodes.head.node_id[:12]
    assert infos["on-second"].node[:12] == two_nodes.second.node_id[:12]


def test_a_placed_instance_s_events_match_a_local_one_s_but_for_the_instance(two_nodes, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    instances = {"here": {"driver": "local"},
                 "there": {"driver": "local", "placement": two_nodes.placement(tmp_path, resources={"second": 0.01})}}

    def shape(events):
        return [{k: v for k, v in msgspec.structs.asdict(e).items()
                 if k not in ("instance_id", "thread_id", "seq", "event_id", "created_at", "turn_id", "item_id")}
                for e in events]

    with _open(two_nodes, tmp_path, instances) as rt:
        seen = {}
        for inst in instances:
            rt.start_session(inst, instance=inst, cwd=ws)
            seen[inst] = run_turn(rt, inst, "@chunks 5\n@reply the same five pieces")[1]
    assert shape(seen["here"]) == shape(seen["there"])
    assert {e.instance_id for e in seen["there"]} == {"there"}


def test_kill_9_of_the_node_worker_mid_turn_restarts_the_instance(two_nodes, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    instances = {"placed": {"driver": "local", "placement": two_nodes.placement(tmp_path, resources={"second": 0.01})}}
    with _open(two_nodes, tmp_path, instances) as rt:
        rt.start_session("t1", instance="placed", cwd=ws)
        run_turn(rt, "t1", "@reply before")
        worker = psutil.Process(_pid_of(_node_of(rt, "placed")))
        agents = [(p.pid, p.create_time()) for p in worker.children(recursive=True)]
        assert agents, "the agent runs under the node actor's worker"
        with rt.subscribe(thread_id="t1") as sub:
            turn = rt.send_turn("t1", "@chunks 400\n@delay 0.05")
            assert sub.get(timeout=10) is not None  # the turn is streaming
            os.kill(worker.pid, signal.SIGKILL)
            seen = []
            while not any(e.type == "session.exited" for e in seen):
                event = sub.get(timeout=20)
                assert event is not None, [e.type for e in seen]
                seen.append(event)
        ended = [e for e in seen if e.type == "turn.completed"]
        assert [(e.turn_id, e.state) for e in ended] == [(turn.turn_id, "failed")]
        exited = next(e for e in seen if e.type == "session.exited")
        assert exited.recoverable and "node actor" in exited.reason
        # the shim on the node took the agent down with its worker
        deadline = time.monotonic() + 5
        while _alive(agents) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(agents)
        # the instance restarts (a fresh node actor) and the next turn completes
        _, events = run_turn(rt, "t1", "@reply after", timeout=60)
        assert text_of(events) == "after" and events[-1].state == "completed"
        # same node, same node-local home: the thread resumed from its cursor
        assert [(e.resumed, e.resume_failed) for e in events if e.type == "session.started"] == [(True, False)]
        info = _node_of(rt, "placed")
        assert info.ray == "alive" and _pid_of(info) != worker.pid


def _alive(identities):
    out = []
    for pid, created in identities:
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


HOST = textwrap.dedent("""
    import json, os, sys, time
    import psutil
    from paddock import Runtime
    config = json.loads(sys.argv[1])
    rt = Runtime.open(config, state_dir=sys.argv[2])
    for inst in config["instances"]:
        rt.start_session(inst, instance=inst, cwd=sys.argv[3])
        rt.send_turn(inst, "@run sleep 300")  # full-access: a grandchild of the agent
    def trees():
        out = []
        for info in rt.instances():
            worker = psutil.Process(int(info.node.rsplit("pid ", 1)[1].rstrip(")")))
            for proc in [worker, *worker.children(recursive=True)]:
                try:
                    out.append([proc.pid, proc.create_time(), " ".join(proc.cmdline())[:80]])
                except psutil.NoSuchProcess:
                    pass
        return out
    # Until every instance's agent has started its grandchild (bounded: the test then says what it saw).
    deadline = time.monotonic() + 60
    out = trees()
    while sum("sleep 300" in cmd for _p, _c, cmd in out) < len(config["instances"]) and time.monotonic() < deadline:
        time.sleep(0.05)
        out = trees()
    print(json.dumps(out), flush=True)
    time.sleep(600)
""")


def test_host_sigkill_leaves_no_process_on_any_node(two_nodes, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    config = {"instances": {
        "h": {"driver": "local", "placement": two_nodes.placement(tmp_path, resources={"head": 0.01})},
        "s": {"driver": "local", "placement": two_nodes.placement(tmp_path, resources={"second": 0.01})},
    }}
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    host = subprocess.Popen([sys.executable, "-c", HOST, json.dumps(config), str(tmp_path / "state"), str(ws)],
                            stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = host.stdout.readline()
        assert line, "the host printed no process list"
        processes = [(pid, created) for pid, created, _cmd in json.loads(line)]
        cmds = [cmd for _p, _c, cmd in json.loads(line)]
        named = {pid: cmd for pid, _c, cmd in json.loads(line)}
        assert any("sleep 300" in c for c in cmds) and len(processes) >= 6, cmds
        assert sum("sleep 300" in c for c in cmds) >= len(config["instances"]), cmds  # one on each node
        os.kill(host.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        host.wait(5)
        while _alive(processes) and time.monotonic() - killed_at < 5.0:
            time.sleep(0.05)
        survivors = _alive(processes)
        assert not survivors, f"{len(survivors)} processes outlived the host by 5 s: {[named[p] for p in survivors]}"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(5)
        host.stdout.close()


def test_close_reaches_every_node_within_its_deadline(two_nodes, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    instances = {node: {"driver": "local", "placement": two_nodes.placement(tmp_path, resources={node: 0.01})}
                 for node in ("head", "second")}
    rt = _open(two_nodes, tmp_path, instances)
    try:
        agents = []
        for node in instances:
            rt.start_session(node, instance=node, cwd=ws)
            rt.send_turn(node, "@run sleep 300")
        sub = rt.subscribe(types=["session.exited"])
        for node in instances:
            worker = psutil.Process(_pid_of(_node_of(rt, node)))
            deadline = time.monotonic() + 10
            while not any("sleep 300" in " ".join(p.cmdline()) for p in worker.children(recursive=True)):
                assert time.monotonic() < deadline, "the @run command never started"
                time.sleep(0.05)
            agents += [(p.pid, p.create_time()) for p in worker.children(recursive=True)]
    except BaseException:
        rt.close()
        raise
    started = time.monotonic()
    rt.close(timeout=5.0)
    took = time.monotonic() - started
    assert took < 6.0, f"close took {took:.1f} s"
    assert not _alive(agents)
    exits = []
    while (event := sub.get(timeout=1)) is not None:
        exits.append(event.instance_id)
    assert sorted(exits) == ["head", "second"]  # each node's last events reached the host's hub


def test_a_binary_missing_on_the_node_makes_the_instance_unavailable_with_the_node_s_reason(two_nodes, tmp_path):
    instances = {"placed": {"driver": "codex", "binary": str(tmp_path / "no-such-codex"),
                            "placement": two_nodes.placement(tmp_path, resources={"second": 0.01})}}
    with _open(two_nodes, tmp_path, instances) as rt:
        with pytest.raises(InstanceNotFoundError, match="on Ray node .*no-such-codex"):
            rt.start_session("t1", instance="placed", cwd=tmp_path)
        info = _node_of(rt, "placed")
        assert info.ray.startswith("unavailable") and "no-such-codex" in info.ray


def test_every_ray_process_listens_on_loopback_only_with_usage_stats_off(two_nodes):
    ray_processes = [p for p in psutil.Process().children(recursive=True) if _is_ray(p)]
    assert len(ray_processes) >= 4  # gcs, two raylets, their agents
    listening = []
    for proc in ray_processes:
        try:
            assert proc.environ().get("RAY_USAGE_STATS_ENABLED") == "0", proc.cmdline()[:2]
            listening += [(c.laddr.ip, proc.name()) for c in proc.net_connections("inet") if c.status == psutil.CONN_LISTEN]
        except psutil.NoSuchProcess:
            continue
    assert listening
    assert {ip for ip, _ in listening} <= {"127.0.0.1", "::ffff:127.0.0.1", "::1"}, listening


def _is_ray(proc):
    try:
        cmd = proc.cmdline()
    except psutil.Error:
        return False
    return bool(cmd) and (cmd[0].startswith("ray::") or "/site-packages/ray/" in " ".join(cmd))


def test_past_the_restart_budget_the_placed_instance_gives_up(two_nodes, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    placement = two_nodes.placement(tmp_path, resources={"head": 0.01}, restarts=1, period=60)
    with _open(two_nodes, tmp_path, {"placed": {"driver": "local", "placement": placement}}) as rt:
        rt.start_session("t1", instance="placed", cwd=ws)
        recoverable = []
        for _ in range(2):
            worker = _pid_of(_node_of(rt, "placed"))
            with rt.subscribe(thread_id="t1", types=["session.exited"]) as sub:
                os.kill(worker, signal.SIGKILL)
                exited = sub.get(timeout=20)
            assert exited is not None
            recoverable.append(exited.recoverable)
            if len(recoverable) == 1:
                rt.start_session("t1", instance="placed", cwd=ws, timeout=60)  # placed again
        assert recoverable == [True, False]
        with pytest.raises(DriverError, match="restart budget"):
            rt.start_session("t1", instance="placed", cwd=ws)
        assert _node_of(rt, "placed").ray.startswith("failed")


def test_the_next_node_actor_sweeps_what_a_killed_shim_left_behind(two_nodes, tmp_path):
    """The worker and the agent's shim SIGKILLed together: the agent's grandchild (a sleeper that
    ignores SIGTERM) is orphaned. The node actor placed next on that node sweeps the leases and
    kills it by its recorded identity."""
    ws = tmp_path / "ws"
    ws.mkdir()
    instances = {"placed": {"driver": "local", "placement": two_nodes.placement(tmp_path, resources={"head": 0.01})}}
    with _open(two_nodes, tmp_path, instances) as rt:
        rt.start_session("t1", instance="placed", cwd=ws)
        _, events = run_turn(rt, "t1", "@spawn 300")
        sleeper = psutil.Process(int(text_of(events).split()[-1]))
        sleeper_id = [(sleeper.pid, sleeper.create_time())]
        worker = psutil.Process(_pid_of(_node_of(rt, "placed")))
        [shim] = [p for p in worker.children() if "_shim.py" in " ".join(p.cmdline())]
        leases = tmp_path / "nodes" / two_nodes.head.node_id[:16] / "leases"
        deadline = time.monotonic() + 10
        while not any(str(sleeper.pid) in t.read_text().split() for t in leases.glob("*.tree")):
            assert time.monotonic() < deadline, "the shim never recorded the sleeper in its tree file"
            time.sleep(0.05)
        with rt.subscribe(thread_id="t1", types=["session.exited"]) as sub:
            os.kill(shim.pid, signal.SIGKILL)
            os.kill(worker.pid, signal.SIGKILL)
            assert sub.get(timeout=20) is not None
        assert _alive(sleeper_id)  # orphaned: nobody on the node holds it any more
        _, events = run_turn(rt, "t1", "@reply placed again", timeout=60)
        assert text_of(events) == "placed again"
        deadline = time.monotonic() + 5
        while _alive(sleeper_id) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(sleeper_id), "the new node actor did not sweep the dead incarnation's leases"


def test_second_node_removed_the_instance_is_placed_again_on_the_head(two_nodes, tmp_path):
    """Last in the module: it removes the second node (and adds a fresh one back)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    placement = two_nodes.placement(tmp_path, label_selector={"paddock-node": "second"},
                                    fallback_label_selectors=[{"paddock-node": "head"}])
    with _open(two_nodes, tmp_path, {"placed": {"driver": "local", "placement": placement}}) as rt:
        rt.start_session("t1", instance="placed", cwd=ws)
        run_turn(rt, "t1", "@reply on the second node")
        assert _node_of(rt, "placed").node[:12] == two_nodes.second.node_id[:12]
        with rt.subscribe(thread_id="t1", types=["session.exited"]) as sub:
            two_nodes.cluster.remove_node(two_nodes.second)
            exited = sub.get(timeout=30)
        assert exited is not None and exited.recoverable
        _, events = run_turn(rt, "t1", "@reply on the head", timeout=60)
        assert text_of(events) == "on the head"
        # the agent's session data stayed on the removed node: a fresh session, and it says so
        assert [e.resume_failed for e in events if e.type == "session.started"] == [True]
        assert any(e.type == "runtime.warning" for e in events), [e.type for e in events]
        assert _node_of(rt, "placed").node[:12] == two_nodes.head.node_id[:12]
