"""The ``usage_limit`` scenario in each dialect (issue 39): HTTP 429 with the provider's body and
reset headers, and a message that says when it resets, until the window ends; then the scenario
plays on."""

from __future__ import annotations

import json
import time

import pytest

from paddock.contract import usage_limit_of
from paddock.testing import ModelServer

from . import test_anthropic, test_chat, test_gemini, test_responses
from ._client import post, post_sse

pytestmark = pytest.mark.timeout(60)

MARK = "SCENARIO:usage_limit"
DIALECTS = {
    "anthropic": ("/v1/messages", lambda: test_anthropic.body(test_anthropic.prompt(MARK))),
    "responses": ("/v1/responses", lambda: test_responses.body(MARK)),
    "chat": ("/v1/chat/completions", lambda: test_chat.body(MARK)),
    "gemini": (test_gemini.STREAM, lambda: test_gemini.body(MARK)),
}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_usage_limit_is_429_in_the_dialects_shape_until_it_resets(tmp_path, dialect):
    path, make = DIALECTS[dialect]
    script = {"scenarios": {"usage_limit": [{"type": "usage_limit", "resets_in": 2},
                                            {"type": "text", "text": "Back after the reset", "chunks": 1}]}}
    server = ModelServer(script, workspace=tmp_path / "ws").start()
    try:
        began = time.time()
        status, headers, raw = post(server.url, path, make())
        assert status == 429, raw
        headers = {k.lower(): v for k, v in headers.items()}
        assert 1 <= int(headers["retry-after"]) <= 3
        error = json.loads(raw)["error"]
        limited, resets_at = usage_limit_of(error["message"], now=began)
        assert limited and began + 1 <= resets_at <= began + 3.5
        if dialect == "anthropic":
            assert error["type"] == "rate_limit_error" and headers["anthropic-ratelimit-requests-reset"].endswith("Z")
        elif dialect in ("responses", "chat"):
            assert error["code"] == "rate_limit_exceeded" and headers["x-ratelimit-reset-requests"].endswith("s")
            assert error["resets_at"] == int(resets_at)
        else:
            assert error["status"] == "RESOURCE_EXHAUSTED"
            assert error["details"][0]["@type"].endswith("RetryInfo")
        again, _, _ = post(server.url, path, make())
        assert again == 429  # still inside the window
        time.sleep(max(0.0, resets_at - time.time()) + 0.1)
        status, _, events = post_sse(server.url, path, make())
        assert status == 200
        assert "Back after the reset" in json.dumps(events)
    finally:
        server.stop()
