"""OpenAI Chat Completions dialect (OpenCode, Qwen Code, Copilot), spoken directly over a socket."""

from __future__ import annotations

import json

from ._client import post_json, post_sse

OPENCODE_TOOLS = [
    {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "required": ["command"],
                                                                      "properties": {"command": {}, "timeout": {}, "workdir": {}, "description": {}}}}},
    {"type": "function", "function": {"name": "write", "parameters": {"type": "object", "properties": {"filePath": {}, "content": {}}}}},
]
QWEN_TOOLS = [
    {"type": "function", "function": {"name": "run_shell_command", "parameters": {"properties": {"command": {}, "directory": {}}}}},
    {"type": "function", "function": {"name": "write_file", "parameters": {"properties": {"file_path": {}, "content": {}}}}},
]
COPILOT_TOOLS = [
    {"type": "function", "function": {"name": "bash", "parameters": {"required": ["command", "description"],
                                                                      "properties": {"command": {}, "description": {}, "mode": {}}}}},
    {"type": "function", "function": {"name": "create", "parameters": {"properties": {"path": {}, "file_text": {}}}}},
]


def body(content, *extra, tools=OPENCODE_TOOLS, stream=True):
    return {"model": "mock-model", "stream": stream, "stream_options": {"include_usage": True}, "tools": tools,
            "messages": [{"role": "system", "content": "You are a coding agent."},
                         {"role": "user", "content": "SCENARIO:http500 (old turn)"},
                         {"role": "assistant", "content": "older answer"},
                         {"role": "user", "content": content}, *extra]}


def deltas(events):
    return [d["choices"][0]["delta"] for _, d in events if isinstance(d, dict) and d.get("choices")]


def tool_call(events):
    calls = [tc for d in deltas(events) for tc in d.get("tool_calls", [])]
    first = calls[0]
    args = "".join(tc["function"]["arguments"] for tc in calls)
    return first["id"], first["function"]["name"], json.loads(args)


def test_text_stream_ends_with_usage_and_done(server):
    status, headers, events = post_sse(server.url, "/v1/chat/completions", body("hi"))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    ds = deltas(events)
    assert ds[0] == {"role": "assistant", "content": ""}
    assert [d["content"] for d in ds[1:4]] == ["Hello ", "from ", "mock"]
    finish = [d["choices"][0]["finish_reason"] for _, d in events if isinstance(d, dict) and d.get("choices")]
    assert finish[-1] == "stop" and set(finish[:-1]) == {None}
    assert events[-2][1]["choices"] == [] and events[-2][1]["usage"]["total_tokens"] > 0
    assert events[-1] == (None, "[DONE]")


def test_shell_tool_name_and_argument_fragments_follow_the_offered_tools(server):
    for tools, name, args in (
        (OPENCODE_TOOLS, "bash", {"command": "touch hello.txt", "description": "Run a scripted shell command"}),
        (QWEN_TOOLS, "run_shell_command", {"command": "touch hello.txt"}),
        (COPILOT_TOOLS, "bash", {"command": "touch hello.txt", "description": "Run a scripted shell command"}),
    ):
        _, _, events = post_sse(server.url, "/v1/chat/completions", body("SCENARIO:tool_shell", tools=tools))
        call_id, got_name, got_args = tool_call(events)
        assert (got_name, got_args) == (name, args)
        assert call_id.startswith("call_")
        assert deltas(events)[-1] == {} and events[-3][1]["choices"][0]["finish_reason"] == "tool_calls"
        assert len([d for d in deltas(events) if "tool_calls" in d]) > 2  # arguments arrive in slices


def test_write_tool_uses_each_clis_field_names_and_an_absolute_path(server, tmp_path):
    expected = str(tmp_path / "ws" / "hello.txt")
    for tools, name, keys in ((OPENCODE_TOOLS, "write", ("filePath", "content")),
                              (QWEN_TOOLS, "write_file", ("file_path", "content")),
                              (COPILOT_TOOLS, "create", ("path", "file_text"))):
        _, _, events = post_sse(server.url, "/v1/chat/completions", body("SCENARIO:tool_write", tools=tools))
        _, got_name, args = tool_call(events)
        assert got_name == name and args == {keys[0]: expected, keys[1]: "hello from mock\n"}


def test_patch_falls_back_to_the_write_tool(server, tmp_path):
    _, _, events = post_sse(server.url, "/v1/chat/completions", body("SCENARIO:patch"))
    _, name, args = tool_call(events)
    assert name == "write" and args == {"filePath": str(tmp_path / "ws" / "patched.txt"), "content": "created by apply_patch\n"}


def test_follow_up_after_tool_message_string_or_parts(server):
    assistant = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}
    for content in ("(no output)", [{"type": "text", "text": "(no output)"}]):
        tool = {"role": "tool", "tool_call_id": "call_1", "content": content}
        _, _, events = post_sse(server.url, "/v1/chat/completions", body("SCENARIO:tool_shell", assistant, tool))
        assert "".join(d.get("content") or "" for d in deltas(events)) == "Tool finished: (no output)"
    assert [r.kind for r in server.wait_for(timeout=5, count=2)] == ["follow_up", "follow_up"]


def test_qwen_style_list_content_and_copilot_datetime_prefix_still_find_the_marker(server):
    content = [{"type": "text", "text": "<current_datetime>now</current_datetime>\n\nSCENARIO:tool_shell"}]
    _, _, events = post_sse(server.url, "/v1/chat/completions", body(content, tools=QWEN_TOOLS))
    assert tool_call(events)[1] == "run_shell_command"


def test_plain_json_answer(server):
    status, payload = post_json(server.url, "/v1/chat/completions", body("SCENARIO:tool_shell", stream=False))
    assert status == 200 and payload["object"] == "chat.completion"
    choice = payload["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"])["command"] == "touch hello.txt"
    status, payload = post_json(server.url, "/v1/chat/completions", body("hi", stream=False))
    assert payload["choices"][0]["message"]["content"] == "Hello from mock"


def test_http_400_and_500(server):
    status, payload = post_json(server.url, "/v1/chat/completions", body("SCENARIO:http400"))
    assert status == 400 and payload["error"]["message"] == "mock bad request"
    status, payload = post_json(server.url, "/v1/chat/completions", body("SCENARIO:http500"))
    assert status == 500 and payload["error"] == {"message": "mock internal error", "type": "server_error", "code": None}


def test_opencode_title_generation_is_a_side_call_that_ignores_markers(server):
    req = {"model": "mock-model", "stream": True, "messages": [
        {"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
        {"role": "user", "content": "SCENARIO:http500"}]}
    status, _, events = post_sse(server.url, "/v1/chat/completions", req)
    assert status == 200
    assert "".join(d.get("content") or "" for d in deltas(events)) == "Mock title"
    [record] = server.wait_for(lambda r: r.kind == "side_call", timeout=5)
    assert record.side_call == "title"
