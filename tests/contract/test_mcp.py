"""MCP server structs: the JSON file shape, merging by name, validation, and secrets kept out of repr."""

from __future__ import annotations

import msgspec
import pytest

from paddock.contract import (
    McpHttpServer,
    McpServer,
    McpStdioServer,
    StartSessionInput,
    ValidationError,
    mcp_secrets,
    mcp_servers_from_json,
    merge_mcp_servers,
)

FILE = {"mcpServers": {
    "tools": {"command": "python3", "args": ["-m", "srv"], "env": {"API_KEY": "sk-secret-1"}},
    "remote": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"Authorization": "Bearer tok-2"}},
    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
}}


def test_the_common_file_shape_reads_into_typed_servers():
    tools, remote, web = mcp_servers_from_json(FILE)
    assert tools == McpStdioServer(name="tools", command="python3", args=("-m", "srv"), env={"API_KEY": "sk-secret-1"})
    assert remote == McpHttpServer(name="remote", url="http://127.0.0.1:9/sse", headers={"Authorization": "Bearer tok-2"},
                                   transport="sse")
    assert web.transport == "http"
    assert mcp_servers_from_json(FILE["mcpServers"]) == (tools, remote, web)


def test_servers_round_trip_through_json_with_their_kind():
    servers = mcp_servers_from_json(FILE)
    data = msgspec.json.encode(StartSessionInput(thread_id="t", cwd="/w", mcp_servers=servers))
    assert msgspec.json.decode(data, type=StartSessionInput).mcp_servers == servers
    assert msgspec.json.decode(b'{"kind":"stdio","name":"a","command":"x"}', type=McpServer).command == "x"


def test_secrets_never_show_in_repr_and_are_listed_for_masking():
    servers = mcp_servers_from_json(FILE)
    shown = repr(servers) + str(servers)
    assert "sk-secret-1" not in shown and "tok-2" not in shown and "API_KEY" in shown
    assert set(mcp_secrets(servers)) == {"sk-secret-1", "Bearer tok-2"}


def test_a_session_entry_wins_by_name_and_keeps_its_place():
    instance = (McpStdioServer(name="a", command="one"), McpStdioServer(name="b", command="two"))
    merged = merge_mcp_servers(instance, [McpStdioServer(name="a", command="mine"), McpHttpServer(name="c", url="http://x")])
    assert [(s.name, getattr(s, "command", None)) for s in merged] == [("a", "mine"), ("b", "two"), ("c", None)]


@pytest.mark.parametrize("bad, says", [
    ({"x y": {"command": "c"}}, "letters, digits"),
    ({"a": {"command": ""}}, "empty command"),
    ({"a": {"url": "file:///etc/passwd"}}, "http(s) url"),
    ({"a": {"args": []}}, "needs a command or a url"),
    ({"a": {"command": "c", "env": {"K": 1}}}, "MCP server 'a'"),
    ({"a": "c"}, "must be an object"),
])
def test_bad_entries_are_validation_errors_naming_the_server(bad, says):
    with pytest.raises(ValidationError, match=None) as err:
        mcp_servers_from_json(bad)
    assert says in str(err.value)


def test_a_name_twice_in_one_list_is_refused():
    with pytest.raises(ValidationError, match="given twice"):
        merge_mcp_servers([McpStdioServer(name="a", command="x"), McpStdioServer(name="a", command="y")], [])
