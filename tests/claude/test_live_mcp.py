"""Live: MCP servers reach the pinned Claude Code CLI through a 0600 ``--mcp-config`` file, and
what it loaded is read back (issue 23)."""

from __future__ import annotations

import logging
import os
import stat

import pytest

from tests.live import _mcp as m

pytestmark = pytest.mark.live

model_server = m.model_server  # the fixture: the scripted model server on the MCP script


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
    m.check_stdio_echo_turn(h, model_server, record, caplog)
    h.adapter.stop_session("t1", timeout=15)
    assert _config_files(h) == []  # the file lives only as long as the session
    m.assert_no_secret_in_files(tmp_path)  # the config file is gone; Claude Code copied it nowhere


def test_an_mcp_call_asks_in_approval_mode(make, model_server, tmp_path):
    opened = m.check_call_asks_in_approval_mode(make, model_server, tmp_path)
    assert opened.data["tool"] == "mcp__paddock-test__echo" and opened.data["input"] == m.ECHO_ARGS


def test_env_secret_reaches_the_server_only_and_cwd_is_honoured(make, model_server, tmp_path):
    m.check_env_secret_and_cwd(make, model_server, tmp_path)


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_http_server_with_header_secret(make, model_server, tmp_path, transport):
    m.check_http_server_with_header_secret(make, model_server, tmp_path, transport)


def test_missing_command_is_failed_with_the_reason_and_warned(make, model_server, tmp_path):
    m.check_missing_command(make, model_server, tmp_path, "ENOENT")


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
