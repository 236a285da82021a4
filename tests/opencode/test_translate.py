"""The OpenCode translator, fed the SSE events of the real server's recordings
(../shared/protocols/recordings/opencode-*.jsonl, shipped as tests/opencode/data/*.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paddock.contract import (
    ContentDelta,
    EventIdentity,
    ItemCompleted,
    ItemStarted,
    RuntimeWarningEvent,
    UserInputQuestion,
)
from paddock.drivers.opencode._translate import (
    Translator,
    error_message,
    item_kind_of_tool,
    question_answers,
    questions_of,
    reply_of_decision,
    request_kind_of_permission,
    usage_of_tokens,
)

DATA = Path(__file__).parent / "data"
ID = EventIdentity(driver="opencode", instance_id="oc", thread_id="t1")


def _timeline(name: str) -> list[tuple[float, str, dict]]:
    """(time, "prompt" | "event", payload) in time order; a prompt starts when it was sent."""
    out = []
    for line in (DATA / name).read_text().splitlines():
        d = json.loads(line)
        if d.get("kind") == "sse":
            out.append((d["t"], "event", d.get("event") or d.get("data")))
        elif d.get("kind") == "http" and d["method"] == "POST" and (
                d["path"].endswith("/prompt_async") or d["path"].endswith("/message")):
            sent = d["t"] - d.get("elapsed_s", 0.05)
            out.append((sent, "prompt", {"session": d["path"].split("/")[2], "text": d["request"]["parts"][0]["text"]}))
        elif d.get("kind") == "http" and d["path"].endswith("/abort"):
            out.append((d["t"] - d.get("elapsed_s", 0.05), "abort", {"session": d["path"].split("/")[2]}))
    return sorted(out, key=lambda x: x[0])


def _run(name: str, session: str):
    """Feed one session's events; a turn starts at each of its prompts. Returns the turns:
    [(events, signals)]."""
    tr = Translator(ID, session)
    turns: list[tuple[list, list]] = []
    for _, kind, payload in _timeline(name):
        if kind == "prompt" and payload["session"] == session:
            tr.start(f"turn-{len(turns) + 1}")
            turns.append(([], []))
        elif kind == "abort" and payload["session"] == session:
            tr.interrupt_requested = True
        elif kind == "event" and (payload.get("properties") or {}).get("sessionID") == session and turns:
            events, signals = turns[-1]
            got = tr.feed(payload, events)
            signals.extend(got)
            if any(s.kind == "idle" for s in got):
                tr.close(events, next(s for s in got if s.kind == "idle").state)
    return turns


def _sessions(name: str) -> list[str]:
    seen: list[str] = []
    for _, kind, payload in _timeline(name):
        if kind == "prompt" and payload["session"] not in seen:
            seen.append(payload["session"])
    return seen


def _check_grammar(events: list) -> None:
    started = {e.item_id for e in events if isinstance(e, ItemStarted)}
    completed = [e for e in events if isinstance(e, ItemCompleted)]
    assert started == {e.item_id for e in completed}  # every item ends, once
    assert len(completed) == len({e.item_id for e in completed})
    for item in completed:
        deltas = "".join(e.delta for e in events if isinstance(e, ContentDelta) and e.item_id == item.item_id)
        if item.kind in ("assistant_message", "reasoning"):
            assert item.text == deltas


def test_plain_turns_sync_then_async():
    session = _sessions("opencode-transcript.jsonl")[0]
    turns = _run("opencode-transcript.jsonl", session)
    assert len(turns) == 2
    for events, signals in turns:
        idle = [s for s in signals if s.kind == "idle"]
        assert len(idle) == 1 and idle[0].state == "completed" and idle[0].stop_reason == "stop"
        assert idle[0].usage is not None and idle[0].usage.total_tokens == 19
        texts = [e.text for e in events if isinstance(e, ItemCompleted) and e.kind == "assistant_message"]
        assert texts == ["Hello from the mock model."]
        _check_grammar(events)
        # the user's own text part is not an item of the turn
        assert not [e for e in events if isinstance(e, ItemStarted) and e.kind != "assistant_message"]


def test_bash_permission_answered_once():
    session = _sessions("opencode-transcript.jsonl")[1]
    (events, signals), = _run("opencode-transcript.jsonl", session)
    asked = [s for s in signals if s.kind == "permission"]
    assert len(asked) == 1 and asked[0].native.startswith("per_")
    assert asked[0].data["permission"] == "bash" and asked[0].item_id is not None
    assert [s.decision for s in signals if s.kind == "permission_replied"] == ["accept"]
    tool = [e for e in events if isinstance(e, ItemCompleted) and e.kind == "command"]
    assert len(tool) == 1 and tool[0].status == "completed" and tool[0].item_id == asked[0].item_id
    assert tool[0].text == "(no output)" and tool[0].data["exit"] == 0
    assert [s.state for s in signals if s.kind == "idle"] == ["completed"]
    texts = [e.text for e in events if isinstance(e, ItemCompleted) and e.kind == "assistant_message"]
    assert texts == ["Tool finished: (no output)"]
    _check_grammar(events)


def test_bash_permission_rejected_declines_the_tool_and_the_loop_goes_on():
    session = _sessions("opencode-transcript.jsonl")[2]
    tr = Translator(ID, session)
    events: list = []
    signals = []
    started = False
    for _, kind, payload in _timeline("opencode-transcript.jsonl"):
        if kind == "prompt" and payload["session"] == session:
            tr.start("turn-1")
            started = True
        elif started and kind == "event" and (payload.get("properties") or {}).get("sessionID") == session:
            got = tr.feed(payload, events)
            for s in got:
                if s.kind == "permission":
                    tr.decline(s.item_id)  # what the session does when the host declines
            signals += got
    tool = [e for e in events if isinstance(e, ItemCompleted) and e.kind == "command"]
    assert len(tool) == 1 and tool[0].status == "declined" and "rejected permission" in tool[0].text
    assert [s.state for s in signals if s.kind == "idle"] == ["completed"]


def test_abort_ends_interrupted_once_and_drops_the_tail():
    session = _sessions("opencode-transcript.jsonl")[3]
    (events, signals), = _run("opencode-transcript.jsonl", session)
    assert [s.state for s in signals if s.kind == "idle"] == ["interrupted"]
    _check_grammar(events)
    (text,) = [e for e in events if isinstance(e, ItemCompleted)]
    assert text.status == "cancelled" and text.text.startswith("tick 0")


def test_abort_without_our_interrupt_is_still_interrupted():
    session = _sessions("opencode-transcript.jsonl")[3]
    tr = Translator(ID, session)
    events: list = []
    states = []
    for _, kind, payload in _timeline("opencode-transcript.jsonl"):
        if kind == "prompt" and payload["session"] == session:
            tr.start("turn-1")
        elif kind == "event" and tr.turn_id and (payload.get("properties") or {}).get("sessionID") == session:
            states += [s.state for s in tr.feed(payload, events) if s.kind == "idle"]
    assert states == ["interrupted"]  # the second idle is ignored


def test_model_error_400_fails_the_turn():
    name = "opencode-http400-transcript.jsonl"
    session = _sessions(name)[0]
    turns = _run(name, session)
    assert [s.state for _, sig in turns for s in sig if s.kind == "idle"] == ["completed", "failed"]
    failed = [s for s in turns[1][1] if s.kind == "idle"][0]
    assert failed.error == "model API error 400: mock bad request"


def test_model_error_500_retries_are_warnings_then_abort_interrupts():
    name = "opencode-http500-resume-transcript.jsonl"
    session = _sessions(name)[0]
    turns = _run(name, session)
    retry = [e for e in turns[1][0] if isinstance(e, RuntimeWarningEvent)]
    assert [w.detail["attempt"] for w in retry] == sorted({w.detail["attempt"] for w in retry}) and len(retry) >= 2
    assert retry[0].code == "opencode.retry" and "mock internal error" in retry[0].message
    assert [s.state for _, sig in turns for s in sig if s.kind == "idle"] == ["completed", "interrupted", "completed"]


def test_nothing_is_translated_outside_a_turn():
    tr = Translator(ID, "ses_x")
    events: list = []
    assert tr.feed({"type": "message.part.delta", "properties": {"sessionID": "ses_x", "messageID": "msg_1",
                                                                  "partID": "prt_1", "field": "text", "delta": "x"}},
                   events) == []
    assert tr.feed({"type": "session.idle", "properties": {"sessionID": "ses_x"}}, events) == []
    assert tr.feed({"type": "totally.new.event", "properties": {"x": 1}}, events) == []
    assert tr.feed({"type": "server.heartbeat"}, events) == []
    assert events == []


def _answering():
    """A translator in turn ``turn-1`` whose assistant message ``msg_a`` has begun: (it, the
    events list it fills, ``feed(type, properties)``)."""
    tr = Translator(ID, "ses_x")
    tr.start("turn-1")
    events: list = []

    def feed(kind: str, properties: dict) -> list:
        return tr.feed({"type": kind, "properties": properties}, events)

    feed("message.updated", {"info": {"id": "msg_u", "role": "user"}})
    feed("session.status", {"status": {"type": "busy"}})
    feed("message.updated", {"info": {"id": "msg_a", "role": "assistant", "parentID": "msg_u"}})
    return tr, events, feed


def test_full_text_without_deltas_becomes_one_delta():
    tr, events, feed = _answering()
    feed("message.part.updated", {"part": {"id": "prt_r", "messageID": "msg_a", "type": "reasoning", "text": "hm",
                                           "time": {"start": 1}}})
    feed("message.part.updated", {"part": {"id": "prt_r", "messageID": "msg_a", "type": "reasoning", "text": "hmm",
                                           "time": {"start": 1, "end": 2}}})
    feed("message.part.updated", {"part": {"id": "prt_t", "messageID": "msg_a", "type": "text", "text": "all at once",
                                           "time": {"start": 1, "end": 2}}})
    (idle,) = feed("session.idle", {})
    assert idle.state == "completed"
    deltas = [(e.stream, e.delta) for e in events if isinstance(e, ContentDelta)]
    assert deltas == [("reasoning_text", "hm"), ("reasoning_text", "m"), ("assistant_text", "all at once")]
    _check_grammar(events)


def test_text_in_flight_after_the_abort_does_not_stream():
    """Grammar rule 11: after ``turn.aborted`` no ``content.delta`` of the turn; the item's
    completed text is what streamed before (the conformance suite saw one arrive late)."""
    tr, events, feed = _answering()
    feed("message.part.delta", {"messageID": "msg_a", "partID": "prt_t", "field": "text", "delta": "tick0 "})
    tr.interrupt_requested = True  # the session actor's cancel_turn, before its turn.aborted
    feed("message.part.delta", {"messageID": "msg_a", "partID": "prt_t", "field": "text", "delta": "tick1 "})
    feed("message.part.updated", {"part": {"id": "prt_t", "messageID": "msg_a", "type": "text",
                                           "text": "tick0 tick1 tick2 ", "time": {"start": 1, "end": 2}}})
    (idle,) = feed("session.idle", {})
    assert idle.state == "interrupted"
    assert [e.delta for e in events if isinstance(e, ContentDelta)] == ["tick0 "]
    assert [e.text for e in events if isinstance(e, ItemCompleted)] == ["tick0 "]
    _check_grammar(events)


def test_mapping_functions():
    assert item_kind_of_tool("bash") == "command" and item_kind_of_tool("edit") == "file_change"
    assert item_kind_of_tool("read") == "file_read" and item_kind_of_tool("myserver_mytool") == "tool_call"
    assert request_kind_of_permission("bash") == "command" and request_kind_of_permission("skill") == "tool"
    assert request_kind_of_permission("brand-new") == "permission"
    assert [reply_of_decision(d) for d in ("accept", "accept_for_session", "decline", "cancel")] == [
        "once", "always", "reject", "reject"]
    assert error_message({"name": "UnknownError", "data": {"message": "boom"}}) == "UnknownError: boom"
    assert error_message("junk") == "OpenCode reported an error"
    usage = usage_of_tokens({"input": 10, "output": 5, "reasoning": 1, "cache": {"read": 4, "write": 0}}, 0.5)
    assert usage is not None and (usage.input_tokens, usage.cached_input_tokens, usage.cost) == (14, 4, 0.5)
    assert usage_of_tokens(None) is None


def test_questions_and_answers():
    qs = questions_of({"questions": [
        {"question": "Which?", "header": "Pick", "options": [{"label": "A", "description": "a"}, {"label": "B"}]},
        {"question": "Free?", "header": "Text", "options": [], "multiple": True}]})
    assert [q.id for q in qs] == ["q0", "q1"] and qs[0].options[1].label == "B" and qs[1].multi_select
    assert isinstance(qs[0], UserInputQuestion)
    assert question_answers(qs, {"q0": "A", "q1": ["x", "y"]}) == [["A"], ["x", "y"]]
    assert question_answers(qs, {"Which?": "B"}) == [["B"], []]


@pytest.mark.parametrize("name", ["opencode-transcript.jsonl", "opencode-http400-transcript.jsonl",
                                  "opencode-http500-resume-transcript.jsonl"])
def test_every_recorded_turn_ends_exactly_once(name):
    for session in _sessions(name):
        for events, signals in _run(name, session):
            assert len([s for s in signals if s.kind == "idle"]) == 1
            _check_grammar(events)


def test_a_late_part_of_the_previous_turn_is_dropped_and_message_order_may_vary():
    tr = Translator(ID, "ses_x")
    events: list = []
    feed = lambda t, p: tr.feed({"type": t, "properties": p}, events)  # noqa: E731
    tr.start("turn-1")
    feed("message.updated", {"info": {"id": "msg_u1", "role": "user"}})
    feed("session.status", {"status": {"type": "busy"}})
    feed("message.updated", {"info": {"id": "msg_a1", "role": "assistant", "parentID": "msg_u1"}})
    feed("message.part.delta", {"messageID": "msg_a1", "partID": "prt_1", "field": "text", "delta": "one"})
    (idle,) = feed("session.idle", {})
    tr.close(events, idle.state)
    events.clear()
    tr.start("turn-2")
    # the previous turn's tail, then this turn's assistant message before its user message
    feed("message.part.updated", {"part": {"id": "prt_1", "messageID": "msg_a1", "type": "text", "text": "one more",
                                           "time": {"start": 1, "end": 2}}})
    feed("message.updated", {"info": {"id": "msg_a1", "role": "assistant", "parentID": "msg_u1", "error": {
        "name": "MessageAbortedError", "data": {}}}})
    feed("session.status", {"status": {"type": "busy"}})
    feed("message.updated", {"info": {"id": "msg_a2", "role": "assistant", "parentID": "msg_u2"}})
    feed("message.updated", {"info": {"id": "msg_u2", "role": "user"}})
    feed("message.part.delta", {"messageID": "msg_a2", "partID": "prt_2", "field": "text", "delta": "two"})
    (idle,) = feed("session.idle", {})
    assert idle.state == "completed"  # the old message's abort error is not this turn's
    assert [e.delta for e in events if isinstance(e, ContentDelta)] == ["two"]
