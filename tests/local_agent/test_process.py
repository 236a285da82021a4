"""Process-level directives (@env, @crash, @spawn, @ignore-sigterm, @garbage), malformed input,
session/load in a fresh process, and buffered output."""

from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from ._client import chunks_text


def _sig_ignored(pid: int, signum: int) -> bool:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    raise AssertionError("no SigIgn line")


def test_env_directive(spawn_agent, workspace):
    client = spawn_agent(env={"LOCAL_AGENT_PROBE": "probe value"})
    client.initialize()
    sid = client.new_session(workspace)
    _, ups = client.turn(sid, "@env LOCAL_AGENT_PROBE")
    assert "".join(chunks_text(ups)) == "probe value"
    _, ups = client.turn(sid, "@env LOCAL_AGENT_SURELY_UNSET")
    assert "".join(chunks_text(ups)) == "<unset>"


def test_crash_exits_with_the_code_after_the_first_chunk(agent, workspace):
    sid = agent.new_session(workspace)
    agent.prompt(sid, "@reply abcdef\n@chunks 3\n@crash 7")
    agent.wait_eof()
    assert agent.proc.wait(timeout=5) == 7
    assert chunks_text(agent.updates(sid)) == ["ab"]


def test_spawn_starts_a_sigterm_ignoring_grandchild(agent, workspace):
    sid = agent.new_session(workspace)
    _, ups = agent.turn(sid, "@spawn 30")
    answer = "".join(chunks_text(ups))
    assert answer.startswith("spawned ")
    pid = int(answer.split()[1])
    try:
        child = psutil.Process(pid)
        assert child.ppid() == agent.proc.pid
        assert _sig_ignored(pid, signal.SIGTERM)
        # the shell execs sleep right after reporting ready; wait for that (bounded)
        deadline = time.monotonic() + 5
        while child.cmdline()[:1] != ["sleep"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert child.cmdline() == ["sleep", "30.0"]
        # it outlives the agent
        agent.close()
        assert child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_ignore_sigterm_survives_sigterm(agent, workspace):
    sid = agent.new_session(workspace)
    assert not _sig_ignored(agent.proc.pid, signal.SIGTERM)
    resp, _ = agent.turn(sid, "@ignore-sigterm\n@reply ok")
    assert resp["result"]["stopReason"] == "end_turn"
    assert _sig_ignored(agent.proc.pid, signal.SIGTERM)
    agent.proc.send_signal(signal.SIGTERM)
    resp, ups = agent.turn(sid, "@reply still here")
    assert "".join(chunks_text(ups)) == "still here"
    assert agent.close() == 0


def test_sigterm_ends_a_normal_agent(agent, workspace):
    agent.new_session(workspace)
    agent.proc.send_signal(signal.SIGTERM)
    assert agent.proc.wait(timeout=5) == -signal.SIGTERM


def test_garbage_directive_does_not_wait_for_the_unknown_request(agent, workspace):
    sid = agent.new_session(workspace)
    start = len(agent.messages)
    rid = agent.prompt(sid, "@garbage\n@reply after garbage")
    resp = agent.response(rid)
    assert resp["result"]["stopReason"] == "end_turn"
    window = agent.messages[start:]
    assert any(isinstance(m, bytes) for m in window)
    unknown = [m for m in window if isinstance(m, dict) and m.get("method") == "local/unknown"]
    assert len(unknown) == 1 and "id" in unknown[0]
    # the client answers -32601 afterwards; the agent keeps going
    agent.answer_error(unknown[0]["id"], -32601, "Method not found")
    resp, ups = agent.turn(sid, "@reply next")
    assert "".join(chunks_text(ups)) == "next"


def test_malformed_input_lines_are_ignored(agent, workspace):
    sid = agent.new_session(workspace)
    for junk in [
        b"not json at all\n",
        b"\n",
        b"[1, 2, 3]\n",
        b"42\n",
        b"{}\n",
        b'{"jsonrpc":"2.0","id":777,"result":{}}\n',  # answer to a request never sent
        b'{"jsonrpc":"2.0","method":"some/notification","params":{}}\n',
        b'{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":"oops"}\n',
        b"\xff\xfe\x00garbage\n",
        b'{"unterminated": \n',
        b"x" * 2_000_000 + b"\n",
        b'{"jsonrpc":"2.0","id":{"a":1},"result":{}}\n',  # unhashable id
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":["x"]}}\n',
        b'{"jsonrpc":"2.0","id":[1],"method":"session/prompt","params":{"sessionId":{"x":1}}}\n',
    ]:
        agent.send(junk)
    resp, ups = agent.turn(sid, "@reply survived")
    assert "".join(chunks_text(ups)) == "survived"
    assert agent.proc.poll() is None


def test_unknown_request_is_method_not_found(agent):
    resp = agent.response(agent.request("session/frobnicate", {}))
    assert resp["error"]["code"] == -32601


def test_reply_history_counts_earlier_prompts(agent, workspace):
    sid = agent.new_session(workspace)
    _, ups = agent.turn(sid, "@reply-history")
    assert "".join(chunks_text(ups)) == "history: 0"
    agent.turn(sid, "second")
    _, ups = agent.turn(sid, "@reply-history")
    assert "".join(chunks_text(ups)) == "history: 2"
    other = agent.new_session(workspace)
    _, ups = agent.turn(other, "@reply-history")
    assert "".join(chunks_text(ups)) == "history: 0"


def test_session_load_in_a_fresh_process_replays_history(spawn_agent, workspace):
    first = spawn_agent()
    first.initialize()
    sid = first.new_session(workspace)
    first.turn(sid, "hello\n@chunks 2")
    first.turn(sid, "@reply second answer")
    assert first.close() == 0

    second = spawn_agent()
    second.initialize()
    start = len(second.messages)
    rid = second.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
    idx, resp = second.wait_for(lambda m: m.get("id") == rid, start=start)
    assert resp["result"]["modes"]["currentModeId"] == "default"
    replay = second.updates(sid, upto=idx)
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in replay] == [
        ("user_message_chunk", "hello\n@chunks 2"),
        ("agent_message_chunk", "You said: hello"),
        ("user_message_chunk", "@reply second answer"),
        ("agent_message_chunk", "second answer"),
    ]
    _, after = second.wait_for(lambda m: m.get("method") == "session/update", start=idx)
    assert after["params"]["update"]["sessionUpdate"] == "available_commands_update"
    _, ups = second.turn(sid, "@reply-history")
    assert "".join(chunks_text(ups)) == "history: 2"


