"""Live: the claude driver configured only with driver/endpoint/api_key/model (no binary, no env)
finds its pinned CLI and reaches the scripted model server, behind the tripwire proxy."""

from __future__ import annotations

import pytest

from paddock import Runtime

from .conftest import require_peer, turn_text

pytestmark = [pytest.mark.live, pytest.mark.timeout(90)]


def test_claude_with_only_the_model_keys(tmp_path, workspace, model_server, tripwire, monkeypatch):
    require_peer("claude")
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(key, tripwire.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    config = {"instances": {"c": {"driver": "claude", "endpoint": model_server.url + "/v1",
                                  "api_key": "sk-claude-live", "model": "claude-sonnet-4-5"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="c", cwd=str(workspace), runtime_mode="approval-required", timeout=60)
        text, end = turn_text(rt, "t", "say hi SCENARIO:text")
    assert end.state == "completed", end
    assert text == "Hello from mock"
    [call] = [c for c in model_server.model_calls() if c.kind == "turn"]
    assert call.dialect == "anthropic" and call.body["model"] == "claude-sonnet-4-5"


def test_codex_with_only_the_model_keys_edits_a_file(tmp_path, workspace, model_server, tripwire, monkeypatch):
    """docs/mock-model.md's codex instance (no model catalog: the pinned Codex offers no
    ``apply_patch`` tool for a model it has no metadata for) still reaches a file edit with the
    ``patch`` scenario: a ``file_change`` item, and the file on disk."""
    require_peer("codex")
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(key, tripwire.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    config = {"instances": {"x": {"driver": "codex", "endpoint": model_server.url, "api_key": "sk-anything",
                                  "model": "gpt-5.4-mini"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="x", cwd=str(workspace), runtime_mode="full-access", timeout=60)
        seen = []
        with rt.subscribe(thread_id="t") as events:
            turn = rt.send_turn("t", "add a file SCENARIO:patch")
            while not (seen and seen[-1].type == "turn.completed" and seen[-1].turn_id == turn.turn_id):
                event = events.get(timeout=60)
                assert event is not None, "no turn.completed within 60 s"
                seen.append(event)
    assert seen[-1].state == "completed", seen[-1]
    text = "".join(e.delta for e in seen if e.type == "content.delta")
    assert "no write tool" not in text, text
    [edit] = [e for e in seen if e.type == "item.completed" and e.kind == "file_change"]
    assert edit.status == "completed" and edit.title.endswith("patched.txt")
    assert (workspace / "patched.txt").read_text() == "created by apply_patch\n"
    assert not tripwire.hits, tripwire.hits
