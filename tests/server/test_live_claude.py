"""Live: the same scenario on the pinned Claude Code CLI through Runtime and through RemoteRuntime
(a real ``paddock serve``), offline against the scripted model server."""

from __future__ import annotations

import json

import pytest

from paddock import Runtime
from paddock.testing import build_offline_env
from paddock.testing import ModelServer
from tests.live.conftest import require_peer, tripwire  # noqa: F401  (fixtures)
from tests.runtime.conftest import run_turn, text_of

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]


def _toml(config: dict) -> str:
    lines = []
    for name, table in config["instances"].items():
        lines.append(f"[instances.{name}]")
        for key, value in table.items():
            if isinstance(value, dict):
                inner = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items())
                lines.append(f"{key} = {{ {inner} }}")
            else:
                lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def model_server(short_root):
    ws = short_root / "srv" / "ws"
    ws.mkdir(parents=True)
    with ModelServer(workspace=ws, log_path=short_root / "model-requests.jsonl") as server:
        yield server


@pytest.mark.parametrize("where", ["in-process", "remote-unix"])
def test_claude_turn_approval_and_interrupt(where, short_root, make_server, model_server, tripwire):
    _, argv = require_peer("claude")
    offline = build_offline_env("claude", short_root / "env", model_url=model_server.url, proxy_url=tripwire.url)
    config = {"instances": {"claude": {"driver": "claude", "binary": argv[0], "model": offline.model, "env": offline.env}}}
    if where == "in-process":
        ws = short_root / "srv" / "ws"
        rt = Runtime.open(config, state_dir=short_root / "state")
    else:
        served = make_server("unix", config=_toml(config), name="srv")
        ws = served.workspace
        rt = served.remote()
    try:
        session = rt.start_session("t1", instance="claude", cwd=ws, runtime_mode="approval-required")
        assert session.driver == "claude" and session.status == "ready"
        _, events = run_turn(rt, "t1", "say hi SCENARIO:text", timeout=60)
        assert text_of(events) == "Hello from mock" and events[-1].state == "completed"

        def accept(event):
            assert event.kind == "command"
            assert [r.request_id for r in rt.pending_requests("t1")] == [event.request_id]
            rt.respond_to_request("t1", event.request_id, "accept", timeout=20)

        _, events = run_turn(rt, "t1", "please create hello.txt SCENARIO:tool_shell", timeout=60, on_request=accept)
        assert events[-1].state == "completed" and (ws / "hello.txt").exists()
        with rt.subscribe(thread_id="t1", types=["content.delta", "turn.completed"]) as sub:
            slow = rt.send_turn("t1", "stream slowly SCENARIO:slow")
            assert sub.get(timeout=60).type == "content.delta"
            rt.interrupt_turn("t1", slow.turn_id, timeout=20)
            done = sub.get(timeout=60)
            while done is not None and done.type != "turn.completed":
                done = sub.get(timeout=60)
        assert done is not None and done.state == "interrupted"
        assert [t.state for t in rt.read_thread("t1").turns][-3:] == ["completed", "completed", "interrupted"]
    finally:
        rt.close()
