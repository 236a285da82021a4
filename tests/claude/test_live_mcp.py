"""Live: MCP servers reach the pinned Claude Code CLI through a 0600 ``--mcp-config`` file, and
what it loaded is read back (issue 23)."""

from __future__ import annotations

import logging
import os
import stat

import pytest

from paddock.testing import ModelServer
from tests.live import _mcp as m

from .conftest import of_type

pytestmark = pytest.mark.live


@pytest.fixture
def model_server(tmp_path, workspace):
    with ModelServer(m.SCRIPT, workspace=workspace, log_path=tmp_path / "model-requests.jsonl") as server:
        yield server


def _config_files(h) -> list:
    folder = h.home / "mcp"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_stdio_server_tool_call_end_to_end(make, model_server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # no masking is registered at this level: the driver logs no secret
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.stdio_server(record),))
    [config] = _config_files(h)
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    with m.CmdlineScan() as scan:
        res, evs = h.turn("use the echo tool SCENARIO:mcp_echo")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    m.assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-test", tool="echo",
                       arguments=m.ECHO_ARGS, result="echo: ping from the model")
    m.assert_connected_before_end(evs, res.turn_id, "paddock-test")
    m.assert_connected_at_start(evs, res.turn_id, "paddock-test")
    assert not of_type(evs, "runtime.warning")
    # The scan ran while the server lived, and found the secret in no command line.
    server_pid = m.read_record(record)[0]["pid"]
    assert server_pid in scan.seen and not scan.hits
    m.assert_no_secret(evs)
    assert m.SECRET_ENV not in caplog.text
    h.adapter.stop_session("t1", timeout=15)
    assert _config_files(h) == []  # the file lives only as long as the session
    m.assert_no_secret_in_files(tmp_path)  # the config file is gone; Claude Code copied it nowhere


def test_an_mcp_call_asks_in_approval_mode(make, model_server, tmp_path):
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="approval-required", mcp_servers=(m.stdio_server(record),))
    res = h.send("use the echo tool SCENARIO:mcp_echo")
    evs = h.events_until(lambda e: m.etype(e) in ("request.opened", "turn.completed"))
    [opened] = of_type(evs, "request.opened")
    assert opened.data["tool"] == "mcp__paddock-test__echo" and opened.data["input"] == m.ECHO_ARGS
    assert m.read_record(record) == []  # nothing ran before the answer
    h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=10)
    evs += h.events_until(lambda e: m.etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    m.assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-test", tool="echo",
                       arguments=m.ECHO_ARGS, result="echo: ping from the model")


def test_env_secret_reaches_the_server_only_and_cwd_is_honoured(make, model_server, tmp_path):
    record = tmp_path / "server-cwd" / "calls.jsonl"  # written relative to the server's cwd
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.stdio_server(record, in_cwd=True),))
    res, evs = h.turn("is it set? SCENARIO:mcp_env")
    assert m.read_record(record)[0]["arguments"] == {"name": m.SECRET_VAR}
    assert any(r.tool_output and "set" in r.tool_output and "unset" not in r.tool_output
               for r in model_server.requests if r.kind == "follow_up")
    m.assert_no_secret(evs)


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_http_server_with_header_secret(make, model_server, tmp_path, transport):
    record = tmp_path / "http-calls.jsonl"
    with m.http_server(record, transport) as (server, server_pid):
        h = make()
        h.start(runtime_mode="full-access", mcp_servers=(server,))
        with m.CmdlineScan(exclude=(server_pid,)) as scan:
            res, evs = h.turn("over http SCENARIO:mcp_http")
        m.assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-http", tool="echo",
                           arguments={"text": "over http"}, result="echo: over http")
        m.assert_connected_before_end(evs, res.turn_id, "paddock-http")
        assert scan.rounds > 0 and not scan.hits
        m.assert_no_secret(evs)
        h.close()
        m.assert_no_secret_in_files(tmp_path)


def test_missing_command_is_failed_with_the_reason_and_warned(make, model_server, tmp_path):
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.missing_server(), m.stdio_server(record)))
    res, evs = h.turn("say hi SCENARIO:text")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    failed = [e for e in m.status_events(evs, "missing") if e.status == "failed"]
    assert failed and "ENOENT" in failed[0].detail
    [warning] = [e for e in of_type(evs, "runtime.warning") if e.code == "mcp.not_connected"]
    assert warning.detail == {"server": "missing", "status": "failed"} and warning.turn_id == res.turn_id
    m.assert_connected_before_end(evs, res.turn_id, "paddock-test")
    # Reported once: a second turn repeats neither the status nor the warning.
    res2, evs2 = h.turn("again SCENARIO:text")
    assert not m.status_events(evs2, "missing") and not of_type(evs2, "runtime.warning")
    m.assert_no_secret(evs + evs2)


def test_no_servers_no_mcp_flags(make_fake):
    from .conftest import fake_starts

    h = make_fake()
    h.start()
    argv = fake_starts(h)[0]["argv"]
    assert "--mcp-config" not in argv and "--strict-mcp-config" not in argv
    assert not os.path.exists(h.home / "mcp")


def test_through_the_runtime_instance_servers_and_a_resume_in_a_new_host(tmp_path, workspace, model_server):
    """The whole path: instance mcp_servers in the config -> the host's merge and 0600 hand-off ->
    StartSessionInput -> --mcp-config; a new host process resumes with the same servers."""
    from paddock import Runtime
    from paddock.testing import build_offline_env
    from tests.adapter_harness import runtime_turn
    from tests.live.conftest import require_peer

    _, argv = require_peer("claude")
    offline = build_offline_env("claude", tmp_path / "env", model_url=model_server.url)
    record = tmp_path / "calls.jsonl"
    server = m.stdio_server(record)
    table = {"driver": "claude", "binary": argv[0], "model": offline.model, "env": offline.env,
             "mcp_servers": [{"name": server.name, "command": server.command, "args": list(server.args),
                              "env": dict(server.env)}]}
    config = {"instances": {"c": table}}
    state = tmp_path / "state"
    with Runtime.open(config, state_dir=state) as rt:
        rt.start_session("t1", instance="c", cwd=str(workspace), runtime_mode="full-access")
        evs = runtime_turn(rt, "t1", "use the echo tool SCENARIO:mcp_echo")
        assert evs[-1].state == "completed"
        with rt.subscribe(thread_id="t1", types=("mcp.status.updated",), from_seq=0) as statuses:
            status = statuses.get(timeout=10)  # from the event log: it came at the start
        assert status is not None and (status.server, status.status, status.tools) == ("paddock-test", "connected", 3)
    with Runtime.open(config, state_dir=state) as rt:
        rt.start_session("t1", instance="c", cwd=str(workspace), runtime_mode="full-access", resume="require")
        evs = runtime_turn(rt, "t1", "again SCENARIO:mcp_echo")
        assert evs[-1].state == "completed"
        m.assert_no_secret(evs)
    assert [c["tool"] for c in m.read_record(record)] == ["echo", "echo"]
    # The secret is on disk only in the host's 0600 hand-off file: not in the event log, the
    # binding store, Claude Code's files or the (removed) --mcp-config file.
    holding = [p for p in tmp_path.rglob("*") if p.is_file() and m.SECRET_ENV.encode() in p.read_bytes()]
    assert holding and all(p.parent.name == "paddock-threads" and stat.S_IMODE(p.stat().st_mode) == 0o600
                           for p in holding), holding
