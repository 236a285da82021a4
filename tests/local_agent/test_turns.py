"""Handshake, sessions and streaming directives (@reply, @chunks, @delay, @plan, @usage)."""

from __future__ import annotations

import time

import pytest

from paddock.drivers.local.agent._agent import split_answer

from ._client import chunks_text


def test_initialize_advertises_load_session_and_no_auth(spawn_agent):
    client = spawn_agent()
    result = client.initialize()["result"]
    assert result["protocolVersion"] == 1
    assert result["agentCapabilities"]["loadSession"] is True
    assert set(result["agentCapabilities"]["promptCapabilities"]) >= {"image", "audio", "embeddedContext"}
    assert result["authMethods"] == []
    assert result["agentInfo"]["name"] == "paddock-local"
    assert isinstance(result["agentInfo"]["version"], str)


def test_session_new_returns_modes_then_available_commands(agent, workspace):
    rid = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    idx, resp = agent.wait_for(lambda m: m.get("id") == rid)
    result = resp["result"]
    assert result["modes"]["currentModeId"] == "default"
    assert [m["id"] for m in result["modes"]["availableModes"]] == ["default", "plan"]
    _, note = agent.wait_for(lambda m: m.get("method") == "session/update", start=idx)
    assert note["params"]["sessionId"] == result["sessionId"]
    assert note["params"]["update"]["sessionUpdate"] == "available_commands_update"
    assert all("name" in c and "description" in c for c in note["params"]["update"]["availableCommands"])


def test_default_reply_streams_three_chunks(agent, workspace):
    sid = agent.new_session(workspace)
    resp, ups = agent.turn(sid, "hello there")
    assert resp["result"] == {"stopReason": "end_turn"}
    chunks = chunks_text(ups)
    assert len(chunks) == 3 and all(chunks)
    assert "".join(chunks) == "You said: hello there"


def test_reply_text_and_chunk_count(agent, workspace):
    sid = agent.new_session(workspace)
    _, ups = agent.turn(sid, "ignored words\n@reply The quick brown fox\n@chunks 7")
    chunks = chunks_text(ups)
    assert len(chunks) == 7 and all(chunks)
    assert "".join(chunks) == "The quick brown fox"


def test_short_answer_is_repeated_to_fill_the_chunks(agent, workspace):
    sid = agent.new_session(workspace)
    _, ups = agent.turn(sid, "@reply abc\n@chunks 5")
    assert chunks_text(ups) == ["ab", "c", "a", "b", "c"]


def test_single_chunk(agent, workspace):
    sid = agent.new_session(workspace)
    _, ups = agent.turn(sid, "@chunks 1\n@reply one piece")
    assert chunks_text(ups) == ["one piece"]


@pytest.mark.parametrize("bad", ["@chunks 0", "@chunks many", "@delay -1", "@usage 1", "@delay nan"])
def test_malformed_directive_fails_the_prompt_with_invalid_params(agent, workspace, bad):
    sid = agent.new_session(workspace)
    resp = agent.response(agent.prompt(sid, bad))
    assert resp["error"]["code"] == -32602
    assert bad.split()[0] in resp["error"]["message"]
    # the session still works
    resp, _ = agent.turn(sid, "@reply ok")
    assert resp["result"]["stopReason"] == "end_turn"


def test_delay_spaces_the_chunks(agent, workspace):
    sid = agent.new_session(workspace)
    t0 = time.monotonic()
    _, ups = agent.turn(sid, "@reply abcd\n@chunks 4\n@delay 0.1")
    assert chunks_text(ups) == ["a", "b", "c", "d"]
    assert time.monotonic() - t0 >= 0.3  # three pauses; a lower bound only


def test_plan_comes_before_the_answer(agent, workspace):
    sid = agent.new_session(workspace)
    _, ups = agent.turn(sid, "@plan Read the code; Fix the bug ;Run tests\n@reply done")
    assert ups[0] == {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "Read the code", "priority": "medium", "status": "pending"},
            {"content": "Fix the bug", "priority": "medium", "status": "pending"},
            {"content": "Run tests", "priority": "medium", "status": "pending"},
        ],
    }
    assert "".join(chunks_text(ups)) == "done"


def test_usage_is_reported_as_update_and_in_the_result(agent, workspace):
    sid = agent.new_session(workspace)
    resp, ups = agent.turn(sid, "@usage 120 30")
    assert resp["result"] == {
        "stopReason": "end_turn",
        "usage": {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150},
    }
    assert ups[-1] == {"sessionUpdate": "usage_update", "used": 150, "size": 200000}
    # usage_update.used is the session's cumulative context: it never goes backwards
    _, ups = agent.turn(sid, "@usage 1 2")
    assert ups[-1] == {"sessionUpdate": "usage_update", "used": 153, "size": 200000}