def test_session_load_unknown_is_resource_not_found(agent, workspace):
    for bad in ["0000-not-there", "../../etc/passwd", ""]:
        resp = agent.response(agent.request("session/load", {"sessionId": bad, "cwd": str(workspace), "mcpServers": []}))
        assert resp["error"]["code"] == -32002
        assert resp["error"]["message"] == "Resource not found"


def test_state_dir_falls_back_to_xdg_state_home(spawn_agent, workspace, tmp_path):
    env = {"PADDOCK_LOCAL_STATE_DIR": "", "XDG_STATE_HOME": str(tmp_path / "xdg")}
    client = spawn_agent(env=env)
    client.initialize()
    sid = client.new_session(workspace)
    client.turn(sid, "hi")
    assert (tmp_path / "xdg" / "paddock-local" / "sessions" / f"{sid}.jsonl").is_file()


def test_state_dir_falls_back_to_home(spawn_agent, workspace, tmp_path):
    env = {"PADDOCK_LOCAL_STATE_DIR": "", "XDG_STATE_HOME": "", "HOME": str(tmp_path / "h")}
    client = spawn_agent(env=env)
    client.initialize()
    sid = client.new_session(workspace)
    client.turn(sid, "hi")
    assert (tmp_path / "h" / ".local" / "state" / "paddock-local" / "sessions" / f"{sid}.jsonl").is_file()


@pytest.mark.parametrize("how", ["flag", "env"])
def test_buffered_mode_delivers_every_line(spawn_agent, workspace, how):
    client = spawn_agent("--buffered") if how == "flag" else spawn_agent(env={"PADDOCK_LOCAL_BUFFERED": "1"})
    client.initialize()
    sids = [client.new_session(workspace) for _ in range(3)]
    rids = {sid: client.prompt(sid, "@reply 0123456789\n@chunks 5000") for sid in sids}
    for sid, rid in rids.items():
        assert client.response(rid)["result"]["stopReason"] == "end_turn"
    for sid in sids:
        chunks = chunks_text(client.updates(sid))
        assert len(chunks) == 5000
        assert "".join(chunks) == "0123456789" * 500


def test_buffered_mode_flushes_before_pauses_and_requests(spawn_agent, workspace):
    client = spawn_agent("--buffered")
    client.initialize()
    sid = client.new_session(workspace)
    rid = client.prompt(sid, "@reply abc\n@delay 5")
    # the first chunk arrives although the buffer is far from 64 KiB: a pause flushes
    client.wait_for(lambda m: m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk", timeout=3)
    client.notify("session/cancel", {"sessionId": sid})
    assert client.response(rid, timeout=3)["result"]["stopReason"] == "cancelled"
    rid = client.prompt(sid, "@run true")
    _, req = client.agent_request("session/request_permission", timeout=3)
    client.answer(req["id"], {"outcome": {"outcome": "selected", "optionId": "reject_once"}})
    assert client.response(rid)["result"]["stopReason"] == "end_turn"


def test_alloc_fork_and_burn_directives_answer_what_they_did(agent, workspace):
    sid = agent.new_session(workspace)
    _, ups = agent.turn(sid, "@alloc 16\n@fork 3\n@burn 0.1")
    assert "".join(chunks_text(ups)) == "allocated 16 MB; forked 3; burned 0.1 s"
    me = psutil.Process(agent.proc.pid)
    assert me.memory_info().rss > 16 * 1024 * 1024
    assert len([c for c in me.children() if c.status() != psutil.STATUS_ZOMBIE]) == 3


@pytest.mark.parametrize("line", ["@alloc 0", "@alloc lots", "@fork -1", "@burn soon"])
def test_a_malformed_resource_directive_fails_the_prompt_with_invalid_params(agent, workspace, line):
    sid = agent.new_session(workspace)
    resp = agent.response(agent.prompt(sid, line))
    assert resp["error"]["code"] == -32602 and line.split()[0] in resp["error"]["message"]
