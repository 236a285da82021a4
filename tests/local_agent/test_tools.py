"""Permissioned tool directives: @run and @write (accept, reject, cancel, fs errors)."""

from __future__ import annotations

import os

from ._client import chunks_text

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
REJECT = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}


def _tool_updates(ups, tool_call_id):
    return [u for u in ups if u.get("toolCallId") == tool_call_id]


def test_run_allowed_executes_in_the_session_cwd_and_streams_output(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@run touch marker && echo hello && echo oops >&2 && exit 3\n@reply ran")
    idx, req = agent.agent_request("session/request_permission")
    params = req["params"]
    assert params["sessionId"] == sid
    assert params["toolCall"]["kind"] == "execute" and params["toolCall"]["status"] == "pending"
    assert [(o["optionId"], o["kind"]) for o in params["options"]] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject_once", "reject_once"),
    ]
    announced = agent.updates(sid, upto=idx)
    assert announced[-1]["sessionUpdate"] == "tool_call"
    assert announced[-1]["toolCallId"] == params["toolCall"]["toolCallId"]
    assert announced[-1]["kind"] == "execute" and announced[-1]["status"] == "pending"
    assert not (workspace / "marker").exists()
    agent.answer(req["id"], ALLOW)
    resp = agent.response(rid)
    assert resp["result"]["stopReason"] == "end_turn"
    assert (workspace / "marker").exists()
    ups = _tool_updates(agent.updates(sid), params["toolCall"]["toolCallId"])
    streamed = "".join(
        c["content"]["text"] for u in ups if u.get("status") is None for c in u.get("content") or []
    )
    assert streamed == "hello\noops\n"
    final = ups[-1]
    assert final["status"] == "completed"
    assert final["rawOutput"] == {"exitCode": 3, "output": "hello\noops\n"}
    assert "".join(chunks_text(agent.updates(sid))) == "ran"


