"""Live, issue 33 #8: a spawned ``opencode serve`` with no session stops after the instance's
``idle_timeout`` and the next start spawns it again; the thread resumes on it."""

from __future__ import annotations

import psutil
import pytest

from paddock import Runtime
from paddock.testing import MOCK_KEY, build_offline_env
from tests.adapter_harness import runtime_turn
from tests.helpers import until
from tests.live.conftest import require_peer

pytestmark = [pytest.mark.live, pytest.mark.timeout(240)]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_an_idle_spawned_server_stops_and_starts_again_on_demand(tmp_path, workspace, model_server, tripwire):
    require_peer("opencode")
    offline = build_offline_env("opencode", tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    config = {"instances": {"oc": {"driver": "opencode", "endpoint": model_server.url, "api_key": MOCK_KEY,
                                   "model": "mock-model", "env": offline.env, "idle_timeout": 1.0}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="oc", cwd=str(workspace))
        assert runtime_turn(rt, "t1", "remember OSPREY SCENARIO:text")[-1].state == "completed"
        first = rt._adapter("oc").server_pid
        with rt.subscribe(thread_id="t1") as sub:
            rt.stop_session("t1")
            until(lambda: _gone(first), timeout=30)
            seen = []
            while (event := sub.get(timeout=0.5)) is not None:
                seen.append(event.type)
        assert seen == ["session.exited"], seen
        assert rt.start_session("t1", instance="oc", cwd=str(workspace)).resumed
        assert rt._adapter("oc").server_pid not in (None, first)
        assert runtime_turn(rt, "t1", "what was it? SCENARIO:text")[-1].state == "completed"
