"""Gemini API dialect (Gemini CLI), spoken directly over a socket."""

from __future__ import annotations

from ._client import post_json, post_sse

TOOLS = [{"functionDeclarations": [
    {"name": "run_shell_command", "parametersJsonSchema": {"type": "object", "required": ["command"],
                                                            "properties": {"command": {}, "description": {}, "dir_path": {}}}},
    {"name": "write_file", "parametersJsonSchema": {"type": "object", "properties": {"file_path": {}, "content": {}}}},
]}]
STREAM = "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"


def body(text, *extra):
    return {"contents": [{"role": "user", "parts": [{"text": "<session_context>SCENARIO:http500</session_context>"}]},
                         {"role": "user", "parts": [{"text": text}]}, *extra],
            "systemInstruction": {"parts": [{"text": "sys"}]}, "tools": TOOLS,
            "generationConfig": {"temperature": 1}}


def parts(events):
    return [p for _, d in events for p in d["candidates"][0]["content"]["parts"]]


def test_text_stream_has_data_lines_only_and_stop_on_the_last_chunk(server):
    status, headers, events = post_sse(server.url, STREAM, body("hi"))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert all(name is None for name, _ in events)
    assert "".join(p["text"] for p in parts(events)) == "Hello from mock" and len(events) == 3
    assert [d["candidates"][0].get("finishReason") for _, d in events] == [None, None, "STOP"]
    assert events[0][1]["usageMetadata"]["promptTokenCount"] > 0
    [record] = server.wait_for(timeout=5)
    assert record.model == "gemini-3.8-flash" and record.dialect == "gemini"


def test_shell_and_write_function_calls(server, tmp_path):
    _, _, events = post_sse(server.url, STREAM, body("SCENARIO:tool_shell"))
    assert parts(events) == [{"functionCall": {"name": "run_shell_command",
                                               "args": {"command": "touch hello.txt", "description": "Run a scripted shell command"}}}]
    assert events[-1][1]["candidates"][0]["finishReason"] == "STOP"
    _, _, events = post_sse(server.url, STREAM, body("SCENARIO:tool_write"))
    assert parts(events)[0]["functionCall"] == {"name": "write_file", "args": {
        "file_path": str(tmp_path / "ws" / "hello.txt"), "content": "hello from mock\n"}}
    _, _, events = post_sse(server.url, STREAM, body("SCENARIO:patch"))
    assert parts(events)[0]["functionCall"]["name"] == "write_file"


def test_follow_up_after_function_response(server):
    call = {"role": "model", "parts": [{"functionCall": {"name": "write_file", "args": {}},
                                        "thoughtSignature": "skip_thought_signature_validator"}]}
    response = {"role": "user", "parts": [{"functionResponse": {"id": "x", "name": "write_file",
                                                                "response": {"error": 'Tool "write_file" was canceled by the user.'}}}]}
    _, _, events = post_sse(server.url, STREAM, body("SCENARIO:tool_write", call, response))
    assert "".join(p["text"] for p in parts(events)) == 'Tool finished: Tool "write_file" was canceled by the user.'


def test_router_call_is_answered_even_with_an_error_marker(server):
    req = {**body("SCENARIO:http400"), "generationConfig": {
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object", "properties": {"complexity_reasoning": {"type": "string"},
                                                                "complexity_score": {"type": "integer"}}}}}
    status, payload = post_json(server.url, "/v1beta/models/gemini-3.5-flash-lite:generateContent", req)
    assert status == 200
    text = payload["candidates"][0]["content"]["parts"][0]["text"]
    assert text == '{"complexity_reasoning":"mock","complexity_score":10}'
    assert server.wait_for(lambda r: r.kind == "side_call", timeout=5)[0].side_call == "router"


def test_non_streaming_generate_content_plays_the_scenario(server):
    status, payload = post_json(server.url, "/v1beta/models/m:generateContent", body("SCENARIO:tool_shell"))
    assert status == 200 and payload["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "run_shell_command"


def test_http_400_and_500_and_count_tokens(server):
    status, payload = post_json(server.url, STREAM, body("SCENARIO:http400"))
    assert status == 400 and payload == {"error": {"code": 400, "message": "mock bad request", "status": "INVALID_ARGUMENT"}}
    status, payload = post_json(server.url, STREAM, body("SCENARIO:http500"))
    assert status == 500 and payload["error"]["status"] == "INTERNAL"
    status, payload = post_json(server.url, "/v1beta/models/m:countTokens", body("x"))
    assert status == 200 and payload["totalTokens"] > 0
