"""The ``rate_limits`` scenario (issue 39): a reply whose headers carry the account's window in
the form the dialect's CLI reads (Codex's ``x-codex-primary-*``, Anthropic's unified
``anthropic-ratelimit-unified-*``), streamed or not; the text plays as usual."""

from __future__ import annotations

import time

import pytest

from paddock.testing import ModelServer

from . import test_anthropic, test_chat, test_responses
from ._client import post

pytestmark = pytest.mark.timeout(60)

MARK = "SCENARIO:rate_limits"


@pytest.mark.parametrize("stream", [True, False])
def test_responses_carry_codex_window_headers(tmp_path, stream):
    with ModelServer(workspace=tmp_path) as server:
        began = time.time()
        status, headers, raw = post(server.url, "/v1/responses", test_responses.body(MARK, stream=stream))
    headers = {k.lower(): v for k, v in headers.items()}
    assert status == 200 and b"Counted against the window" in raw
    assert (headers["x-codex-primary-used-percent"], headers["x-codex-primary-window-minutes"]) == ("42", "300")
    assert began + 3590 <= int(headers["x-codex-primary-reset-at"]) <= time.time() + 3600


@pytest.mark.parametrize("stream", [True, False])
def test_anthropic_carries_the_unified_window_headers(tmp_path, stream):
    script = {"scenarios": {"rate_limits": [{"type": "rate_limits", "used_percent": 85, "resets_in": 600,
                                             "status": "allowed_warning"}, {"type": "text", "text": "ok"}]}}
    with ModelServer(script, workspace=tmp_path) as server:
        began = time.time()
        status, headers, raw = post(server.url, "/v1/messages",
                                    test_anthropic.body(test_anthropic.prompt(MARK), stream=stream))
    headers = {k.lower(): v for k, v in headers.items()}
    assert status == 200
    assert headers["anthropic-ratelimit-unified-status"] == "allowed_warning"
    assert headers["anthropic-ratelimit-unified-5h-utilization"] == "0.85"
    assert began + 590 <= int(headers["anthropic-ratelimit-unified-reset"]) <= time.time() + 600


def test_other_dialects_and_other_scenarios_send_no_window(tmp_path):
    with ModelServer(workspace=tmp_path) as server:
        _, chat, _ = post(server.url, "/v1/chat/completions", test_chat.body(MARK))
        _, plain, _ = post(server.url, "/v1/responses", test_responses.body("SCENARIO:text"))
    assert not [k for k in {**chat, **plain} if "ratelimit" in k.lower() or k.lower().startswith("x-codex")]
