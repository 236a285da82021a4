"""Live, against the scripted model server: the first-turn preamble reaches the model exactly
once per live session on the real CLIs, and ``generate_text`` returns the scripted text on every
installed driver and leaves nothing behind (no binding, no listed session, no process).

Each driver is configured as a user would (the pinned binary, the offline environment); proxy
variables point at the tripwire, so a non-loopback connection fails the test.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from paddock import Runtime
from paddock.testing import MOCK_KEY, ModelServer, build_offline_env

from tests.codex.conftest import offline_config as codex_offline_config
from tests.conftest import _living_descendants
from .conftest import Tripwire, require_peer, turn_text

pytestmark = [pytest.mark.live, pytest.mark.timeout(240)]

MARK = "GROUNDING-MARK-5521"
PREAMBLE = f"{MARK}: you are helping on the Paddock repository; keep answers short."
ACP_MODELS = {  # as tests/live/test_acp_flavors.py configures them
    "gemini": "gemini-2.5-flash",
    "qwen": "qwen3-coder",
    "claude-acp": "claude-sonnet-4-5",
    "copilot": "gpt-4.1",
    "codex-acp": "gpt-5.4-mini",
}
_PROXY_KEYS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def _instance(driver: str, root: Path, server: ModelServer, tripwire: Tripwire) -> dict:
    """The instance table a user would write for ``driver`` against the model server."""
    if driver == "claude":
        _, argv = require_peer("claude")
        offline = build_offline_env("claude", root / "env", model_url=server.url, proxy_url=tripwire.url)
        return {"driver": "claude", "binary": argv[0], "model": offline.model, "env": offline.env}
    if driver == "codex":
        require_peer("codex")
        offline = build_offline_env("codex", root / "env", model_url=server.url, proxy_url=tripwire.url)
        proxies = {k: v for k, v in offline.env.items() if k.upper().endswith("_PROXY")}
        return {"driver": "codex", **codex_offline_config(server.url), "env": proxies}
    if driver == "opencode":
        require_peer("opencode")
        offline = build_offline_env("opencode", root / "env", model_url=server.url, proxy_url=tripwire.url)
        return {"driver": "opencode", "endpoint": server.url, "api_key": MOCK_KEY, "model": "mock-model",
                "env": offline.env}
    require_peer(driver)
    return {"driver": driver, "endpoint": server.url, "api_key": "sk-paddock-live-test-key",
            "model": ACP_MODELS[driver]}


@contextlib.contextmanager
def one_agent(driver: str, tmp_path: Path, tripwire: Tripwire) -> Iterator[tuple[ModelServer, dict, Path]]:
    """The scripted model server and a config of one instance ``agent`` of ``driver`` on it
    (:func:`_instance`): yields (server, config, workspace); the server stops when the block ends."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ModelServer(workspace=workspace, log_path=tmp_path / "model-requests.jsonl") as server:
        yield server, {"instances": {"agent": _instance(driver, tmp_path, server, tripwire)}}, workspace


