"""The session/update -> canonical event mapping, driven by the recorded ACP transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from paddock.drivers.acp import _wire as w
from paddock.drivers.acp._translate import Translator, stop_reason_state

def T(ev) -> str:
    return type(ev).__struct_config__.tag


RECORDINGS = Path(__file__).resolve().parents[3] / "shared" / "protocols" / "recordings"  # beside the clone
TRANSCRIPTS = sorted(RECORDINGS.glob("acp-*-transcript.jsonl")) if RECORDINGS.is_dir() else []


def replay(path: Path) -> list:
    """Drive a Translator the way the session actor does: prompt -> turn, result -> completion,
    permission requests -> tool items."""
    tr = Translator("acp", "i", "t")
    events: list = []
    prompts: dict = {}
    turns = 0
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("msg")
        if not msg or rec.get("proc") == "B" and msg.get("method") == "session/load":
            continue
        if rec["dir"] == "c2a" and msg.get("method") == "session/prompt":
            if tr.in_turn:  # the recorder queued a prompt; the adapter refuses that (turns.queue off)
                continue
            turns += 1
            prompts[msg["id"]] = f"turn{turns}"
            events += tr.start_turn(f"turn{turns}", model=None, interaction_mode=None)
        elif rec["dir"] == "a2c" and msg.get("method") == "session/update":
            _, update = w.decode_update_params(msgspec.json.encode(msg["params"]))
            events += tr.updates([update])
        elif rec["dir"] == "a2c" and msg.get("method") == "session/request_permission":
            req = msgspec.convert(msg["params"], w.PermissionRequest)
            tr.ensure_tool(req.toolCall, events)
        elif rec["dir"] == "a2c" and "id" in msg and msg["id"] in prompts and "method" not in msg:
            prompts.pop(msg["id"])
            if "error" in msg:
                events += tr.complete_turn("failed", error=msg["error"].get("message"))
            else:
                res = msgspec.convert(msg["result"], w.PromptResult)
                events += tr.complete_turn(stop_reason_state(res.stopReason, True), stop_reason=res.stopReason,
                                           usage=res.usage)
    events += tr.complete_turn("failed", error="transcript ended")
    return events


def check_grammar(events: list) -> None:
    open_turn = None
    completed = set()
    items: dict = {}
    deltas: dict = {}
    last_total = -1
    for ev in events:
        if T(ev) == "turn.started":
            assert open_turn is None
            open_turn = ev.turn_id
        elif T(ev) == "turn.completed":
            assert ev.turn_id == open_turn
            completed.add(open_turn)
            open_turn = None
        elif T(ev) in ("item.started", "item.updated", "item.completed", "content.delta"):
            assert ev.turn_id == open_turn and ev.turn_id not in completed, ev
            if T(ev) == "item.started":
                assert ev.item_id not in items
                items[ev.item_id] = "open"
            elif T(ev) == "content.delta":
                assert items.get(ev.item_id) == "open"
                deltas.setdefault(ev.item_id, []).append(ev.delta)
            elif T(ev) == "item.completed":
                assert items.get(ev.item_id) == "open", ev
                items[ev.item_id] = "done"
                if ev.item_id in deltas:
                    assert ev.text == "".join(deltas[ev.item_id])
        elif T(ev) == "thread.token-usage.updated":
            total = ev.usage.total_tokens or 0
            assert total >= last_total
            last_total = total
    assert open_turn is None
    assert all(state == "done" for state in items.values())


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
def test_recorded_transcript_keeps_the_grammar(path):
    events = replay(path)
    check_grammar(events)
    assert any(T(e) == "turn.completed" for e in events)


@pytest.mark.skipif(
    not (RECORDINGS / "acp-claude-transcript.jsonl").is_file(),
    reason="needs the shared protocol recordings beside the checkout (../shared/protocols/recordings)",
)
def test_claude_transcript_mapping():
    events = replay(RECORDINGS / "acp-claude-transcript.jsonl")
    types = [T(e) for e in events]
    first_turn = types[types.index("turn.started"): types.index("turn.completed") + 1]
    assert first_turn[:3] == ["turn.started", "thread.token-usage.updated", "item.started"]
    texts = [e.text for e in events if T(e) == "item.completed" and e.kind == "assistant_message"]
    assert texts[0] == "Hello from mock."
    write = [e for e in events if T(e) == "item.completed" and e.kind == "file_change"]
    assert write and write[0].status == "completed"
    shell = [e for e in events if T(e) == "item.started" and e.kind == "command"]
    assert shell
    completed = [e for e in events if T(e) == "turn.completed"]
    assert completed[0].usage.total_tokens == 15
    assert completed[-1].state == "interrupted" and completed[-1].stop_reason == "cancelled"
    usage = [e.usage for e in events if T(e) == "thread.token-usage.updated"]
    assert usage[-1].context_window == 200000 and usage[-1].total_tokens >= 60
    assert any(T(e) == "session.configured" and "available_commands" in e.config for e in events)


def test_update_for_unannounced_tool_creates_the_item():
    tr = Translator("acp", "i", "t")
    tr.start_turn("T", model=None, interaction_mode=None)
    out = tr.updates([w.ToolCallUpdate(toolCallId="x", status="completed", kind="execute",
                                       content=[{"type": "content", "content": {"type": "text", "text": "ok"}}])])
    assert [T(e) for e in out] == ["item.started", "item.completed"]
    assert out[0].kind == "command" and out[1].text == "ok"


def test_unknown_update_is_ignored_and_out_of_turn_content_dropped():
    tr = Translator("acp", "i", "t")
    sid, upd = w.decode_update_params(b'{"sessionId":"s","update":{"sessionUpdate":"brand_new","x":1}}')
    assert upd == "brand_new"
    assert tr.updates([upd]) == []
    assert tr.updates([w.AgentMessageChunk(content=w.ContentBlock(text="replayed"))]) == []
    assert tr.updates([w.UserMessageChunk(content=w.ContentBlock(text="old prompt"))]) == []


def test_message_id_change_splits_items_and_interrupt_blocks_new_items():
    tr = Translator("acp", "i", "t")
    tr.start_turn("T", model=None, interaction_mode=None)
    out = tr.updates([
        w.AgentMessageChunk(content=w.ContentBlock(text="a"), messageId="m1"),
        w.AgentMessageChunk(content=w.ContentBlock(text="b"), messageId="m2"),
    ])
    assert [T(e) for e in out] == ["item.started", "content.delta", "item.completed", "item.started", "content.delta"]
    tr.interrupt_acknowledged()
    assert tr.updates([w.ToolCallStart(toolCallId="new", kind="edit")]) == []
    end = tr.complete_turn("interrupted", stop_reason="cancelled")
    assert [T(e) for e in end] == ["item.completed", "turn.aborted", "turn.completed"]
    assert end[0].text == "b"


def _cmd_update(text, status=None):
    return w.ToolCallUpdate(toolCallId="c", status=status, content=[{"type": "content", "content": {"type": "text", "text": text}}])


@pytest.mark.parametrize("pieces", [["ab", "abcd", "abcdef"], ["ab", "cd", "ef"]], ids=["cumulative", "piecewise"])
def test_command_output_streams_as_deltas(pieces):
    tr = Translator("acp", "i", "t")
    tr.start_turn("T", model=None, interaction_mode=None)
    out = tr.updates([w.ToolCallStart(toolCallId="c", kind="execute", title="run", status="in_progress")])
    out += tr.updates([_cmd_update(p) for p in pieces])
    out += tr.updates([_cmd_update("abcdef", "completed")])
    deltas = [e.delta for e in out if T(e) == "content.delta"]
    assert "".join(deltas) == "abcdef" and all(e.stream == "command_output" for e in out if T(e) == "content.delta")
    assert out[-1].text == "abcdef" and out[-1].status == "completed"


def test_plan_mode_detection():
    from paddock.drivers.acp._capabilities import plan_mode_id

    assert plan_mode_id(["default", "autoEdit", "yolo", "plan"], None) == "plan"
    url = "https://agentclientprotocol.com/protocol/session-modes#plan"
    assert plan_mode_id(["https://agentclientprotocol.com/protocol/session-modes#agent", url], None) == url
    assert plan_mode_id(["default", "acceptEdits"], None) is None
    assert plan_mode_id(["default", "architect"], "architect") == "architect"
    assert plan_mode_id(["default"], "architect") is None


def test_the_last_message_text_is_whole_after_its_parts_were_joined_into_chunks():
    """A message of more deltas than a batch keeps as parts: its text is every chunk plus the
    current parts (the copilot failed-text check reads it), while streaming and once closed."""
    tr = Translator("acp", "i", "t")
    tr.start_turn("u1", model=None, interaction_mode=None)
    pieces = [f"{n:04d}." for n in range(700)]
    for start in range(0, 700, 300):  # three batches, the first two past the coalescing bound
        tr.updates([w.AgentMessageChunk(content=w.ContentBlock(type="text", text=p)) for p in pieces[start:start + 300]])
    assert tr.last_message_text() == "".join(pieces)
    done = tr.complete_turn("completed")
    [item] = [e for e in done if T(e) == "item.completed"]
    assert item.text == "".join(pieces) == tr.last_message_text()
