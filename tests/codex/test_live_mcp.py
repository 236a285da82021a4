"""Live: MCP servers reach the pinned Codex app-server as the thread's own config
(``thread/start`` ``config.mcp_servers``), and what it loaded is read back (issue 23)."""

from __future__ import annotations

import logging

import psutil
import pytest

from paddock.testing import ModelServer
from tests.live import _mcp as m

from .conftest import of_type

pytestmark = pytest.mark.live


@pytest.fixture
def model_server(tmp_path, workspace):
    with ModelServer(m.SCRIPT, workspace=workspace, log_path=tmp_path / "model-requests.jsonl") as server:
        yield server


def _gone(pid: int, timeout: float) -> bool:
    try:
        psutil.Process(pid).wait(timeout)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        return False
    return True


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
    m.assert_no_secret_in_files(tmp_path)  # the config went over stdin; Codex wrote it nowhere
    h.close()
    assert _gone(server_pid, 10), "the app-server left its MCP server running"


def test_env_secret_reaches_the_server_only_and_cwd_is_honoured(make, model_server, tmp_path):
    record = tmp_path / "server-cwd" / "calls.jsonl"  # written relative to the server's cwd
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.stdio_server(record, in_cwd=True),))
    res, evs = h.turn("is it set? SCENARIO:mcp_env")
    assert m.read_record(record)[0]["arguments"] == {"name": m.SECRET_VAR}
    assert any(r.tool_output and "set" in r.tool_output and "unset" not in r.tool_output
               for r in model_server.requests if r.kind == "follow_up")
    m.assert_no_secret(evs)


def test_http_server_with_header_secret(make, model_server, tmp_path):
    record = tmp_path / "http-calls.jsonl"
    with m.http_server(record, "http") as (server, server_pid):
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


def test_sse_server_is_refused_as_failed(make, model_server, tmp_path):
    record = tmp_path / "sse-calls.jsonl"
    with m.http_server(record, "sse") as (server, _):
        h = make()
        h.start(runtime_mode="full-access", mcp_servers=(server,))
        res, evs = h.turn("say hi SCENARIO:text")
        [status] = m.status_events(evs, "paddock-http")
        assert status.status == "failed" and "not SSE" in status.detail
        [warning] = [e for e in of_type(evs, "runtime.warning") if e.code == "mcp.not_connected"]
        assert warning.detail == {"server": "paddock-http", "status": "failed"}
        h.close()


def test_missing_command_is_failed_with_the_reason_and_warned(make, model_server, tmp_path):
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.missing_server(), m.stdio_server(record)))
    res, evs = h.turn("say hi SCENARIO:text")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    failed = [e for e in m.status_events(evs, "missing") if e.status == "failed"]
    assert failed and "No such file" in failed[0].detail
    [warning] = [e for e in of_type(evs, "runtime.warning") if e.code == "mcp.not_connected"]
    assert warning.detail == {"server": "missing", "status": "failed"} and warning.turn_id == res.turn_id
    m.assert_connected_before_end(evs, res.turn_id, "paddock-test")
    res2, evs2 = h.turn("again SCENARIO:text")
    assert not m.status_events(evs2, "missing") and not of_type(evs2, "runtime.warning")
    m.assert_no_secret(evs + evs2)


def test_stopping_a_thread_stops_its_mcp_server(make, model_server, tmp_path):
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start("t1", runtime_mode="full-access", mcp_servers=(m.stdio_server(record),))
    h.start("t2", runtime_mode="full-access")
    res, evs = h.turn("use the echo tool SCENARIO:mcp_echo")
    server_pid = m.read_record(record)[0]["pid"]
    h.adapter.stop_session("t1", timeout=15)
    assert _gone(server_pid, 10), "the thread's MCP server outlived the thread"
    h.turn("still here SCENARIO:text", thread_id="t2")


def test_servers_come_back_after_the_app_server_restarts(make, model_server, tmp_path):
    import os
    import signal
    import time

    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.stdio_server(record),))
    h.turn("use the echo tool SCENARIO:mcp_echo")
    old = h.adapter.link.conn.process.pid
    os.kill(old, signal.SIGKILL)
    h.events_until(lambda e: m.etype(e) == "session.exited")
    deadline = time.monotonic() + 20
    while (h.adapter.link is None or h.adapter.link.conn.process.pid == old) and time.monotonic() < deadline:
        time.sleep(0.05)
    res, evs = h.turn("again SCENARIO:mcp_echo")  # thread/resume carries the servers again
    assert of_type(evs, "session.started")[-1].resumed
    # Codex does not hold a turn for starting servers: the resume waited for them (connected).
    m.assert_connected_before_end(evs, res.turn_id, "paddock-test")
    calls = m.read_record(record)
    assert [c["tool"] for c in calls] == ["echo", "echo"] and calls[0]["pid"] != calls[1]["pid"]
    assert [e.kind for e in of_type(evs, "item.completed") if e.kind == "mcp_tool_call"] == ["mcp_tool_call"]


def test_an_mcp_call_asks_in_approval_mode(make, model_server, tmp_path):
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="approval-required", mcp_servers=(m.stdio_server(record),))
    res = h.send("use the echo tool SCENARIO:mcp_echo")
    evs = h.events_until(lambda e: m.etype(e) in ("request.opened", "turn.completed"))
    [opened] = of_type(evs, "request.opened")  # Codex asks with mcpServer/elicitation/request
    assert opened.data["method"] == "mcpServer/elicitation/request"
    assert m.read_record(record) == []  # nothing ran before the answer
    h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=10)
    evs += h.events_until(lambda e: m.etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    m.assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-test", tool="echo",
                       arguments=m.ECHO_ARGS, result="echo: ping from the model")