def test_run_allow_always_also_runs(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@run pwd")
    _, req = agent.agent_request("session/request_permission")
    agent.answer(req["id"], {"outcome": {"outcome": "selected", "optionId": "allow_always"}})
    agent.response(rid)
    final = agent.updates(sid)[-4]
    assert final["status"] == "completed"
    assert final["rawOutput"]["output"].strip() == os.path.realpath(workspace)


def test_run_rejected_is_declined_and_not_run(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@run touch marker\n@reply after")
    _, req = agent.agent_request("session/request_permission")
    agent.answer(req["id"], REJECT)
    resp = agent.response(rid)
    assert resp["result"]["stopReason"] == "end_turn"
    assert not (workspace / "marker").exists()
    ups = _tool_updates(agent.updates(sid), req["params"]["toolCall"]["toolCallId"])
    assert ups[-1]["status"] == "failed"
    assert "declined" in ups[-1]["content"][0]["content"]["text"]
    assert ups[-1]["rawOutput"]["code"] == "declined"
    assert "".join(chunks_text(agent.updates(sid))) == "after"


def test_cancel_while_permission_is_pending(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@run touch marker")
    _, req = agent.agent_request("session/request_permission")
    agent.notify("session/cancel", {"sessionId": sid})
    resp = agent.response(rid)
    assert resp["result"]["stopReason"] == "cancelled"
    # the client's (late) answer to the permission request is ignored
    agent.answer(req["id"], {"outcome": {"outcome": "cancelled"}})
    assert not (workspace / "marker").exists()
    ups = _tool_updates(agent.updates(sid), req["params"]["toolCall"]["toolCallId"])
    assert ups[-1]["status"] == "failed" and "declined" in ups[-1]["rawOutput"]["message"]
    resp, _ = agent.turn(sid, "@reply still alive")
    assert resp["result"]["stopReason"] == "end_turn"


def test_cancelled_outcome_cancels_the_turn(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@run touch marker\n@reply never")
    _, req = agent.agent_request("session/request_permission")
    agent.answer(req["id"], {"outcome": {"outcome": "cancelled"}})
    assert agent.response(rid)["result"]["stopReason"] == "cancelled"
    assert not (workspace / "marker").exists()
    assert chunks_text(agent.updates(sid)) == []


def test_cancel_kills_a_running_command(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@run echo started; sleep 30; touch marker")
    _, req = agent.agent_request("session/request_permission")
    agent.answer(req["id"], ALLOW)
    tcid = req["params"]["toolCall"]["toolCallId"]
    agent.wait_for(
        lambda m: m.get("method") == "session/update" and m["params"]["update"].get("toolCallId") == tcid
        and any(c["content"]["text"] == "started\n" for c in m["params"]["update"].get("content") or [])
    )
    agent.notify("session/cancel", {"sessionId": sid})
    assert agent.response(rid, timeout=3.0)["result"]["stopReason"] == "cancelled"
    ups = _tool_updates(agent.updates(sid), tcid)
    assert ups[-1]["status"] == "failed"
    assert not (workspace / "marker").exists()


def test_write_direct_when_client_has_no_fs(agent, workspace):
    (workspace / "sub").mkdir()
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@write sub/out.txt hello  world ")
    _, req = agent.agent_request("session/request_permission")
    tool_call = req["params"]["toolCall"]
    target = os.path.join(str(workspace), "sub", "out.txt")
    assert tool_call["kind"] == "edit"
    assert tool_call["content"] == [{"type": "diff", "path": target, "oldText": None, "newText": "hello  world "}]
    assert not (workspace / "sub" / "out.txt").exists()
    agent.answer(req["id"], ALLOW)
    assert agent.response(rid)["result"]["stopReason"] == "end_turn"
    assert (workspace / "sub" / "out.txt").read_text() == "hello  world "
    ups = _tool_updates(agent.updates(sid), tool_call["toolCallId"])
    assert ups[0]["sessionUpdate"] == "tool_call" and ups[-1]["status"] == "completed"


def test_write_shows_the_old_text_and_reject_leaves_the_file(agent, workspace):
    (workspace / "f.txt").write_text("old")
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@write f.txt new")
    _, req = agent.agent_request("session/request_permission")
    assert req["params"]["toolCall"]["content"][0]["oldText"] == "old"
    agent.answer(req["id"], REJECT)
    assert agent.response(rid)["result"]["stopReason"] == "end_turn"
    assert (workspace / "f.txt").read_text() == "old"
    ups = _tool_updates(agent.updates(sid), req["params"]["toolCall"]["toolCallId"])
    assert ups[-1]["status"] == "failed" and ups[-1]["rawOutput"]["code"] == "declined"


def test_write_goes_through_the_client_when_it_offers_fs(spawn_agent, workspace):
    client = spawn_agent()
    client.initialize(fs_write=True)
    sid = client.new_session(workspace)
    rid = client.prompt(sid, "@write a.txt via client")
    idx, req = client.agent_request("session/request_permission")
    client.answer(req["id"], ALLOW)
    _, fs = client.agent_request("fs/write_text_file", start=idx)
    assert fs["params"] == {"sessionId": sid, "path": os.path.join(str(workspace), "a.txt"), "content": "via client"}
    assert fs["id"] != req["id"]
    client.answer(fs["id"], {})
    assert client.response(rid)["result"]["stopReason"] == "end_turn"
    # the agent did not write the file itself
    assert not (workspace / "a.txt").exists()
    ups = _tool_updates(client.updates(sid), req["params"]["toolCall"]["toolCallId"])
    assert ups[-1]["status"] == "completed" and ups[-1]["rawOutput"]["via"] == "client"


def test_client_fs_error_fails_the_tool_call_with_its_message(spawn_agent, workspace):
    client = spawn_agent()
    client.initialize(fs_write=True)
    sid = client.new_session(workspace)
    rid = client.prompt(sid, "@write ../escape.txt nope")
    idx, req = client.agent_request("session/request_permission")
    client.answer(req["id"], ALLOW)
    _, fs = client.agent_request("fs/write_text_file", start=idx)
    client.answer_error(fs["id"], -32602, "path escapes the workspace")
    assert client.response(rid)["result"]["stopReason"] == "end_turn"
    ups = _tool_updates(client.updates(sid), req["params"]["toolCall"]["toolCallId"])
    assert ups[-1]["status"] == "failed"
    assert ups[-1]["content"][0]["content"]["text"] == "path escapes the workspace"
    assert ups[-1]["rawOutput"]["error"]["code"] == -32602


def test_agent_request_ids_start_at_zero_and_increase(agent, workspace):
    sid = agent.new_session(workspace)
    rid = agent.prompt(sid, "@run true\n@run true")
    idx, first = agent.agent_request("session/request_permission")
    agent.answer(first["id"], REJECT)
    _, second = agent.agent_request("session/request_permission", start=idx + 1)
    agent.answer(second["id"], REJECT)
    agent.response(rid)
    assert (first["id"], second["id"]) == (0, 1)


def test_run_in_a_missing_cwd_fails_the_tool_call(agent, tmp_path):
    sid = agent.new_session(tmp_path / "gone")
    rid = agent.prompt(sid, "@run true\n@reply after")
    _, req = agent.agent_request("session/request_permission")
    agent.answer(req["id"], ALLOW)
    assert agent.response(rid)["result"]["stopReason"] == "end_turn"
    ups = _tool_updates(agent.updates(sid), req["params"]["toolCall"]["toolCallId"])
    assert ups[-1]["status"] == "failed" and "cannot run the command" in ups[-1]["content"][0]["content"]["text"]


def test_cancel_while_the_client_writes_the_file(spawn_agent, workspace):
    client = spawn_agent()
    client.initialize(fs_write=True)
    sid = client.new_session(workspace)
    rid = client.prompt(sid, "@write a.txt text")
    idx, req = client.agent_request("session/request_permission")
    client.answer(req["id"], ALLOW)
    _, fs = client.agent_request("fs/write_text_file", start=idx)
    client.notify("session/cancel", {"sessionId": sid})
    assert client.response(rid)["result"]["stopReason"] == "cancelled"
    client.answer(fs["id"], {})  # late answer: ignored
    ups = _tool_updates(client.updates(sid), req["params"]["toolCall"]["toolCallId"])
    assert ups[-1]["status"] == "failed"
    resp, _ = client.turn(sid, "@reply ok")
    assert resp["result"]["stopReason"] == "end_turn"
