"""Live: MCP servers reach the pinned Codex app-server as the thread's own config
(``thread/start`` ``config.mcp_servers``), and what it loaded is read back (issue 23)."""

from __future__ import annotations

import logging

import pytest

from tests.live import _mcp as m

from .conftest import of_type

pytestmark = pytest.mark.live

model_server = m.model_server  # the fixture: the scripted model server on the MCP script


def test_stdio_server_tool_call_end_to_end(make, model_server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # no masking is registered at this level: the driver logs no secret
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.stdio_server(record),))
    _, _, server_pid = m.check_stdio_echo_turn(h, model_server, record, caplog)
    m.assert_no_secret_in_files(tmp_path)  # the config went over stdin; Codex wrote it nowhere
    h.close()
    assert m.gone(server_pid, 10), "the app-server left its MCP server running"


def test_env_secret_reaches_the_server_only_and_cwd_is_honoured(make, model_server, tmp_path):
    m.check_env_secret_and_cwd(make, model_server, tmp_path)


def test_http_server_with_header_secret(make, model_server, tmp_path):
    m.check_http_server_with_header_secret(make, model_server, tmp_path, "http")


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
    m.check_missing_command(make, model_server, tmp_path, "No such file")


def test_stopping_a_thread_stops_its_mcp_server(make, model_server, tmp_path):
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start("t1", runtime_mode="full-access", mcp_servers=(m.stdio_server(record),))
    h.start("t2", runtime_mode="full-access")
    res, evs = h.turn("use the echo tool SCENARIO:mcp_echo")
    server_pid = m.read_record(record)[0]["pid"]
    h.adapter.stop_session("t1", timeout=15)
    assert m.gone(server_pid, 10), "the thread's MCP server outlived the thread"
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
    opened = m.check_call_asks_in_approval_mode(make, model_server, tmp_path)
    assert opened.data["method"] == "mcpServer/elicitation/request"  # Codex asks with this request
