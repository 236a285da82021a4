"""Live: the codex driver through the embedding API (Runtime) as a new user configures it
(``driver = "codex"``, the pinned binary from the peers dir), across a runtime restart."""

from __future__ import annotations

import pytest

from paddock import Runtime
from paddock.testing import build_offline_env

from .conftest import offline_config
from tests.adapter_harness import runtime_turn
from tests.live.conftest import require_peer

pytestmark = pytest.mark.live


def test_runtime_runs_codex_and_resumes_after_a_restart(tmp_path, workspace, model_server, tripwire):
    require_peer("codex")
    offline = build_offline_env("codex", tmp_path / "env", model_url=model_server.url, proxy_url=tripwire.url)
    proxies = {k: v for k, v in offline.env.items() if k.upper().endswith("_PROXY")}
    config = {"instances": {"codex-work": {"driver": "codex", **offline_config(model_server.url), "env": proxies}}}
    state = tmp_path / "state"
    with Runtime.open(config, state_dir=state) as rt:
        [info] = [i for i in rt.instances() if i.id == "codex-work"]
        assert info.status == "available" and info.capabilities.turns.steer and info.models is None
        session = rt.start_session("t1", instance="codex-work", cwd=str(workspace), runtime_mode="approval-required")
        assert session.driver == "codex" and not session.resumed
        evs = runtime_turn(rt, "t1", "remember OSPREY SCENARIO:text")
        assert evs[-1].state == "completed"
        [info] = [i for i in rt.instances() if i.id == "codex-work"]
        assert [m.id for m in info.models] == ["mock-model"]
        home = state / "instances" / "codex-work" / "codex"
        assert (home / "config.toml").exists() and list((home / "sessions").rglob("rollout-*.jsonl"))
    with Runtime.open(config, state_dir=state) as rt:
        session = rt.start_session("t1", instance="codex-work", cwd=str(workspace), runtime_mode="approval-required",
                                   resume="require")
        assert session.resumed
        evs = runtime_turn(rt, "t1", "what was it? SCENARIO:text")
        assert evs[-1].state == "completed"
    last = [c for c in model_server.requests if c.kind == "turn"][-1]
    assert "OSPREY" in str(last.body["input"])
