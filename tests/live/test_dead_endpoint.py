"""Live: a turn of each pinned CLI whose model endpoint is a port that refuses connections fails
within the instance's ``endpoint_timeout`` (issue #33, item 6), with one ``runtime.error``
(``endpoint.unreachable``) naming the endpoint, and exactly one ``turn.completed`` (``failed``).

Each CLI keeps its own retry policy (the conformance targets cap retries; here they are left at
the CLI's defaults, under which claude retried for 179 s, gemini for 213 s and codex for good)."""

from __future__ import annotations

import socket
import time

import pytest

from paddock import Runtime
from paddock.testing._conformance import live_target

from .conftest import require_peer

pytestmark = [pytest.mark.live, pytest.mark.timeout(150)]

ENDPOINT_TIMEOUT = 5.0
SLACK = 20.0  # the first check after a second of quiet, the agent's stop, its start-up under load


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there once the socket is closed


def _config(kind: str, url: str) -> dict:
    target = live_target(kind)
    assert not isinstance(target, str), target
    config = dict(target.config)
    config.update(endpoint=url, endpoint_timeout=ENDPOINT_TIMEOUT)
    # the CLI's own retry policy, as a user has it
    config["env"] = {k: v for k, v in config.get("env", {}).items() if k != "CLAUDE_CODE_MAX_RETRIES"}
    if "config" in config:
        config["config"] = {k: v for k, v in config["config"].items() if k != "model_providers"}
    return config


@pytest.mark.parametrize("kind", ["claude", "codex", "gemini", "opencode"])
def test_a_dead_endpoint_fails_the_turn_within_endpoint_timeout(kind, tmp_path, workspace):
    require_peer(kind)
    url = _dead_url()
    with Runtime.open({"instances": {"a": _config(kind, url)}}, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="a", cwd=str(workspace), timeout=60)
        seen = []
        with rt.subscribe(thread_id="t") as sub:
            started = time.monotonic()
            turn = rt.send_turn("t", "Reply with one word: hello")
            while (event := sub.get(timeout=ENDPOINT_TIMEOUT + SLACK)) is not None:
                seen.append(event)
                if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                    break
            took = time.monotonic() - started
            while (late := sub.get(timeout=1.0)) is not None:
                seen.append(late)
    kinds = [(e.type, getattr(e, "code", None) or getattr(e, "state", None)) for e in seen]
    print(f"\n{kind}: {took:.1f} s {kinds}")
    completed = [e for e in seen if e.type == "turn.completed"]
    assert len(completed) == 1 and completed[0].state == "failed", kinds
    assert took < ENDPOINT_TIMEOUT + SLACK, f"{kind}: the turn ended after {took:.1f} s: {kinds}"
    errors = [e for e in seen if e.type == "runtime.error" and e.code == "endpoint.unreachable"]
    # the agent may give up by itself first; when the runtime ended the turn it said why, once
    if errors or took >= ENDPOINT_TIMEOUT:
        assert len(errors) == 1 and url in errors[0].message, kinds
        assert url in (completed[0].error or ""), completed[0]
