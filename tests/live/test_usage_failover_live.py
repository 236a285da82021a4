"""Live: ``on_usage_limit = "failover"`` from a pinned codex to a pinned claude (issue 39), each
on a scripted model server of its own (two accounts), behind the tripwire proxy.

Codex's model answers a usage limit (HTTP 429, a reset two minutes ahead) and codex ends the
turn failed; Paddock hands the thread over to the claude instance (a ``fork_thread`` hand-off:
the first turn there carries the transcript of codex's earlier turn) with ``thread.failed-over``,
and the turn completes on claude with no call from the host, long before codex's reset.
"""

from __future__ import annotations

import time

import pytest

from paddock import Runtime
from paddock.testing import ModelServer, RateLimits, Text, UsageLimit

from tests.runtime.test_usage_limits import until

from .test_host_handoff import _instance, proxied  # noqa: F401  (proxied: a fixture)

pytestmark = [pytest.mark.live, pytest.mark.timeout(300)]

LIMITED = {"scenarios": {"usage_limit": [UsageLimit(resets_in=120.0), Text(text="too late", chunks=1)]}}
SPARE = {"scenarios": {"usage_limit": [Text(text="Served by account b", chunks=1)]}}


def test_codex_fails_over_to_claude_on_a_usage_limit(tmp_path, proxied):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ModelServer(LIMITED, workspace=workspace, log_path=tmp_path / "a.jsonl") as a, \
            ModelServer(SPARE, workspace=workspace, log_path=tmp_path / "b.jsonl") as b:
        config = {"runtime": {"on_usage_limit": "failover", "failover": ["claude-b"]},
                  "instances": {"codex-a": _instance("codex", tmp_path / "a", a, proxied),
                                "claude-b": _instance("claude", tmp_path / "b", b, proxied)}}
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            rt.start_session("t", instance="codex-a", cwd=str(workspace), runtime_mode="full-access", timeout=90)
            with rt.subscribe() as sub:
                rt.send_turn("t", "say hi SCENARIO:text", timeout=60)
                until(sub, lambda e: e.type == "turn.completed" and e.thread_id == "t", 90)
                began = time.time()
                rt.send_turn("t", "limited SCENARIO:usage_limit", timeout=60)
                seen = until(sub, lambda e: e.type == "turn.completed" and e.thread_id == "t@claude-b", 180)
            copy = rt.read_thread("t@claude-b").turns
    assert any(e.type == "runtime.error" and e.error_class == "usage_limit" and e.thread_id == "t" for e in seen)
    [moved] = [e for e in seen if e.type == "thread.failed-over"]
    assert (moved.instance_id, moved.to_thread_id, moved.to_instance_id) == ("codex-a", "t@claude-b", "claude-b")
    assert seen[-1].state == "completed" and seen[-1].driver == "claude"
    text = "".join(e.delta for e in seen if e.type == "content.delta" and e.thread_id == "t@claude-b")
    assert "Served by account b" in text and time.time() < began + 120
    assert [t.state for t in copy] == ["completed"]
    # Claude's first request carried codex's earlier turn (the hand-off transcript) and the turn.
    first = next(r for r in b.requests if "SCENARIO:usage_limit" in str(r.body))
    assert "say hi SCENARIO:text" in str(first.body) and "Hello from mock" in str(first.body)


def test_an_instance_whose_account_window_is_used_up_is_skipped(tmp_path, proxied):
    """codex-b's account reported its window at 100 % (an earlier turn of another thread, the
    model server's ``rate_limits`` headers): the failover from codex-a passes it by for claude-c."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    full = {"scenarios": {"rate_limits": [RateLimits(used_percent=100.0, resets_in=600.0), Text(text="full now")]}}
    with ModelServer(LIMITED, workspace=workspace) as a, ModelServer(full, workspace=workspace) as b, \
            ModelServer(SPARE, workspace=workspace) as c:
        config = {"runtime": {"on_usage_limit": "failover", "failover": ["codex-b", "claude-c"]},
                  "instances": {"codex-a": _instance("codex", tmp_path / "a", a, proxied),
                                "codex-b": _instance("codex", tmp_path / "b", b, proxied),
                                "claude-c": _instance("claude", tmp_path / "c", c, proxied)}}
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            rt.start_session("w", instance="codex-b", cwd=str(workspace), runtime_mode="full-access", timeout=90)
            rt.start_session("t", instance="codex-a", cwd=str(workspace), runtime_mode="full-access", timeout=90)
            with rt.subscribe() as sub:
                rt.send_turn("w", "use it up SCENARIO:rate_limits", timeout=60)
                used = until(sub, lambda e: e.type == "turn.completed" and e.thread_id == "w", 90)
                rt.send_turn("t", "limited SCENARIO:usage_limit", timeout=60)
                seen = until(sub, lambda e: e.type == "turn.completed" and e.thread_id.startswith("t@"), 180)
    [window] = [e for e in used if e.type == "account.rate-limits.updated"]
    assert window.limits["windows"][0]["used_percent"] == 100.0
    [moved] = [e for e in seen if e.type == "thread.failed-over"]
    assert (moved.to_thread_id, moved.to_instance_id) == ("t@claude-c", "claude-c")
    assert seen[-1].state == "completed" and seen[-1].driver == "claude"
