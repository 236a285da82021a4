"""Claude Code's stream-json decoded at the edge (``drivers/claude/_wire.py``): every line the
pinned CLI printed in the protocol transcripts decodes to its typed Struct; unknown types and
unknown fields are tolerated; a known type with a bad shape is a :class:`Malformed`."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from paddock.drivers.claude._wire import (
    ApiRetry,
    Assistant,
    ControlRequest,
    ControlResponse,
    Malformed,
    RateLimitEvent,
    RateLimitInfo,
    Result,
    StreamEvent,
    System,
    SystemInit,
    Unknown,
    User,
    decode_init_answer,
    decode_line,
    decode_mcp_answer,
)

# Copies of shared/protocols/recordings/claude-*: 2.1.197 and 2.1.332 (scenarios text,
# permission, interrupt, resume), the misc one, and a one-shot run whose model answered HTTP 500.
TRANSCRIPTS = Path(__file__).with_name("transcripts")


def _cli_lines() -> list[bytes]:
    lines = []
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        for raw in path.read_text().splitlines():
            record = json.loads(raw)
            if "dir" not in record:  # a raw stdout line (the one-shot runs)
                lines.append(raw.encode())
            elif record["dir"] == "cli->host" and isinstance(record.get("msg"), dict):
                lines.append(json.dumps(record["msg"]).encode())
    return lines


def test_every_recorded_line_decodes_to_its_struct():
    decoded = [decode_line(line) for line in _cli_lines()]
    assert len(decoded) > 150
    assert not [m for m in decoded if isinstance(m, (Unknown, Malformed))]
    kinds = {type(m) for m in decoded}
    assert {Assistant, User, StreamEvent, Result, SystemInit, System, ControlRequest, ControlResponse, ApiRetry} <= kinds
    init = next(m for m in decoded if isinstance(m, ControlResponse) and b'"models"' in bytes(m.response.response))
    models = decode_init_answer(init.response.response).models
    assert models and all(isinstance(m.value, str) for m in models)


def test_the_fields_the_driver_reads_are_decoded():
    [retry] = [m for m in map(decode_line, _cli_lines()) if isinstance(m, ApiRetry)][:1]
    assert retry.detail["error_status"] == 500 and retry.detail["max_retries"] == 2 and set(retry.detail) == {
        "attempt", "max_retries", "retry_delay_ms", "error_status", "error"}
    ask = next(m for m in map(decode_line, _cli_lines()) if isinstance(m, ControlRequest))
    assert ask.request.subtype == "can_use_tool" and ask.request.tool_name and ask.request.input
    done = next(m for m in map(decode_line, _cli_lines()) if isinstance(m, Result) and not m.is_error)
    assert done.usage is not None and done.usage.output_tokens and done.stop_reason == "end_turn"


def test_unknown_types_and_fields_are_tolerated():
    assert decode_line(b'{"type":"conversation_reset","x":1}') == Unknown("conversation_reset")
    assert decode_line(b'{"no_type":1}') == Unknown(None)
    other = decode_line(b'{"type":"system","subtype":"task_started","model":{"not":"a string"}}')
    assert isinstance(other, System) and other.subtype == "task_started"
    msg = decode_line(b'{"type":"assistant","new_field":[1],"message":{"id":"m","content":'
                      b'[{"type":"server_tool_use","id":"s","weird":{}}]}}')
    assert isinstance(msg, Assistant) and msg.message.content[0].type == "server_tool_use"


def test_a_known_type_with_a_bad_shape_is_malformed():
    bad = decode_line(b'{"type":"result","usage":"lots"}')
    assert isinstance(bad, Malformed) and bad.type == "result" and "$.usage" in bad.error
    bad_init = decode_line(b'{"type":"system","subtype":"init","mcp_servers":"none"}')
    assert isinstance(bad_init, Malformed) and bad_init.type == "system/init"


@pytest.mark.parametrize("line", [b"not json", b"[1, 2]", b'"text"'])
def test_a_line_that_is_not_an_object_raises(line):
    with pytest.raises(msgspec.DecodeError):
        decode_line(line)


def test_control_answers_of_another_shape_decode_empty():
    assert decode_init_answer(msgspec.Raw(b'{"models":"x"}')).models is None
    assert decode_mcp_answer(msgspec.Raw(b"null")).mcpServers is None


def test_a_rate_limit_event_decodes_with_its_window():
    # As the pinned 2.1.197 printed it (a claude.ai login, the model server's rate_limits headers).
    line = (b'{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796681641,'
            b'"rateLimitType":"five_hour","isUsingOverage":false},"uuid":"c359fe28-d2af-441d-afea-ab06bd0bb46b",'
            b'"session_id":"0340c742-de15-415b-b746-6dbe98aff6b4"}')
    assert decode_line(line) == RateLimitEvent(rate_limit_info=RateLimitInfo(
        status="allowed", resetsAt=1796681641, rateLimitType="five_hour", isUsingOverage=False))
    assert isinstance(decode_line(b'{"type":"rate_limit_event","rate_limit_info":[]}'), Malformed)
