"""Replay only: the ``cursor``, ``grok`` and ``kiro`` flavors, whose CLIs cannot be installed here,
against transcripts built from the protocol facts (acp.md and T3 Code's support code for each
agent), checked frame by frame by the replayer.

Each transcript is one session: a text turn; a write the host accepts, asked for a tool call the
agent never announced (options chosen by kind, ids differ per agent); a cancel. The facts each
transcript encodes are named at the frame. Kiro drops a cancel sent before its prompt is under
way and shows no progress while it reasons: the guard's retry gets the cancel honoured. Grok sends an update after the cancelled
prompt's result (its restarted background work), which must not become an item. Every cancel
is sent 50 ms after the prompt (the guard sends it once the agent shows the turn started). Grok runs
behind a launcher that puts the agent in a detached process group: closing the runtime must
still leave no process (the autouse leak check)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from paddock import Runtime
from paddock.testing import collect_turn

SID = "sess-7f3c"
MODEL = "claude-sonnet-4.5"


def _out(msg: dict) -> dict:
    return {"type": "expect_outbound", "msg": {"jsonrpc": "2.0", **msg}}


def _in(msg: dict) -> dict:
    return {"type": "emit_inbound", "msg": {"jsonrpc": "2.0", **msg}}


def _update(update: dict) -> dict:
    return _in({"method": "session/update", "params": {"sessionId": SID, "update": update}})


def _chunk(text: str) -> dict:
    return _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def _prompt(rid: int, text: str) -> dict:
    return _out({"id": rid, "method": "session/prompt",
                 "params": {"sessionId": SID, "prompt": [{"type": "text", "text": text}]}})


# Per agent: initialize answer, authenticate method, permission options (kind is what counts),
# the session/cancel params, and what happens after a cancel.
AGENTS = {
    "cursor": {
        # Cursor: authenticate with "cursor_login" (its own login).
        "auth": "cursor_login",
        "init": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True},
                 "authMethods": [{"id": "cursor_login", "name": "Cursor login"}],
                 "agentInfo": {"name": "cursor-agent", "version": "replay"}},
        "options": [{"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}],
        "cancel": {"sessionId": SID},
    },
    "grok": {
        # Grok: no XAI_API_KEY configured -> authenticate with the CLI's cached token.
        "auth": "cached_token",
        "init": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True},
                 "authMethods": [{"id": "xai.api_key", "name": "xAI API key"},
                                 {"id": "cached_token", "name": "Grok login"}],
                 "agentInfo": {"name": "grok", "version": "replay"}},
        "options": [{"optionId": "approve", "name": "Approve", "kind": "allow_once"},
                    {"optionId": "deny", "name": "Deny", "kind": "reject_once"}],
        # Grok: a user cancel is marked ctrl_c, else it restarts background work after it.
        "cancel": {"sessionId": SID, "_meta": {"cancelTrigger": "ctrl_c"}},
    },
    "kiro": {
        # Kiro: advertises no auth methods and has no authenticate method: no call.
        "auth": None,
        "init": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}, "authMethods": [],
                 "agentInfo": {"name": "Kiro CLI Agent", "version": "replay"}},
        # Some Kiro tools offer no allow_always.
        "options": [{"optionId": "allow_once", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "reject_once", "name": "No", "kind": "reject_once"}],
        "cancel": {"sessionId": SID},
    },
}


def build_transcript(kind: str) -> list[dict]:
    agent = AGENTS[kind]
    frames: list[dict] = [{"type": "header", "format": "paddock-transcript/1", "cli": kind, "version": "replay",
                           "scenario": "replay-only", "protocol": "acp"}]
    rid = 1
    frames.append(_out({"id": rid, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
        "clientInfo": {"name": "paddock", "version": "<*>"}}}))
    frames.append(_in({"id": rid, "result": agent["init"]}))
    if agent["auth"]:
        rid += 1
        frames += [_out({"id": rid, "method": "authenticate", "params": {"methodId": agent["auth"]}}),
                   _in({"id": rid, "result": {}})]
    rid += 1
    frames.append(_out({"id": rid, "method": "session/new", "params": {"cwd": "<workspace>", "mcpServers": []}}))
    if kind == "kiro":
        # Kiro reports its models; a session's model is switched with session/set_model.
        frames += [_in({"id": rid, "result": {"sessionId": SID, "models": {
                        "currentModelId": "auto", "availableModels": [{"modelId": "auto", "name": "Auto"},
                                                                      {"modelId": MODEL, "name": "Sonnet"}]}}}),
                   _out({"id": rid + 1, "method": "session/set_model", "params": {"sessionId": SID, "modelId": MODEL}}),
                   _in({"id": rid + 1, "result": {}})]
        rid += 1
    else:
        frames.append(_in({"id": rid, "result": {"sessionId": SID}}))
    # 1. A text turn, with the traffic every flavor must tolerate: extension notifications and
    # requests (`_auth/…` from claude-agent-acp 0.101, `qwen/…` from qwen 0.24: a request is
    # answered -32601, a notification ignored) and a tool_call_update for a call never announced.
    rid += 1
    frames += [_prompt(rid, "say hi"),
               _in({"method": "_auth/status_update", "params": {"status": "authenticated"}}),
               _in({"id": 1, "method": "qwen/notify/session/prompt-suggestion", "params": {"sessionId": SID}}),
               _out({"id": 1, "error": {"code": -32601, "message": "Method not found: qwen/notify/session/prompt-suggestion"}}),
               _update({"sessionUpdate": "tool_call_update", "toolCallId": "tc-0", "title": "Read README.md",
                        "kind": "read", "status": "completed"}),
               _chunk("Hello "), _chunk("from "), _chunk("replay"),
               _in({"id": rid, "result": {"stopReason": "end_turn"}})]
    # 2. A write: the permission request names a tool call never announced by tool_call.
    rid += 1
    tool = {"toolCallId": "tc-1", "title": "Write notes.txt", "kind": "edit", "status": "pending",
            "rawInput": {"path": "<workspace>/notes.txt", "__tool_use_purpose": "write the notes"},
            "locations": [{"path": "<workspace>/notes.txt"}]}
    allow_once = next(o["optionId"] for o in agent["options"] if o["kind"] == "allow_once")
    frames += [_prompt(rid, "write notes"),
               _in({"id": 2, "method": "session/request_permission",
                    "params": {"sessionId": SID, "toolCall": tool, "options": agent["options"]}}),
               _out({"id": 2, "result": {"outcome": {"outcome": "selected", "optionId": allow_once}}}),
               _update({"sessionUpdate": "tool_call_update", "toolCallId": "tc-1", "status": "completed"}),
               _chunk("Wrote notes.txt"),
               _in({"id": rid, "result": {"stopReason": "end_turn"}})]
    # 3. A cancel.
    rid += 1
    frames.append(_prompt(rid, "write a long story"))
    if kind == "kiro":
        # Kiro emits nothing while its model reasons and drops the first cancel: the guard's
        # retry is the one it honours.
        frames += [_out({"method": "session/cancel", "params": agent["cancel"]}),
                   _out({"method": "session/cancel", "params": agent["cancel"]}),
                   _in({"id": rid, "result": {"stopReason": "cancelled"}})]
    else:
        frames += [_chunk("Once upon a time"),
                   _out({"method": "session/cancel", "params": agent["cancel"]}),
                   _in({"id": rid, "result": {"stopReason": "cancelled"}})]
        if kind == "grok":
            # Grok's background work restarting after the cancel: an update after the result.
            frames.append(_chunk("(background task woke up)"))
    return frames


def _write(frames: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(f, separators=(",", ":")) + "\n" for f in frames))
    return path


def _launcher(tmp_path: Path) -> Path:
    # Like the agents' launchers: a shell script that starts the agent in a detached process
    # group of its own and waits for it.
    script = tmp_path / "launcher.sh"
    # (an asynchronous command's stdin is /dev/null unless redirected: hand it ours explicitly)
    script.write_text('#!/bin/sh\nexec 3<&0\nsetsid "$@" <&3 3<&- &\nexec 3<&-\nwait $!\n')
    script.chmod(0o755)
    return script


def _turn(rt, text: str, *, on_event=None, timeout: float = 20.0) -> list:
    """A turn of thread ``t``; ``on_event`` sees ``(None, turn)`` once it is accepted, then every event."""
    return collect_turn(rt, "t", text, timeout=timeout,
                        on_sent=None if on_event is None else (lambda turn: on_event(None, turn)), on_event=on_event)


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_replay_only_flavor_follows_its_protocol_facts(kind, tmp_path):
    transcript = _write(build_transcript(kind), tmp_path / f"{kind}.jsonl")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    verdict = tmp_path / "verdict.txt"
    replay = [sys.executable, "-m", "paddock.testing.replay", str(transcript), "--workspace", str(workspace),
              "--verdict", str(verdict)]
    if kind == "grok":
        binary, args = str(_launcher(tmp_path)), replay
    else:
        binary, args = sys.executable, replay[1:]
    # The flavors append their own ACP arguments (`acp`, `agent stdio`); the replayer ignores them.
    config = {"instances": {"agent": {"driver": kind, "binary": binary, "args": args}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t", instance="agent", cwd=str(workspace), runtime_mode="approval-required", timeout=20,
                         model=MODEL if kind == "kiro" else None)
        first = _turn(rt, "say hi")
        assert first[-1].state == "completed"
        assert "".join(e.delta for e in first if e.type == "content.delta") == "Hello from replay"
        # The update for a call never announced created its item.
        assert [(e.kind, e.status) for e in first if e.type == "item.completed" and e.kind != "assistant_message"] \
            == [("file_read", "completed")]

        def accept(event, turn):
            if event is not None and event.type == "request.opened":
                rt.respond_to_request("t", event.request_id, "accept")

        second = _turn(rt, "write notes", on_event=accept)
        assert second[-1].state == "completed"
        [opened] = [e for e in second if e.type == "request.opened"]
        assert opened.kind == "file_change" and opened.item_id is not None  # created on first sight
        tools = [e for e in second if e.type == "item.completed" and e.kind == "file_change"]
        assert [t.status for t in tools] == ["completed"]

        def cancel(event, turn):
            if event is None:  # right after send_turn returned
                time.sleep(0.05)  # the scenario: a cancel 50 ms after the prompt
                rt.interrupt_turn("t", turn.turn_id)

        third = _turn(rt, "write a long story", on_event=cancel)
        assert third[-1].state == "interrupted", third[-1]
        # Nothing of the turn after its completion; grok's late update made no item.
        assert all(e.type != "item.started" for e in third[third.index(third[-1]):])
        rt.stop_session("t")
    status, _, detail = verdict.read_text().partition("\n")
    assert status == "0", detail


def test_replay_only_flavors_need_their_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    config = {"instances": {k: {"driver": k} for k in AGENTS}}
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        reasons = {i.id: i.reason for i in rt.instances()}
    assert "'agent' not found on PATH" in reasons["cursor"] and "set `binary`" in reasons["cursor"]
    assert "'grok' not found on PATH" in reasons["grok"]
    assert "'kiro-cli' not found on PATH" in reasons["kiro"]
    assert os.environ["PATH"] == str(tmp_path)
