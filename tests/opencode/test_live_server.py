"""Live: the opencode server's life: resume across a runtime restart, two instances side by side,
an external server, the server killed mid-turn, the host killed mid-turn."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from paddock import Runtime
from paddock.contract import DriverError, StartSessionInput
from paddock.testing import MOCK_KEY, build_offline_env
from tests.adapter_harness import runtime_turn
from tests.live.conftest import require_peer

from .conftest import etype, of_type, text_of

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]


def test_resume_after_a_runtime_restart(tmp_path, workspace, model_server, tripwire):
    require_peer("opencode")
    offline = build_offline_env("opencode", tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    config = {"instances": {"oc": {"driver": "opencode", "endpoint": model_server.url, "api_key": MOCK_KEY,
                                   "model": "mock-model", "env": offline.env}}}
    state = tmp_path / "state"
    with Runtime.open(config, state_dir=state) as rt:
        session = rt.start_session("t1", instance="oc", cwd=str(workspace), runtime_mode="approval-required")
        assert session.driver == "opencode" and not session.resumed
        first_sid = json.loads(session.resume_cursor.payload)["session_id"]
        assert first_sid.startswith("ses_")
        assert runtime_turn(rt, "t1", "remember OSPREY SCENARIO:text")[-1].state == "completed"
        first_pid = rt._adapter("oc").server_pid
    assert not psutil.pid_exists(first_pid) or psutil.Process(first_pid).status() == psutil.STATUS_ZOMBIE
    with Runtime.open(config, state_dir=state) as rt:
        session = rt.start_session("t1", instance="oc", cwd=str(workspace), runtime_mode="approval-required",
                                   resume="require")
        assert session.resumed and json.loads(session.resume_cursor.payload)["session_id"] == first_sid
        adapter = rt._adapter("oc")
        assert adapter.server_pid != first_pid
        earlier = adapter.native_messages("t1")
        assert [m["role"] for m in earlier] == ["user", "assistant"] and "OSPREY" in earlier[0]["text"]
        assert runtime_turn(rt, "t1", "what was it? SCENARIO:text")[-1].state == "completed"
    last = [c for c in model_server.requests if c.kind == "turn"][-1]
    assert "OSPREY" in json.dumps(last.body["messages"])


def test_a_cursor_is_invalid_in_another_cwd(make, tmp_path):
    h = make()
    session = h.start()
    h.adapter.stop_session("t1", timeout=20)
    other = tmp_path / "elsewhere"
    other.mkdir()
    h.subs["t2"] = h.hub.subscribe(thread_id="t2")
    again = h.adapter.start_session(StartSessionInput(thread_id="t2", cwd=str(other),
                                                      resume_cursor=session.resume_cursor), timeout=60)
    assert not again.resumed
    assert json.loads(again.resume_cursor.payload)["session_id"] != json.loads(session.resume_cursor.payload)["session_id"]
    evs = h.events_until(lambda e: etype(e) == "session.started", thread_id="t2")
    [warning] = [e for e in evs if etype(e) == "runtime.warning"]
    assert warning.code == "opencode.resume_failed" and "elsewhere" in warning.message
    assert evs[-1].resume_failed


def test_two_instances_at_once_on_their_own_ports_and_data_dirs(make):
    a, b = make(instance_id="a"), make(instance_id="b")
    # (one hub: each instance on its own thread id)
    starts = [threading.Thread(target=h.start, args=(tid,)) for h, tid in ((a, "ta"), (b, "tb"))]
    for t in starts:
        t.start()
    for t in starts:
        t.join(120)
    assert a.adapter.server_url != b.adapter.server_url
    assert a.adapter.server_pid != b.adapter.server_pid
    ra, rb = a.send("one SCENARIO:text", "ta"), b.send("two SCENARIO:text", "tb")
    for h, res, tid in ((a, ra, "ta"), (b, rb, "tb")):
        evs = h.events_until(lambda e, r=res: etype(e) == "turn.completed" and e.turn_id == r.turn_id, tid)
        assert evs[-1].state == "completed" and text_of(evs) == "Hello from mock"
    dbs = [Path(h.offline.env["XDG_DATA_HOME"]) / "opencode" / "opencode.db" for h in (a, b)]
    assert dbs[0] != dbs[1] and all(p.exists() for p in dbs)
    # Each server lists only its own session.
    assert len(a.adapter.list_sessions()) == 1 and len(b.adapter.list_sessions()) == 1


def _serve(argv, env, cwd, password):
    import re
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([*argv, "serve", "--hostname", "127.0.0.1", "--port", str(port)],
                            env={**env, "OPENCODE_SERVER_PASSWORD": password}, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    for line in proc.stdout:
        m = re.search(rb"opencode server listening on (http://\S+)", line)
        if m:
            return proc, m.group(1).decode()
        assert time.monotonic() < deadline
    raise AssertionError("no readiness line")


def test_external_mode_against_a_server_the_test_started(make, tmp_path, workspace, model_server):
    _, argv = require_peer("opencode")
    offline = build_offline_env("opencode", tmp_path / "ext-env", model_url=model_server.url)
    proc, url = _serve(argv, offline.env, str(workspace), "ext-s3cret")
    try:
        with pytest.raises(DriverError) as err:
            make(instance_id="wrong", server_url=url, password="not-it").start()
        assert "ext-s3cret" not in str(err.value) and "not-it" not in str(err.value)
        h = make(instance_id="ext", server_url=url, password="ext-s3cret")
        session = h.start()
        assert session.status == "ready"
        res, evs = h.turn("hello SCENARIO:text")
        assert of_type(evs, "turn.completed")[0].state == "completed", [(etype(e), getattr(e, "error", None)) for e in evs]
        assert text_of(evs) == "Hello from mock", [etype(e) for e in evs]
        assert h.adapter.server_pid is None
        configured = [e for e in evs if etype(e) == "session.configured"]
        assert all("ext-s3cret" not in json.dumps(e.config) for e in configured)
        h.close()
        assert proc.poll() is None  # we never stop a server someone else runs
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()


def test_kill_9_of_the_server_mid_turn_restarts_it_and_the_next_turn_works(make):
    h = make()
    h.start()
    first = h.adapter.server_pid
    res = h.send("stream slowly SCENARIO:slow")
    evs = h.events_until(lambda e: etype(e) == "content.delta")
    os.kill(first, signal.SIGKILL)
    evs += h.events_until(lambda e: etype(e) == "turn.completed")
    [done] = of_type(evs, "turn.completed")
    assert done.turn_id == res.turn_id and done.state == "failed" and "signal 9" in (done.error or "")
    # every item the turn started ended before its turn.completed
    started = {e.item_id for e in of_type(evs, "item.started")}
    assert started == {e.item_id for e in of_type(evs, "item.completed")}
    evs = h.events_until(lambda e: etype(e) == "session.state.changed" and e.state == "ready", timeout=90)
    assert [e.state for e in of_type(evs, "session.state.changed")][-1] == "ready"
    assert h.adapter.server_pid not in (None, first)
    res2, evs2 = h.turn("after the crash SCENARIO:text")
    assert of_type(evs2, "turn.completed")[0].state == "completed" and text_of(evs2) == "Hello from mock"


HOST = textwrap.dedent(
    """
    import json, sys, time, msgspec
    from paddock.actors import EventHub
    from paddock.contract import StartSessionInput, SendTurnInput
    from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext, ModelAccess
    state, ws, url, env = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    hub = EventHub.start(None)
    sub = hub.subscribe(thread_id="t1", types=("content.delta",))
    spec = BUILT_IN_DRIVERS["opencode"]
    cfg = msgspec.convert({"driver": "opencode"}, spec.config_type)
    ctx = InstanceContext(instance_id="oc", driver="opencode", config=cfg, home=env["HOME"], env=env,
                          state_dir=state, hub=hub, access=ModelAccess(endpoint=url, api_key="k", model="mock-model"))
    adapter = spec.create(ctx)
    adapter.start_session(StartSessionInput(thread_id="t1", cwd=ws), timeout=90)
    adapter.send_turn(SendTurnInput(thread_id="t1", text="slow SCENARIO:slow"), timeout=30)
    assert sub.get(timeout=60) is not None
    print("ready", adapter.server_pid, flush=True)
    time.sleep(888)
    """
)


def test_host_sigkill_mid_turn_leaves_no_opencode_within_1_s(tmp_path, workspace, model_server):
    require_peer("opencode")
    offline = build_offline_env("opencode", tmp_path / "env", model_url=model_server.url)
    state = tmp_path / "state"
    state.mkdir()
    host = subprocess.Popen([sys.executable, "-c", HOST, str(state), str(workspace), model_server.url,
                             json.dumps(offline.env)], cwd=ROOT, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = b""
        deadline = time.monotonic() + 120
        while not line.startswith(b"ready"):
            assert time.monotonic() < deadline and host.poll() is None, "the host did not get mid-turn"
            line = host.stdout.readline()
        server = psutil.Process(int(line.split()[1]))
        tree = [server, *server.children(recursive=True)]
        assert "opencode" in " ".join(server.cmdline())
        host.kill()
        host.wait(10)
        gone, alive = psutil.wait_procs(tree, timeout=1.0)
        assert not alive, f"opencode outlived its host by 1 s: {alive}"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        host.stdout.close()