def test_text_blocks_are_joined_by_newlines(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.request(
        "session/prompt",
        {
            "sessionId": sid,
            "prompt": [
                {"type": "text", "text": "first"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"},
                {"type": "text", "text": "@reply joined"},
            ],
        },
    )
    agent.response(rid)
    assert "".join(chunks_text(agent.updates(sid))) == "joined"


def test_cancel_mid_stream_answers_cancelled(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@reply 0123456789\n@chunks 10\n@delay 0.5")
    agent.wait_for(lambda m: m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    agent.notify("session/cancel", {"sessionId": sid})
    resp = agent.response(rid, timeout=2.0)
    assert resp["result"] == {"stopReason": "cancelled"}
    assert 1 <= len(chunks_text(agent.updates(sid))) < 10
    # the next turn runs normally
    resp, ups = agent.turn(sid, "@reply again")
    assert resp["result"]["stopReason"] == "end_turn"
    assert "".join(chunks_text(ups)) == "again"


def test_cancel_without_a_turn_and_for_unknown_session_is_ignored(agent, workspace):
    sid = agent.new_session(workspace)
    agent.notify("session/cancel", {"sessionId": sid})
    agent.notify("session/cancel", {"sessionId": "nope"})
    resp, _ = agent.turn(sid, "@reply fine")
    assert resp["result"]["stopReason"] == "end_turn"


def test_two_sessions_stream_concurrently(agent, workspace):
    slow = agent.new_session(workspace)
    fast = agent.new_session(workspace)
    slow_id = agent.prompt(slow, "@reply 0123456789\n@chunks 10\n@delay 0.2")
    agent.wait_for(lambda m: m.get("method") == "session/update" and m["params"]["sessionId"] == slow)
    resp, ups = agent.turn(fast, "@reply quick")
    assert resp["result"]["stopReason"] == "end_turn"
    # the fast session finished while the slow one is still streaming
    assert not any(m.get("id") == slow_id for m in agent.messages if isinstance(m, dict) and "method" not in m)
    slow_resp = agent.response(slow_id)
    assert slow_resp["result"]["stopReason"] == "end_turn"
    assert "".join(chunks_text(agent.updates(slow))) == "0123456789"


def test_prompt_for_unknown_session_is_resource_not_found(agent):
    resp = agent.response(agent.prompt("no-such-session", "hi"))
    assert resp["error"]["code"] == -32002
    assert resp["error"]["message"] == "Resource not found"


def test_set_mode_and_config_option(agent, workspace):
    sid = agent.new_session(workspace)
    assert agent.response(agent.request("session/set_mode", {"sessionId": sid, "modeId": "plan"}))["result"] == {}
    bad = agent.response(agent.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"}))
    assert bad["error"]["code"] == -32602
    resp = agent.response(
        agent.request("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "fast"})
    )
    assert resp["result"]["configOptions"] == [
        {"type": "select", "id": "model", "name": "model", "currentValue": "fast", "options": [{"value": "fast", "name": "fast"}]}
    ]
    resp = agent.response(
        agent.request(
            "session/set_config_option", {"sessionId": sid, "configId": "allow_all", "type": "boolean", "value": True}
        )
    )
    assert resp["result"]["configOptions"][1] == {"type": "boolean", "id": "allow_all", "name": "allow_all", "currentValue": True}


def test_stdin_eof_ends_the_agent_even_mid_turn(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@chunks 10\n@delay 5")
    agent.wait_for(lambda m: m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    agent.proc.stdin.close()
    # the in-flight turn is cancelled and still answered before the agent exits
    assert agent.response(rid, timeout=3.0)["result"] == {"stopReason": "cancelled"}
    assert agent.close(timeout=3.0) == 0


def test_split_answer_contract():
    assert split_answer("", 3) == []
    assert split_answer("abcdefg", 3) == ["abc", "de", "fg"]
    pieces = split_answer("x", 20000)
    assert len(pieces) == 20000 and set(pieces) == {"x"}
    pieces = split_answer("hello", 3)
    assert "".join(pieces) == "hello" and len(pieces) == 3


def test_cancel_sent_right_after_the_prompt_is_not_lost(agent, workspace):
    sid = agent.new_session(workspace)
    prompt = {"jsonrpc": "2.0", "id": 77, "method": "session/prompt",
              "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "@chunks 3\n@delay 5"}]}}
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
    import json

    agent.send((json.dumps(prompt) + "\n" + json.dumps(cancel) + "\n").encode())
    assert agent.response(77, timeout=3)["result"] == {"stopReason": "cancelled"}


def test_prompts_of_one_session_run_one_after_another(agent, workspace):
    sid = agent.new_session(workspace)
    first = agent.prompt(sid, "@reply aaaa\n@chunks 4\n@delay 0.05")
    second = agent.prompt(sid, "@reply-history")
    i_first = agent.wait_for(lambda m: m.get("id") == first and "method" not in m)[0]
    i_second = agent.wait_for(lambda m: m.get("id") == second and "method" not in m)[0]
    assert i_first < i_second
    assert "".join(chunks_text(agent.updates(sid, upto=i_first))) == "aaaa"
    assert "".join(chunks_text(agent.updates(sid)[len(agent.updates(sid, upto=i_first)):])) == "history: 1"
