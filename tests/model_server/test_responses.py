"""OpenAI Responses dialect (Codex), spoken directly over a socket."""

from __future__ import annotations

import json

from ._client import post_json, post_sse

TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object", "required": ["cmd"], "properties": {
        "cmd": {"type": "string"}, "workdir": {}, "sandbox_permissions": {}, "justification": {}}}},
    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark", "definition": "..."}},
    {"type": "function", "name": "view_image", "parameters": {"type": "object", "properties": {"path": {}}}},
]


def user(text):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def body(text, *extra, stream=True):
    return {"model": "gpt-mock", "stream": stream, "tools": TOOLS, "tool_choice": "auto",
            "input": [user("<environment_context>SCENARIO:http500</environment_context>"), user(text), *extra]}


def test_text_streams_three_deltas_in_the_codex_event_order(server):
    status, headers, events = post_sse(server.url, "/v1/responses", body("say hi"))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    names = [e for e, _ in events]
    assert names == ["response.created", "response.output_item.added", "response.content_part.added",
                     "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
                     "response.output_item.done", "response.completed"]
    assert all(data["type"] == name for name, data in events)
    assert "".join(d["delta"] for n, d in events if n.endswith(".delta")) == "Hello from mock"
    done = events[-2][1]["item"]
    assert done["status"] == "completed" and done["content"][0]["text"] == "Hello from mock"
    assert done["id"] == events[1][1]["item"]["id"]
    usage = events[-1][1]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    [record] = server.wait_for(timeout=5)
    assert (record.dialect, record.kind, record.scenario, record.status) == ("responses", "turn", "text", 200)


def test_shell_call_uses_exec_command_with_cmd(server):
    _, _, events = post_sse(server.url, "/v1/responses", body("SCENARIO:tool_shell"))
    added = events[1][1]["item"]
    done = [d for n, d in events if n == "response.output_item.done"][0]["item"]
    assert added["type"] == "function_call" and added["arguments"] == "" and added["name"] == "exec_command"
    assert json.loads(done["arguments"]) == {"cmd": "touch hello.txt"}
    assert done["call_id"] == added["call_id"]


def test_escalated_shell_call_asks_for_require_escalated(server):
    _, _, events = post_sse(server.url, "/v1/responses", body("SCENARIO:tool_shell_escalated"))
    done = [d for n, d in events if n == "response.output_item.done"][0]["item"]
    args = json.loads(done["arguments"])
    assert args["sandbox_permissions"] == "require_escalated" and args["justification"]


def test_patch_is_a_custom_apply_patch_call(server):
    _, _, events = post_sse(server.url, "/v1/responses", body("SCENARIO:patch"))
    done = [d for n, d in events if n == "response.output_item.done"][0]["item"]
    assert done["type"] == "custom_tool_call" and done["name"] == "apply_patch"
    assert done["input"] == "*** Begin Patch\n*** Add File: patched.txt\n+created by apply_patch\n*** End Patch\n"


def test_patch_without_apply_patch_goes_through_the_codex_shell(server):
    # Codex offers no apply_patch tool for a model its catalog lacks; its shell applies the heredoc.
    request = {**body("SCENARIO:patch"), "tools": [TOOLS[0], TOOLS[2]]}
    _, _, events = post_sse(server.url, "/v1/responses", request)
    done = [d for n, d in events if n == "response.output_item.done"][0]["item"]
    assert done["type"] == "function_call" and done["name"] == "exec_command"
    assert json.loads(done["arguments"]) == {"cmd": "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: patched.txt\n"
                                                    "+created by apply_patch\n*** End Patch\nPATCH\n"}


def test_write_without_a_write_tool_says_so_in_text(server):
    _, _, events = post_sse(server.url, "/v1/responses", body("SCENARIO:tool_write"))
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert text.startswith("mock: no write tool offered (tools: exec_command, apply_patch, view_image)")
    assert server.wait_for(timeout=5)[0].note.startswith("mock: no write tool")


def test_follow_up_after_function_call_output_answers_final_text(server):
    call = {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "call_1",
              "output": "Chunk ID: 1\nWall time: 0\nProcess exited with code 0\nOutput:\n"}
    _, _, events = post_sse(server.url, "/v1/responses", body("SCENARIO:tool_shell", call, output))
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert text == "Tool finished: " + output["output"][:60]
    [record] = server.wait_for(timeout=5)
    assert record.kind == "follow_up" and record.segment == 1 and record.tool_calls == ()


def test_follow_up_after_custom_tool_call_output(server):
    output = {"type": "custom_tool_call_output", "call_id": "call_2", "output": "patch rejected by user"}
    _, _, events = post_sse(server.url, "/v1/responses", body("SCENARIO:patch", output))
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert text == "Tool finished: patch rejected by user"


def test_http_500_and_400_bodies(server):
    status, payload = post_json(server.url, "/v1/responses", body("SCENARIO:http500"))
    assert status == 500 and payload == {"error": {"message": "mock internal error", "type": "server_error", "code": None}}
    status, payload = post_json(server.url, "/v1/responses", body("SCENARIO:http400"))
    assert status == 400 and payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["message"] == "mock bad request"


def test_non_streaming_returns_a_response_object(server):
    status, payload = post_json(server.url, "/v1/responses", body("hi", stream=False))
    assert status == 200 and payload["status"] == "completed"
    assert payload["output"][0]["content"][0]["text"] == "Hello from mock"
