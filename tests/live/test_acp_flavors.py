"""Live: every pinned ACP flavor (gemini, qwen, claude-acp, copilot, codex-acp) through the
public Runtime, configured ONLY with ``driver``, ``endpoint``, ``api_key`` and ``model`` against
the scripted model server, with every proxy variable pointing at the tripwire (a non-loopback
connection fails the test).

One scenario module parametrized over the flavors; each flavor's agent process is started once
(module fixture) and serves every test's session, except the resume test, which needs two
fresh processes of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from paddock import Runtime
from paddock.testing import ModelServer, Patch, Shell, Text, collect_turn

from .conftest import Tripwire, require_peer

pytestmark = [pytest.mark.live, pytest.mark.timeout(120)]

# The model each flavor is configured with (any name the model server accepts; codex-acp's
# bundled Codex core knows gpt-5.4-mini, so it prints no "model metadata not found" warning).
MODELS = {
    "gemini": "gemini-2.5-flash",
    "qwen": "qwen3-coder",
    "claude-acp": "claude-sonnet-4-5",
    "copilot": "gpt-4.1",
    "codex-acp": "gpt-5.4-mini",
}
KEY = "sk-paddock-live-test-key"
SCRIPT = {
    "scenarios": {
        # apply_patch where the agent offers it (codex-acp), else its write-file tool.
        "write_accept": [Patch(path="accepted.txt", content="accepted by the host\n")],
        "write_decline": [Patch(path="declined.txt", content="must not exist\n")],
        "stream": [Text(text="".join(f"tick{i} " for i in range(200)), chunks=200, delay=0.1)],
        # Not `touch`: Claude Code's acceptEdits mode runs it unasked as a file edit.
        "restart_shell": [Shell(command="python3 -c \"open('restart-shell.txt', 'w').close()\"")],
    }
}
_PROXY_KEYS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def _config(flavor: str, server: ModelServer) -> dict:
    return {"instances": {"agent": {"driver": flavor, "endpoint": server.url, "api_key": KEY, "model": MODELS[flavor]}}}


class Live:
    def __init__(self, flavor: str, rt: Runtime, server: ModelServer, workspace: Path, tripwire: Tripwire) -> None:
        self.flavor = flavor
        self.rt = rt
        self.server = server
        self.workspace = workspace
        self.tripwire = tripwire
        self.baseline = 0
        self._n = 0

    def thread(self, runtime_mode: str = "approval-required") -> str:
        self._n += 1
        thread_id = f"{self.flavor}-{self._n}"
        self.rt.start_session(thread_id, instance="agent", cwd=str(self.workspace), runtime_mode=runtime_mode,
                              timeout=60)
        return thread_id


def _proxied(tripwire: Tripwire) -> dict[str, str | None]:
    saved = {k: os.environ.get(k) for k in (*_PROXY_KEYS, "NO_PROXY", "no_proxy")}
    for key in _PROXY_KEYS:
        os.environ[key] = tripwire.url
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    return saved


def _restore(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module", params=sorted(MODELS))
def live(request, tmp_path_factory):
    flavor = request.param
    require_peer(flavor)
    root = tmp_path_factory.mktemp(flavor)
    workspace = root / "workspace"
    workspace.mkdir()
    tripwire = Tripwire()
    saved = _proxied(tripwire)
    try:
        with ModelServer(SCRIPT, workspace=workspace, log_path=root / "model-requests.jsonl") as server:
            with Runtime.open(_config(flavor, server), state_dir=root / "state") as rt:
                agent = Live(flavor, rt, server, workspace, tripwire)
                agent.thread()  # starts the agent process before the first test counts processes
                agent.baseline = len(psutil.Process().children(recursive=True))
                yield agent
    finally:
        _restore(saved)
        tripwire.close()
    assert not tripwire.hits, f"{flavor} tried to leave 127.0.0.1: {tripwire.hits}"


def _turn(rt: Runtime, thread_id: str, text: str, *, on_event=None, timeout: float = 60.0) -> list:
    """Send a turn and collect its events up to its turn.completed."""
    return collect_turn(rt, thread_id, text, timeout=timeout, on_event=on_event)


def _settle(live: Live, timeout: float = 10.0) -> None:
    """Wait until the agent's process tree is back to its size at start: claude-agent-acp ends
    the Claude Code child of a closed session asynchronously (more than a second under load)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(psutil.Process().children(recursive=True)) <= live.baseline:
            return
        time.sleep(0.05)


def _text(events: list) -> str:
    return "".join(e.delta for e in events if e.type == "content.delta" and e.stream == "assistant_text")


