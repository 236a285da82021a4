"""Live: the claude driver through the embedding API (Runtime), across a runtime restart."""

from __future__ import annotations

import pytest

from paddock.testing import build_offline_env
from paddock import Runtime

from tests.adapter_harness import runtime_turn
from tests.live.conftest import require_peer

pytestmark = pytest.mark.live


def test_runtime_binds_and_resumes_after_a_restart(tmp_path, workspace, model_server, tripwire):
    _, argv = require_peer("claude")
    offline = build_offline_env("claude", tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    config = {"instances": {"claude-home": {"driver": "claude", "binary": argv[0], "model": offline.model,
                                             "env": offline.env}}}
    state = tmp_path / "state"
    with Runtime.open(config, state_dir=state) as rt:
        session = rt.start_session("t1", instance="claude-home", cwd=str(workspace), runtime_mode="approval-required")
        assert session.driver == "claude" and not session.resumed
        evs = runtime_turn(rt, "t1", "remember OSPREY SCENARIO:text")
        assert evs[-1].state == "completed"
    with Runtime.open(config, state_dir=state) as rt:
        session = rt.start_session("t1", instance="claude-home", cwd=str(workspace), runtime_mode="approval-required",
                                   resume="require")
        assert session.resumed
        evs = runtime_turn(rt, "t1", "what was it? SCENARIO:text")
        assert evs[-1].state == "completed"
    last = [c for c in model_server.requests if c.kind == "turn"][-1]
    assert "OSPREY" in str(last.body["messages"])
