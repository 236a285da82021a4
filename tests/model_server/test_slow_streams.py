"""Slow streams and client disconnects in every dialect (what interrupt tests rely on)."""

from __future__ import annotations

import json
import time

import pytest

from paddock.testing import ModelServer

from . import test_anthropic, test_chat, test_gemini, test_responses
from ._client import connect, post_sse

SCRIPT = {"scenarios": {"slowish": [{"type": "text", "text": "a b c d e", "chunks": 5, "delay": 0.1}]}}
DIALECTS = {
    "responses": ("/v1/responses", lambda text: test_responses.body(text),
                  lambda events: [d["delta"] for n, d in events if n == "response.output_text.delta"]),
    "chat": ("/v1/chat/completions", lambda text: test_chat.body(text),
             lambda events: [d["content"] for d in test_chat.deltas(events) if d.get("content")]),
    "anthropic": ("/v1/messages", lambda text: test_anthropic.body(test_anthropic.prompt(text)),
                  lambda events: [d["delta"]["text"] for n, d in events if n == "content_block_delta"]),
    "gemini": (test_gemini.STREAM, lambda text: test_gemini.body(text),
               lambda events: [p["text"] for p in test_gemini.parts(events)]),
}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_slow_text_arrives_in_spaced_chunks(dialect):
    path, body, texts = DIALECTS[dialect]
    with ModelServer(SCRIPT) as server:
        started = time.monotonic()
        status, _, events = post_sse(server.url, path, body("SCENARIO:slowish"))
        elapsed = time.monotonic() - started
    assert status == 200 and texts(events) == ["a ", "b ", "c ", "d ", "e"]
    assert elapsed >= 0.4  # four 0.1 s waits (a lower bound, not a speed test)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_dropping_the_builtin_slow_stream_is_logged(dialect):
    path, body, _ = DIALECTS[dialect]
    with ModelServer() as server:
        conn = connect(server.url)
        conn.request("POST", path, body=json.dumps(body("SCENARIO:slow")), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
        server.wait_stream_started(timeout=5)
        resp.close()
        conn.close()
        [record] = server.wait_for(lambda r: r.client_disconnected, timeout=10)
    assert record.dialect == dialect and record.scenario == "slow" and record.frames_sent < 100