def _end(events: list):
    return events[-1]


def test_simple_and_multi_turn(live):
    thread_id = live.thread()
    first = _turn(live.rt, thread_id, "say hi SCENARIO:text")
    assert _end(first).state == "completed", _end(first)
    assert _text(first) == "Hello from mock"
    second = _turn(live.rt, thread_id, "remember the word OSPREY SCENARIO:text")
    assert _end(second).state == "completed"
    last = [c for c in live.server.model_calls() if c.kind == "turn"][-1]
    # Multi-turn: the second model call carries the first exchange.
    assert "say hi" in str(last.body) and "Hello from mock" in str(last.body)
    live.rt.stop_session(thread_id)
    _settle(live)
    assert not live.tripwire.hits


def test_approval_accept_and_decline_on_disk(live):
    accepted = live.workspace / "accepted.txt"
    declined = live.workspace / "declined.txt"
    for decision, scenario, path in (("accept", "write_accept", accepted), ("decline", "write_decline", declined)):
        thread_id = live.thread("approval-required")
        opened: list = []

        def answer(event, turn, decision=decision, thread_id=thread_id):
            if event.type == "request.opened":
                opened.append(event)
                live.rt.respond_to_request(thread_id, event.request_id, decision)

        events = _turn(live.rt, thread_id, f"write the file SCENARIO:{scenario}", on_event=answer)
        assert opened and opened[0].kind == "file_change", [e.type for e in events]
        resolved = [e for e in events if e.type == "request.resolved"]
        assert [(r.resolution, r.decision) for r in resolved] == [("answered", decision)]
        # codex-acp's only reject option is "abort" (Codex ends the turn itself): cancelled.
        expected = "cancelled" if decision == "decline" and live.flavor == "codex-acp" else "completed"
        assert _end(events).state == expected, _end(events)
        live.rt.stop_session(thread_id)
        _settle(live)
    assert accepted.read_text() == "accepted by the host\n"
    assert not declined.exists()


def _interrupt_when(condition):
    def on_event(event, turn, state={"sent": False}):
        if not state["sent"] and condition(event):
            state["sent"] = True
            on_event.rt.interrupt_turn(event.thread_id, turn.turn_id)
    return on_event


def test_cancel_mid_stream_ends_interrupted(live):
    thread_id = live.thread()
    on_event = _interrupt_when(lambda e: e.type == "content.delta")
    on_event.rt = live.rt
    events = _turn(live.rt, thread_id, "stream a lot SCENARIO:stream", on_event=on_event)
    assert _end(events).state == "interrupted", _end(events)
    assert "tick199" not in _text(events)
    live.rt.stop_session(thread_id)
    _settle(live)


def test_cancel_50ms_after_the_prompt_ends_interrupted(live):
    thread_id = live.thread()
    with live.rt.subscribe(thread_id=thread_id) as events:
        turn = live.rt.send_turn(thread_id, "stream a lot SCENARIO:stream")
        time.sleep(0.05)  # the scenario itself: a cancel 50 ms after the prompt
        live.rt.interrupt_turn(thread_id, turn.turn_id)
        end = None
        deadline = time.monotonic() + 40
        while end is None and time.monotonic() < deadline:
            event = events.get(timeout=max(0.0, deadline - time.monotonic()))
            if event is not None and event.type == "turn.completed" and event.turn_id == turn.turn_id:
                end = event
    assert end is not None and end.state == "interrupted", end
    # The agent is still usable afterwards. (Known: claude-agent-acp can stream one chunk of the
    # cancelled prompt after its cancelled result; ACP updates name no turn, so that chunk lands
    # at the start of the next turn.)
    after = _turn(live.rt, thread_id, "say hi SCENARIO:text")
    assert _end(after).state == "completed" and _text(after).endswith("Hello from mock")
    live.rt.stop_session(thread_id)
    _settle(live)


def test_model_http_error_ends_failed_with_the_message(live):
    thread_id = live.thread()
    events = _turn(live.rt, thread_id, "this fails SCENARIO:http400")
    end = _end(events)
    assert end.state == "failed", end
    assert "mock bad request" in (end.error or ""), end.error
    live.rt.stop_session(thread_id)
    _settle(live)


