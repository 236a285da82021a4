"""The scripted model server's Responses dialect offers the functions of a ``namespace`` tool
(how Codex groups each MCP server's tools, ``mcp__<server>``) to the ``mcp`` step and calls them
back with ``name`` and ``namespace``, as Codex expects."""

from __future__ import annotations

import json

from paddock.testing import ModelServer
from tests.model_server._client import post_json


def test_a_namespaced_mcp_tool_is_called_with_its_namespace(tmp_path):
    body = {
        "model": "gpt-5.4-mini", "stream": False,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "SCENARIO:mcp_echo"}]}],
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}},
            {"type": "namespace", "name": "mcp__tools", "tools": [
                {"type": "function", "name": "add", "parameters": {"type": "object", "properties": {}}},
                {"type": "function", "name": "echo", "parameters": {"type": "object", "properties": {"text": {}}}},
            ]},
        ],
    }
    with ModelServer(workspace=tmp_path / "ws") as server:
        status, reply = post_json(server.url, "/v1/responses", body)
    assert status == 200
    [call] = [o for o in reply["output"] if o["type"] == "function_call"]
    assert (call["name"], call["namespace"]) == ("echo", "mcp__tools")
    assert json.loads(call["arguments"]) == {"text": "ping from the model"}
