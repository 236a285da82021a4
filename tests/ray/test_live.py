"""Live: a real pinned CLI (codex app-server) placed on the second Ray node, against the scripted
model server on 127.0.0.1. Its binary is looked up, its home and environment built, on the node."""

from __future__ import annotations

import pytest

from tests.ray.conftest import require_ray

require_ray()

from paddock import Runtime
from paddock.testing import ModelServer, build_offline_env
from tests.adapter_harness import runtime_turn
from tests.codex.conftest import MOCK_KEY, offline_config
from tests.live.conftest import require_peer

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_codex_placed_on_the_second_node_runs_a_turn(two_nodes, tmp_path):
    require_peer("codex")
    ws = tmp_path / "ws"
    ws.mkdir()
    with ModelServer(workspace=ws, log_path=tmp_path / "model.jsonl") as model_server:
        offline = build_offline_env("codex", tmp_path / "env", model_url=model_server.url)
        proxies = {k: v for k, v in offline.env.items() if k.upper().endswith("_PROXY")}
        config = {"instances": {"codex-placed": {
            "driver": "codex", **offline_config(model_server.url), "env": proxies,
            "placement": two_nodes.placement(tmp_path, resources={"second": 0.01}),
        }}}
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            session = rt.start_session("t1", instance="codex-placed", cwd=str(ws))
            assert session.driver == "codex"
            [info] = rt.instances()
            assert info.node[:12] == two_nodes.second.node_id[:12] and info.ray == "alive"
            assert info.capabilities.turns.steer  # what the node's app-server reported
            events = runtime_turn(rt, "t1", "say hi SCENARIO:text")
            assert events[-1].state == "completed"
            text = "".join(e.delta for e in events if e.type == "content.delta" and e.stream == "assistant_text")
            assert text == "Hello from mock"
            assert all(MOCK_KEY not in repr(e) for e in events)
        [call] = [c for c in model_server.requests if c.kind == "turn"]
        assert call.headers["authorization"] == f"Bearer {MOCK_KEY}"  # configured credentials reached the node
