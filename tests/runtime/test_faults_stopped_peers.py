"""Issue 25 #3 on the real CLIs: a stopped (SIGSTOP) Claude Code process or OpenCode server. A
send to it fails at once with a typed error, and one that stays stopped for ``hang_timeout`` is
declared hung (``runtime.warning`` ``process.hung`` naming its state), killed, restarted, and its
session resumes on the next turn. The pinned CLIs against the scripted model server, through
the public API (the local agent's version: ``test_faults_stopped.py``)."""

from __future__ import annotations

import json
import signal

import psutil
import pytest

from paddock import Runtime
from paddock.contract import ProcessError
from paddock.testing import MOCK_KEY, build_offline_env
from tests.adapter_harness import runtime_turn
from tests.helpers import until
from tests.live.conftest import model_server, require_peer, tripwire  # noqa: F401  (fixtures)
from tests.runtime.test_faults import _wait_for

pytestmark = [pytest.mark.live, pytest.mark.timeout(240)]

HANG_TIMEOUT = 3.0


def _config(kind: str, tmp_path, model_server, tripwire) -> dict:
    _, argv = require_peer(kind)
    offline = build_offline_env(kind, tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    if kind == "claude":
        instance = {"driver": "claude", "binary": argv[0], "model": offline.model, "env": offline.env}
    else:
        instance = {"driver": "opencode", "endpoint": model_server.url, "api_key": MOCK_KEY, "model": "mock-model",
                    "env": offline.env}
    return {"instances": {"peer": instance}}


def _agent() -> psutil.Process:
    """The one agent process of this host (Claude Code, or the OpenCode server): the child of
    its orphan-guard shim."""
    [shim] = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
    [agent] = shim.children()
    return agent


@pytest.mark.parametrize("kind", ["claude", "opencode"])
def test_a_stopped_peer_refuses_a_turn_at_once_then_is_declared_hung_restarted_and_resumed(
        kind, tmp_path, workspace, model_server, tripwire, monkeypatch):  # noqa: F811
    monkeypatch.setenv("PADDOCK_HANG_TIMEOUT", str(HANG_TIMEOUT))  # read at each spawn
    config = _config(kind, tmp_path, model_server, tripwire)
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="peer", cwd=str(workspace))
        assert runtime_turn(rt, "t1", "remember OSPREY SCENARIO:text")[-1].state == "completed"
        agent = _agent()
        if kind == "claude":
            # Claude Code writes the session's transcript some time after the turn's result; a
            # process killed before that cannot be resumed ("No conversation found").
            until(lambda: any((tmp_path / "env").rglob("projects/*/*.jsonl")), timeout=30, poll=0.1)
        with rt.subscribe(thread_id="t1") as sub:
            agent.send_signal(signal.SIGSTOP)
            until(lambda: agent.status() == psutil.STATUS_STOPPED, timeout=10)  # every thread of it
            with pytest.raises(ProcessError, match="stopped") as caught:
                rt.send_turn("t1", "never SCENARIO:text")
            assert caught.value.thread_id == "t1" and caught.value.instance_id == "peer"
            ended = "session.exited" if kind == "claude" else "session.state.changed"
            seen = _wait_for(sub, lambda e: e.type == ended and (kind == "claude" or e.state == "starting"),
                             timeout=HANG_TIMEOUT + 30)
            if kind == "opencode":  # the server is restarted under the session, which then is ready again
                _wait_for(sub, lambda e: e.type == "session.state.changed" and e.state == "ready", timeout=60)
        [hung] = [e for e in seen if e.type == "runtime.warning" and e.code == "process.hung"]
        assert "declared hung" in hung.message and "stopped" in hung.message, hung.message
        assert psutil.wait_procs([agent], timeout=10)[1] == []
        assert len(rt.read_thread("t1").turns) == 1  # the refused turn never started
        events = runtime_turn(rt, "t1", "what was it? SCENARIO:text")  # resumes the session
        assert events[-1].state == "completed", events[-1]
        assert _agent().pid != agent.pid
    last = [c for c in model_server.requests if c.kind == "turn"][-1]
    assert "OSPREY" in json.dumps(last.body["messages"])
