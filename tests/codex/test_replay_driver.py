"""Replay: the codex driver against the project's replayer (a real subprocess playing
``tests/recordings/codex/driver/*.jsonl``, recorded through this driver from the pinned
app-server by ``python -m tests.codex.record_driver``). Runs everywhere: no Codex binary.

The replayer checks every line the driver writes against the recording and exits 3 on the first
difference; each test checks both the canonical events and that exit status."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paddock.testing import load_transcript

from .conftest import Harness
from .scenarios import EXPECTED, KILL_PARTS, RESUME_PARTS, SCENARIOS, kill9_first, kill9_second, resume_first, resume_second

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings" / "codex" / "driver"


class _NoServer:
    url = "http://127.0.0.1:9"  # the replayer answers for the app-server; no model is called


def _harness(tmp_path, hub, name: str, **kw) -> Harness:
    args = ["-m", "paddock.testing.replay", str(RECORDINGS / f"{name}.jsonl"), "--workspace", str(tmp_path / "workspace")]
    return Harness(tmp_path, hub, _NoServer(), binary=sys.executable, args=args, **kw)


def _close_ok(h: Harness) -> None:
    link = h.adapter.link
    assert link is not None
    h.close()
    info = link.conn.process.exit_info
    assert info is not None and info.returncode == 0, info and info.stderr_tail


def test_every_scenario_has_a_recording():
    names = {p.stem for p in RECORDINGS.glob("*.jsonl")}
    assert names == {*SCENARIOS, *RESUME_PARTS, *KILL_PARTS}
    for path in RECORDINGS.glob("*.jsonl"):
        header = load_transcript(path).header
        assert (header["cli"], header["protocol"]) == ("codex", "codex-app-server")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_replays(tmp_path, hub, name):
    h = _harness(tmp_path, hub, name)
    try:
        got = SCENARIOS[name](h)
    except BaseException:
        h.close()
        raise
    expected = EXPECTED[name]
    assert {k: got[k] for k in expected} == expected
    if name == "http500":
        assert "internalServerError" in got["error"]
    _close_ok(h)


def test_resume_in_a_fresh_process_replays(tmp_path, hub):
    h = _harness(tmp_path, hub, RESUME_PARTS[0])
    cursor = resume_first(h)
    _close_ok(h)
    h2 = _harness(tmp_path, hub, RESUME_PARTS[1], instance_id="codex-test-2")
    assert resume_second(h2, cursor) == {"resumed": True, "state": "completed"}
    _close_ok(h2)


def test_kill_9_mid_turn_replays_across_the_restart(tmp_path, hub):
    # Each start of the "app-server" plays the next recording: the one killed mid-turn, then the
    # one the supervisor started after it (handshake, thread/resume, the next turn).
    seq = Path(__file__).with_name("replay_seq.py")
    files = [str(RECORDINGS / f"{part}.jsonl") for part in KILL_PARTS]
    args = [str(seq), str(tmp_path / "starts"), *files, "--workspace", str(tmp_path / "workspace")]
    h = Harness(tmp_path, hub, _NoServer(), binary=sys.executable, args=args)
    try:
        first = kill9_first(h)
        assert (first["state"], first["recoverable"]) == ("failed", True)
        assert kill9_second(h, first["pid"]) == {"resumed": True, "state": "completed"}
    except BaseException:
        h.close()
        raise
    _close_ok(h)
    assert (tmp_path / "starts").read_text() == "2"


def test_a_different_outgoing_line_fails_the_replay(tmp_path, hub):
    import json

    lines = []
    for line in (RECORDINGS / "text.jsonl").read_text().splitlines():
        frame = json.loads(line)
        msg = frame.get("msg") or {}
        if frame["type"] == "expect_outbound" and msg.get("method") == "thread/start":
            msg["params"]["approvalPolicy"] = "on-request"  # the recording now expects another policy
        lines.append(json.dumps(frame))
    changed = tmp_path / "changed.jsonl"
    changed.write_text("\n".join(lines) + "\n")
    args = ["-m", "paddock.testing.replay", str(changed), "--workspace", str(tmp_path / "workspace")]
    h = Harness(tmp_path, hub, _NoServer(), binary=sys.executable, args=args, start_timeout=5, request_timeout=5)
    from paddock.contract import PaddockError

    try:
        with pytest.raises(PaddockError):
            h.start()
    finally:
        h.close()


def _variant(tmp_path, method: str, params: dict, answer: dict) -> Path:
    """approval_accept.jsonl with its approval request replaced by another server request (same
    id and place in the turn) and the answer the driver must write for it."""
    import json

    out = []
    for line in (RECORDINGS / "approval_accept.jsonl").read_text().splitlines():
        frame = json.loads(line)
        msg = frame.get("msg") or {}
        if msg.get("method") == "item/commandExecution/requestApproval":
            thread, turn = msg["params"]["threadId"], msg["params"]["turnId"]
            msg["method"] = method
            msg["params"] = {k: v.replace("<thread>", thread).replace("<turn>", turn) if isinstance(v, str) else v
                             for k, v in params.items()}
        elif frame["type"] == "expect_outbound" and "result" in msg and msg["result"] == {"decision": "accept"}:
            msg["result"] = answer
        out.append(json.dumps(frame))
    path = tmp_path / f"{method.replace('/', '_')}.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def _run_variant(tmp_path, hub, path: Path, answer) -> list:
    from .conftest import etype

    args = ["-m", "paddock.testing.replay", str(path), "--workspace", str(tmp_path / "workspace")]
    h = Harness(tmp_path, hub, _NoServer(), binary=sys.executable, args=args)
    try:
        h.start(runtime_mode="approval-required")
        res = h.send("create hello.txt SCENARIO:tool_shell")
        evs = h.events_until(lambda e: etype(e) in ("request.opened", "user-input.requested"))
        answer(h, evs[-1])
        evs += h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    except BaseException:
        h.close()
        raise
    _close_ok(h)
    return evs


def test_user_input_request_round_trip(tmp_path, hub):
    from .conftest import of_type

    params = {"threadId": "<thread>", "turnId": "<turn>", "itemId": "call_1", "isBlocking": True,
              "questions": [{"id": "color", "header": "Color", "question": "Which color?",
                             "options": [{"label": "red", "description": "warm"}]}]}
    path = _variant(tmp_path, "item/tool/requestUserInput", params, {"answers": {"color": {"answers": ["red"]}}})
    evs = _run_variant(tmp_path, hub, path,
                       lambda h, ev: h.adapter.respond_to_user_input("t1", ev.request_id, {"color": "red"}, timeout=10))
    [asked] = of_type(evs, "user-input.requested")
    assert asked.questions[0].question == "Which color?" and asked.questions[0].options[0].label == "red"
    [resolved] = of_type(evs, "user-input.resolved")
    assert resolved.request_id == asked.request_id and resolved.answers == {"color": "red"}


def test_an_unknown_approval_kind_reaches_the_host_with_its_payload(tmp_path, hub):
    from .conftest import of_type

    params = {"threadId": "<thread>", "turnId": "<turn>", "itemId": "call_1", "novel": {"x": 1}}
    path = _variant(tmp_path, "item/futureThing/requestApproval", params, {"decision": "acceptForSession"})
    evs = _run_variant(tmp_path, hub, path, lambda h, ev: h.adapter.respond_to_request(
        "t1", ev.request_id, "accept_for_session", timeout=10))
    [opened] = of_type(evs, "request.opened")
    assert opened.kind == "other" and opened.data["raw"]["novel"] == {"x": 1}
    assert of_type(evs, "request.resolved")[0].decision == "accept_for_session"


def test_legacy_v1_exec_approval_gets_its_own_vocabulary(tmp_path, hub):
    from .conftest import of_type

    params = {"conversationId": "<thread>", "callId": "call_1", "command": ["touch", "hello.txt"],
              "cwd": "<workspace>", "parsedCmd": []}
    path = _variant(tmp_path, "execCommandApproval", params, {"decision": "denied"})
    evs = _run_variant(tmp_path, hub, path, lambda h, ev: h.adapter.respond_to_request("t1", ev.request_id, "decline",
                                                                                       timeout=10))
    [opened] = of_type(evs, "request.opened")
    assert opened.kind == "command" and opened.title == "touch hello.txt"


def test_garbage_before_initialize_is_the_instances_warning(tmp_path, hub):
    # A wrapper prints a non-JSON line before the (replayed) app-server starts: the shared
    # process's transport warning names no thread, and is published on the instance.
    noisy = tmp_path / "noisy-python"
    noisy.write_text(f"#!/bin/sh\necho 'garbage before initialize'\nexec {sys.executable} \"$@\"\n")
    noisy.chmod(0o755)
    sub = hub.subscribe(instance_id="codex-test", types=["runtime.warning"])
    args = ["-m", "paddock.testing.replay", str(RECORDINGS / "text.jsonl"), "--workspace", str(tmp_path / "workspace")]
    h = Harness(tmp_path, hub, _NoServer(), binary=str(noisy), args=args)
    try:
        SCENARIOS["text"](h)
        warning = sub.get(timeout=10)
        assert warning is not None, "the warning was dropped"
        assert warning.code.startswith("transport.") and warning.thread_id == ""
    finally:
        sub.close()
        h.close()
