"""Live: MCP servers reach the pinned ``opencode serve`` with ``POST /mcp`` (scope: the server and
the directory, not the session) and what it loaded is read back with ``GET /mcp`` (issue 23)."""

from __future__ import annotations

import logging

import pytest

from tests.live import _mcp as m

pytestmark = pytest.mark.live

model_server = m.model_server  # the fixture: the scripted model server on the MCP script


def test_stdio_server_tool_call_end_to_end(make, model_server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # no masking is registered at this level: the driver logs no secret
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(m.stdio_server(record),))
    m.check_stdio_echo_turn(h, model_server, record, caplog)
    h.close()
    m.assert_no_secret_in_files(tmp_path)  # OpenCode keeps the entries in memory only


def test_env_secret_reaches_the_server_only_and_cwd_is_honoured(make, model_server, tmp_path):
    m.check_env_secret_and_cwd(make, model_server, tmp_path)


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_http_server_with_header_secret(make, model_server, tmp_path, transport):
    m.check_http_server_with_header_secret(make, model_server, tmp_path, transport)


def test_missing_command_is_failed_with_the_reason_and_warned(make, model_server, tmp_path):
    m.check_missing_command(make, model_server, tmp_path, "ENOENT")


def test_an_mcp_call_asks_in_approval_mode(make, model_server, tmp_path):
    m.check_call_asks_in_approval_mode(make, model_server, tmp_path)  # OpenCode's permission.asked for the MCP tool
