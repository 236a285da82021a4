"""Unit: the router's decoders and the translator, fed with the app-server messages of the shared
protocol transcripts (real frames of the pinned 0.171.0), and the approval answers."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from paddock.actors import JsonRpcNotification, JsonRpcRequest
from paddock.contract import EventIdentity
from paddock.drivers.codex._approvals import NativeRequest, answer_for, cancel_answer, request_kind
from paddock.drivers.codex._server import Incoming, Req, Router
from paddock.drivers.codex._translate import DELTA_STREAMS, Translator, item_fields, turn_error_text
from paddock.drivers.codex import _wire as w
from tests.adapter_harness import etype

TRANSCRIPTS = Path(__file__).with_name("transcripts")  # copies of shared/protocols/recordings/codex-*
ID = EventIdentity(driver="codex", instance_id="i", thread_id="t1")


def _inbound(name: str) -> list:
    path = TRANSCRIPTS / name
    out = []
    for line in path.read_text().splitlines():
        frame = json.loads(line)
        msg = frame["msg"]
        if frame["dir"] != "recv" or "method" not in msg:
            continue
        params = msgspec.Raw(msgspec.json.encode(msg.get("params")))
        out.append(JsonRpcRequest(msg["id"], msg["method"], params) if "id" in msg else JsonRpcNotification(msg["method"], params))
    return out


class _Ref:
    def __init__(self) -> None:
        self.told: list = []

    def tell(self, message) -> None:
        self.told.append(message)


def _route(name: str) -> tuple[list, list]:
    rejected: list = []
    router = Router(reject=rejected.append)
    inbound = _inbound(name)
    tid = next(json.loads(bytes(m.params))["thread"]["id"] for m in inbound if m.method == "thread/started")
    ref = _Ref()
    router.register(tid, ref)
    router.on_batch(inbound)
    items = [i for batch in ref.told for i in batch.items]
    assert all(type(b) is Incoming for b in ref.told)
    return items, rejected


def _translate(items: list) -> list:
    tr = Translator(ID)
    tr.native_thread_id = "th"
    events: list = []
    for item in items:
        if type(item) is Req:
            continue
        m, p = item
        if m == "turn/started":
            tr.begin("T", p.turn.id)
        elif m == "turn/completed":
            break  # the first turn of the transcript
        elif m in DELTA_STREAMS:
            tr.delta(DELTA_STREAMS[m], p, events)
        elif m == "item/started":
            tr.item_started(p, events)
        elif m == "item/completed":
            tr.item_completed(p, events)
        elif m == "thread/tokenUsage/updated":
            tr.token_usage(p, events)
        elif m == "turn/diff/updated":
            tr.diff(p, events)
        elif m == "error":
            tr.error(p, events)
    return events


def test_simple_turn_maps_items_deltas_and_usage():
    items, rejected = _route("codex-transcript.jsonl")
    assert not rejected
    assert {i[0] for i in items if type(i) is tuple} >= {"turn/started", "item/agentMessage/delta", "turn/completed"}
    events = _translate(items)
    kinds = [(etype(e), getattr(e, "kind", None)) for e in events if etype(e) != "content.delta"]
    assert kinds[:4] == [("item.started", "user_message"), ("item.completed", "user_message"),
                         ("item.started", "assistant_message"), ("item.completed", "assistant_message")]
    text = "".join(e.delta for e in events if etype(e) == "content.delta")
    [msg] = [e for e in events if etype(e) == "item.completed" and e.kind == "assistant_message"]
    assert msg.text == text and text
    [usage] = [e for e in events if etype(e) == "thread.token-usage.updated"]
    assert usage.usage.total_tokens and usage.usage.output_tokens and usage.turn_id == "T"


def test_command_approval_reaches_the_session_as_a_request():
    items, rejected = _route("codex-transcript-approval.jsonl")
    [req] = [i for i in items if type(i) is Req]
    assert req.method == "item/commandExecution/requestApproval" and req.id == 0
    assert request_kind(req.method) == "command"
    events = _translate(items)
    [cmd] = [e for e in events if etype(e) == "item.completed" and e.kind == "command"]
    assert cmd.status == "completed" and cmd.data["exit_code"] == 0 and cmd.title.startswith("/bin/bash -lc")
    assert any(etype(e) == "content.delta" and e.stream == "command_output" for e in events)


def test_declined_command_and_patch_items_end_declined():
    events = _translate(_route("codex-transcript-approval-decline.jsonl")[0])
    assert [e.status for e in events if etype(e) == "item.completed" and e.kind == "command"] == ["declined"]
    events = _translate(_route("codex-transcript-patch-decline.jsonl")[0])
    [patch] = [e for e in events if etype(e) == "item.completed" and e.kind == "file_change"]
    assert patch.status == "declined" and patch.title == "patched.txt" or patch.title.endswith("patched.txt")
    events = _translate(_route("codex-transcript-patch-accept.jsonl")[0])
    assert any(etype(e) == "turn.diff.updated" and "diff --git" in e.diff for e in events)


def test_a_failed_model_call_is_an_error_then_a_failed_turn():
    items, _ = _route("codex-transcript-error.jsonl")
    events = _translate(items)
    [err] = [e for e in events if etype(e) == "runtime.error"]
    assert "high demand" in err.message and "internalServerError" in err.message
    [done] = [i[1] for i in items if type(i) is tuple and i[0] == "turn/completed"]
    assert done.turn.status == "failed"
    assert "internalServerError" in turn_error_text(done.turn.error)


def test_deltas_of_another_turn_and_after_the_turn_are_dropped():
    tr = Translator(ID)
    out: list = []
    item = w.ItemNotification(item=w.Item(type="agentMessage", id="m1"), threadId="th", turnId="n1")
    tr.item_started(item, out)
    assert out == []  # no turn running
    tr.begin("T", "n1")
    tr.item_started(item, out)
    tr.delta("assistant_text", w.Delta(threadId="th", itemId="m1", delta="a", turnId="n0"), out)  # other turn
    tr.delta("assistant_text", w.Delta(threadId="th", itemId="m1", delta="b", turnId="n1"), out)
    tr.interrupted = True
    tr.item_started(w.ItemNotification(item=w.Item(type="reasoning", id="r1"), threadId="th", turnId="n1"), out)
    tr.end()
    tr.delta("assistant_text", w.Delta(threadId="th", itemId="m1", delta="c", turnId="n1"), out)
    assert [(etype(e), getattr(e, "delta", None)) for e in out] == [("item.started", None), ("content.delta", "b")]


def test_token_usage_never_goes_backwards():
    tr = Translator(ID)
    out: list = []
    for total in (10, 5, 12):
        tr.token_usage(w.TokenUsageNotification(threadId="th", tokenUsage=w.TokenUsage(total=w.UsageBreakdown(totalTokens=total))), out)
    assert [e.usage.total_tokens for e in out] == [10, 12]


def test_item_fields_of_unknown_types_are_other():
    f = item_fields(w.Item(type="somethingNew", id="x"))
    assert f["kind"] == "other" and f["data"]["native_type"] == "somethingNew"


def test_an_mcp_call_carries_its_result_text_or_its_error():
    # McpToolCallResult {content: [blocks], structuredContent}; McpToolCallError {message}.
    done = w.Item(type="mcpToolCall", id="m", server="s", tool="echo", arguments={"text": "hi"},
                  result={"content": [{"type": "text", "text": "echo: "}, {"type": "image", "data": "x"},
                                      {"type": "text", "text": "hi"}], "structuredContent": None})
    assert item_fields(done)["text"] == "echo: hi"
    failed = w.Item(type="mcpToolCall", id="m", server="s", tool="echo", error={"message": "tool exploded"})
    assert item_fields(failed)["text"] == "tool exploded"


def test_decisions_go_back_verbatim_in_each_vocabulary():
    v2 = NativeRequest(0, "item/commandExecution/requestApproval")
    assert [answer_for(v2, d)["decision"] for d in ("accept", "accept_for_session", "decline", "cancel")] == [
        "accept", "acceptForSession", "decline", "cancel"]
    fc = NativeRequest(1, "item/fileChange/requestApproval")
    assert answer_for(fc, "accept_for_session") == {"decision": "acceptForSession"}
    v1 = NativeRequest(2, "execCommandApproval")
    assert [answer_for(v1, d)["decision"] for d in ("accept", "accept_for_session", "decline", "cancel")] == [
        "approved", "approved_for_session", "denied", "abort"]
    assert answer_for(NativeRequest(3, "applyPatchApproval"), "decline") == {"decision": "denied"}
    perm = NativeRequest(4, "item/permissions/requestApproval", permissions={"network": {"enabled": True}})
    assert answer_for(perm, "accept") == {"permissions": {"network": {"enabled": True}}, "scope": "turn"}
    assert answer_for(perm, "accept_for_session")["scope"] == "session"
    assert answer_for(perm, "decline") == {"permissions": {}}
    unknown = NativeRequest(5, "item/somethingNew/requestApproval")
    assert request_kind(unknown.method) == "other" and cancel_answer(unknown) == {"decision": "cancel"}


def test_requests_without_a_thread_are_rejected_and_unknown_notifications_ignored(caplog):
    rejected: list = []
    router = Router(reject=rejected.append)
    ref = _Ref()
    router.register("th", ref)
    with caplog.at_level("DEBUG", logger="paddock.drivers.codex._server"):
        router.on_batch([
            JsonRpcRequest(7, "account/chatgptAuthTokens/refresh", msgspec.Raw(b'{"reason":"x"}')),
            JsonRpcNotification("thread/somethingNew", msgspec.Raw(b'{"threadId":"th"}')),
            JsonRpcRequest(8, "item/brandNew/requestApproval", msgspec.Raw(b'{"threadId":"th","itemId":"i"}')),
            JsonRpcNotification("configWarning", msgspec.Raw(b'{"summary":"s","details":null}')),
        ])
    assert [r.id for r in rejected] == [7]
    [batch] = ref.told
    assert [(type(i).__name__, i.method) for i in batch.items] == [("Req", "item/brandNew/requestApproval")]
    assert router.instance_notes == [("configWarning", "s")]
    assert "thread/somethingNew" in caplog.text
