"""Live, issue 33 #8: the Codex app-server of an instance with no session stops after the
instance's ``idle_timeout`` and the next start spawns it again; the thread resumes on it."""

from __future__ import annotations

import pytest

from paddock import Runtime
from paddock.testing import build_offline_env

from .conftest import offline_config
from tests.adapter_harness import runtime_turn
from tests.helpers import shim_agents, until
from tests.live.conftest import require_peer

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]


def test_an_idle_app_server_stops_and_starts_again_on_demand(tmp_path, workspace, model_server, tripwire):
    require_peer("codex")
    offline = build_offline_env("codex", tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    proxies = {k: v for k, v in offline.env.items() if k.upper().endswith("_PROXY")}
    config = {"instances": {"codex-work": {"driver": "codex", **offline_config(model_server.url), "env": proxies,
                                           "idle_timeout": 1.0}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="codex-work", cwd=str(workspace))
        assert runtime_turn(rt, "t1", "remember OSPREY SCENARIO:text")[-1].state == "completed"
        [first] = shim_agents()
        with rt.subscribe(thread_id="t1") as sub:
            rt.stop_session("t1")
            until(lambda: not shim_agents(), timeout=20)
            seen = []
            while (event := sub.get(timeout=0.5)) is not None:
                seen.append(event.type)
        assert seen == ["session.exited"], seen
        assert rt.start_session("t1", instance="codex-work", cwd=str(workspace)).resumed
        [second] = shim_agents()
        assert second.pid != first.pid
        assert runtime_turn(rt, "t1", "what was it? SCENARIO:text")[-1].state == "completed"
    last = [c for c in model_server.requests if c.kind == "turn"][-1]
    assert "OSPREY" in str(last.body["input"])
