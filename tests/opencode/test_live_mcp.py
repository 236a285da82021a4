"""Live: MCP servers reach the pinned ``opencode serve`` with ``POST /mcp`` (scope: the server and
the directory, not the session) and what it loaded is read back with ``GET /mcp`` (issue 23)."""

from __future__ import annotations

import logging

import pytest

from paddock.testing import ModelServer
from tests.live import _mcp as m

from .conftest import of_type

pytestmark = pytest.mark.live


@pytest.fixture
def model_server(tmp_path, workspace):
    with ModelServer(m.SCRIPT, workspace=workspace, log_path=tmp_path / "model-requests.jsonl") as server:
        yield server


def test_stdio_server_tool_call_end_to_end(make, model_server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # no masking is registered at this level: the driver logs no secret
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.stdio_server(record),))
    with m.CmdlineScan() as scan:
        res, evs = h.turn("use the echo tool SCENARIO:mcp_echo")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    m.assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-test", tool="echo",
                       arguments=m.ECHO_ARGS, result="echo: ping from the model")
    m.assert_connected_before_end(evs, res.turn_id, "paddock-test")
    m.assert_connected_at_start(evs, res.turn_id, "paddock-test")
    assert not of_type(evs, "runtime.warning")
    server_pid = m.read_record(record)[0]["pid"]
    assert server_pid in scan.seen and not scan.hits
    m.assert_no_secret(evs)
    assert m.SECRET_ENV not in caplog.text
    h.close()
    m.assert_no_secret_in_files(tmp_path)  # OpenCode keeps the entries in memory only


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
    res2, evs2 = h.turn("again SCENARIO:text")
    assert not m.status_events(evs2, "missing") and not of_type(evs2, "runtime.warning")
    m.assert_no_secret(evs + evs2)


def test_an_mcp_call_asks_in_approval_mode(make, model_server, tmp_path):
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="approval-required", mcp_servers=(m.stdio_server(record),))
    res = h.send("use the echo tool SCENARIO:mcp_echo")
    evs = h.events_until(lambda e: m.etype(e) in ("request.opened", "turn.completed"))
    [opened] = of_type(evs, "request.opened")  # OpenCode's permission.asked for the MCP tool
    assert m.read_record(record) == []  # nothing ran before the answer
    h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=10)
    evs += h.events_until(lambda e: m.etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    m.assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-test", tool="echo",
                       arguments=m.ECHO_ARGS, result="echo: ping from the model")