def _started(rt: Runtime, thread_id: str, runtime_mode: str, workspace: Path):
    """start_session on a thread that is live: it restarts in ``runtime_mode``; the Session and
    its session.started event."""
    with rt.subscribe(thread_id=thread_id) as events:
        session = rt.start_session(thread_id, instance="agent", cwd=str(workspace), runtime_mode=runtime_mode,
                                   timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            event = events.get(timeout=max(0.0, deadline - time.monotonic()))
            if event is not None and event.type == "session.started":
                return session, event
    raise AssertionError("no session.started after the restart")


def test_restart_in_a_stricter_mode_resumes_and_asks(live):
    """A thread restarted from full-access into approval-required on the same agent process
    resumes its session and asks before a command; declined, nothing runs. Several cycles: the
    stop's session/close and the restart's session/load race in the agent. claude-agent-acp
    answered the load from the session it was still closing (mode bypassPermissions), took the
    set_mode on it, then dropped it: the command's turn failed "Session not found" unasked, or
    the resume fell back to a new session (history lost)."""
    thread_id = live.thread("full-access")
    target = live.workspace / "restart-shell.txt"
    for cycle in range(3):
        assert _end(_turn(live.rt, thread_id, f"cycle {cycle} SCENARIO:text")).state == "completed"
        session, started = _started(live.rt, thread_id, "approval-required", live.workspace)
        if live.flavor == "gemini":
            # Gemini CLI 0.61 cannot load a session in its first minute: a new one, said so.
            assert session.resumed or (started.resume_failed and "first minute" in (started.detail or "")), started
        else:
            assert session.resumed and not started.resume_failed, started
        opened: list = []

        def decline(event, turn):
            if event.type == "request.opened":
                opened.append(event)
                live.rt.respond_to_request(thread_id, event.request_id, "decline")

        events = _turn(live.rt, thread_id, "run the command SCENARIO:restart_shell", on_event=decline)
        assert [e.kind for e in opened] == ["command"], [(e.type, getattr(e, "error", None)) for e in events]
        assert not target.exists(), "the declined command ran"
        # codex-acp's only reject option is "abort" (Codex ends the turn itself): cancelled.
        assert _end(events).state == ("cancelled" if live.flavor == "codex-acp" else "completed"), _end(events)
        _started(live.rt, thread_id, "full-access", live.workspace)
    live.rt.stop_session(thread_id)
    _settle(live)


def test_resume_in_a_fresh_process(live, tmp_path):
    # Two runtimes on one state dir: the second starts a fresh agent process in the same home.
    config = _config(live.flavor, live.server)
    state = tmp_path / "state"
    with Runtime.open(config, state_dir=state) as rt:
        rt.start_session("r1", instance="agent", cwd=str(live.workspace), runtime_mode="approval-required", timeout=60)
        assert _end(_turn(rt, "r1", "remember the word HERON SCENARIO:text")).state == "completed"
    with Runtime.open(config, state_dir=state) as rt:
        with rt.subscribe(thread_id="r1") as events:
            session = rt.start_session("r1", instance="agent", cwd=str(live.workspace),
                                       runtime_mode="approval-required", timeout=60)
            started = None
            while started is None:
                event = events.get(timeout=30)
                assert event is not None
                if event.type == "session.started":
                    started = event
        if live.flavor == "gemini" and not session.resumed:
            # Gemini CLI 0.61 cannot load a session in its first minute: detected and said so.
            assert started.resume_failed and "first minute" in (started.detail or ""), started
            return
        assert session.resumed and started.resumed, started
        assert _end(_turn(rt, "r1", "which word? SCENARIO:text")).state == "completed"
    last = [c for c in live.server.model_calls() if c.kind == "turn"][-1]
    assert "HERON" in str(last.body)


# The CLI exit status is checked once, on the flavor that used to report success (copilot ended
# a model error `completed` with the error as text, and `paddock run` exited 0).
@pytest.mark.parametrize("live", ["copilot"], indirect=True)
def test_paddock_run_exits_nonzero_on_a_model_error(live, tmp_path):
    config = tmp_path / "paddock.toml"
    config.write_text(
        f'[instances.agent]\ndriver = "copilot"\nendpoint = "{live.server.url}"\napi_key = "{KEY}"\n'
        f'model = "{MODELS["copilot"]}"\n'
    )
    run = subprocess.run(
        [sys.executable, "-m", "paddock.cli", "run", "--config", str(config), "--state-dir", str(tmp_path / "s"),
         "--instance", "agent", "--cwd", str(live.workspace), "fail SCENARIO:http400"],
        capture_output=True, text=True, timeout=90, env={**os.environ},
    )
    assert run.returncode == 1, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    assert "mock bad request" in run.stdout + run.stderr
    assert KEY not in run.stdout + run.stderr
