"""Anthropic Messages dialect (Claude Code, claude-agent-acp), spoken directly over a socket."""

from __future__ import annotations

import json

from ._client import connect, post_json, post_sse

TOOLS = [
    {"name": "Bash", "input_schema": {"type": "object", "required": ["command"],
                                      "properties": {"command": {}, "description": {}, "timeout": {}}}},
    {"name": "Write", "input_schema": {"type": "object", "properties": {"file_path": {}, "content": {}}}},
    {"name": "Edit", "input_schema": {"type": "object", "properties": {"file_path": {}, "old_string": {}, "new_string": {}}}},
]


def body(content, *extra, stream=True):
    return {"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": stream, "tools": TOOLS,
            "system": [{"type": "text", "text": "You are Claude Code."}],
            "messages": [{"role": "user", "content": content}, *extra]}


def prompt(text):
    return [{"type": "text", "text": "<system-reminder>SCENARIO:http500</system-reminder>"}, {"type": "text", "text": text}]


def blocks(events):
    """Rebuild content blocks from the stream."""
    out = {}
    for name, data in events:
        if name == "content_block_start":
            out[data["index"]] = dict(data["content_block"], _json="")
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                out[data["index"]]["text"] += delta["text"]
            else:
                out[data["index"]]["_json"] += delta["partial_json"]
    return [out[i] for i in sorted(out)]


def test_text_stream_event_sequence(server):
    status, headers, events = post_sse(server.url, "/v1/messages?beta=true", body(prompt("say hi")))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert [n for n, _ in events] == ["message_start", "ping", "content_block_start", "content_block_delta",
                                      "content_block_delta", "content_block_delta", "content_block_stop",
                                      "message_delta", "message_stop"]
    assert all(d["type"] == n for n, d in events)
    start = events[0][1]["message"]
    assert start["role"] == "assistant" and start["model"] == "claude-sonnet-4-5" and start["usage"]["input_tokens"] > 0
    assert blocks(events)[0]["text"] == "Hello from mock"
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"


def test_bash_tool_use_with_input_json_slices(server):
    _, _, events = post_sse(server.url, "/v1/messages?beta=true", body(prompt("SCENARIO:tool_shell")))
    [block] = blocks(events)
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["id"].startswith("toolu_")
    assert json.loads(block["_json"]) == {"command": "touch hello.txt", "description": "Run a scripted shell command"}
    assert sum(1 for n, d in events if n == "content_block_delta") > 2
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_write_and_patch_use_write_with_an_absolute_path(server, tmp_path):
    for scenario, name, content in (("tool_write", "hello.txt", "hello from mock\n"),
                                    ("patch", "patched.txt", "created by apply_patch\n")):
        _, _, events = post_sse(server.url, "/v1/messages", body(prompt(f"SCENARIO:{scenario}")))
        [block] = blocks(events)
        assert block["name"] == "Write"
        assert json.loads(block["_json"]) == {"file_path": str(tmp_path / "ws" / name), "content": content}


def test_follow_up_after_tool_result(server):
    assistant = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                           "content": "(Bash completed with no output)", "is_error": False}]}
    _, _, events = post_sse(server.url, "/v1/messages", body(prompt("SCENARIO:tool_shell"), assistant, result))
    assert blocks(events)[0]["text"] == "Tool finished: (Bash completed with no output)"
    [record] = server.wait_for(timeout=5)
    assert record.kind == "follow_up" and record.scenario == "tool_shell"


def test_merged_prompt_reads_only_the_last_text_block(server):
    merged = [{"type": "text", "text": "SCENARIO:http500"}, {"type": "text", "text": "try again"}]
    status, _, events = post_sse(server.url, "/v1/messages", body(merged))
    assert status == 200 and blocks(events)[0]["text"] == "Hello from mock"


def test_plain_json_message(server):
    status, payload = post_json(server.url, "/v1/messages", body(prompt("SCENARIO:tool_shell"), stream=False))
    assert status == 200 and payload["type"] == "message" and payload["stop_reason"] == "tool_use"
    assert payload["content"][0]["input"]["command"] == "touch hello.txt"


def test_http_500_and_400(server):
    status, payload = post_json(server.url, "/v1/messages", body(prompt("SCENARIO:http500")))
    assert status == 500 and payload == {"type": "error", "error": {"type": "api_error", "message": "mock internal error"}}
    status, payload = post_json(server.url, "/v1/messages", body(prompt("SCENARIO:http400")))
    assert status == 400 and payload["error"]["type"] == "invalid_request_error"


def test_side_calls_probe_and_title(server):
    probe = {"model": "claude-opus-5-5", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
    status, payload = post_json(server.url, "/v1/messages?beta=true", probe)
    assert status == 200 and payload["content"] == [{"type": "text", "text": "Hi"}]
    title = {"model": "m", "max_tokens": 512, "system": "Generate a title. Reply with JSON.",
             "messages": [{"role": "user", "content": "SCENARIO:http500"}]}
    status, payload = post_json(server.url, "/v1/messages", title)
    assert status == 200 and json.loads(payload["content"][0]["text"])["title"] == "Mock title"
    assert [r.side_call for r in server.wait_for(lambda r: r.kind == "side_call", count=2, timeout=5)] == ["probe", "title"]


def test_head_preconnect_and_count_tokens(server):
    conn = connect(server.url)
    try:
        conn.request("HEAD", "/")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200
    finally:
        conn.close()
    status, payload = post_json(server.url, "/v1/messages/count_tokens", {"messages": []})
    assert status == 200 and payload["input_tokens"] > 0