@pytest.fixture
def proxied(monkeypatch):
    """Every proxy variable at the tripwire (the ACP flavors inherit them from the host)."""
    wire = Tripwire()
    for key in _PROXY_KEYS:
        monkeypatch.setenv(key, wire.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    try:
        yield wire
    finally:
        wire.close()
    assert not wire.hits, f"a CLI tried to leave 127.0.0.1: {wire.hits}"


def _marks(record) -> int:
    return json.dumps(record.body).count(MARK)


@pytest.mark.parametrize("driver", ["claude", "codex", "gemini", "qwen", "claude-acp", "codex-acp", "copilot",
                                    "opencode"])
def test_the_model_sees_the_preamble_once_in_the_first_request(driver, tmp_path, proxied):
    with one_agent(driver, tmp_path, proxied) as (server, config, workspace):
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            # codex-acp honours full-access only (its native modes run commands unasked)
            mode = "full-access" if driver == "codex-acp" else "approval-required"
            rt.start_session("t1", instance="agent", cwd=str(workspace), runtime_mode=mode,
                             preamble=PREAMBLE, timeout=120)
            first_text, first = turn_text(rt, "t1", "FIRST-PROMPT say hi SCENARIO:text", timeout=120)
            turns_before = len([r for r in server.requests if r.kind == "turn"])
            second_text, second = turn_text(rt, "t1", "SECOND-PROMPT again SCENARIO:text", timeout=120)
            snapshot = rt.read_thread("t1")
        turns = [r for r in server.requests if r.kind == "turn"]
    assert first.state == "completed" and second.state == "completed", (first, second)
    assert first_text == "Hello from mock"
    first_request = next(r for r in turns if "FIRST-PROMPT" in json.dumps(r.body))
    assert _marks(first_request) == 1, json.dumps(first_request.body)[:2000]
    second_request = next(r for r in turns[turns_before:] if "SECOND-PROMPT" in json.dumps(r.body))
    # The second turn adds no copy: the one it carries is the first message, in the history.
    assert _marks(second_request) == 1 and MARK not in (second_request.prompt_text or "")
    assert [t.user_text for t in snapshot.turns] == ["FIRST-PROMPT say hi SCENARIO:text",
                                                      "SECOND-PROMPT again SCENARIO:text"]


@pytest.mark.parametrize("driver", ["claude", "codex", "opencode", "gemini", "qwen", "claude-acp", "copilot",
                                    "codex-acp"])
def test_generate_text_returns_the_scripted_text_and_leaves_nothing(driver, tmp_path, proxied):
    with one_agent(driver, tmp_path, proxied) as (server, config, workspace):
        before = set(_living_descendants())
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            text = rt.generate_text("agent", "a title for this thread SCENARIO:text", timeout=180)
            assert text == "Hello from mock"
            assert rt.list_sessions() == [] and rt.list_threads() == []
            left = {pid: p for pid, p in _living_descendants().items() if pid not in before}
            assert not left, [" ".join(p.cmdline())[:200] for p in left.values()]
        assert server.wait_for(lambda r: r.kind == "turn", timeout=5)
    assert os.listdir(tmp_path / "state" / "instances" / "agent" / "generate") == []


def _agents() -> list:
    """The agent processes: the direct children of each orphan-guard shim of this test."""
    shims = [p for p in _living_descendants().values() if any(a.endswith("_shim.py") for a in p.cmdline()[:4])]
    return [child for shim in shims for child in shim.children()]


@pytest.mark.parametrize("driver", ["claude", "codex", "gemini"])
def test_after_kill_9_and_the_resume_the_model_sees_one_full_copy_again(driver, tmp_path, proxied):
    with one_agent(driver, tmp_path, proxied) as (server, config, workspace):
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            rt.start_session("t1", instance="agent", cwd=str(workspace), runtime_mode="approval-required",
                             preamble=PREAMBLE, timeout=120)
            _, first = turn_text(rt, "t1", "FIRST-PROMPT remember OSPREY SCENARIO:text", timeout=120)
            [agent] = _agents()
            with rt.subscribe(thread_id="t1", types=["session.exited"]) as exits:
                agent.kill()
                exited = exits.get(timeout=30)
            _, after = turn_text(rt, "t1", "AFTER-PROMPT what was it? SCENARIO:text", timeout=120)
        turns = [r for r in server.requests if r.kind == "turn"]
    assert exited is not None and exited.recoverable and first.state == "completed" and after.state == "completed"
    last = next(r for r in reversed(turns) if "AFTER-PROMPT" in json.dumps(r.body))
    # The new incarnation's prompt carries one full copy; a history the agent restored holds the
    # first one too (its message has OSPREY). Whether it restored it is the driver's resume.
    restored = "OSPREY" in json.dumps(last.body)
    assert MARK in (last.prompt_text or "") and _marks(last) == 1 + restored, json.dumps(last.body)[:3000]
