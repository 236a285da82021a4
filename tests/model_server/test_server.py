"""Dialect-independent behaviour: scripts, slow streams, disconnects, the request log, the command."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from paddock.testing import ModelServer, Script, Shell, Text, load_script
from paddock.testing._reply import split_text

from ._client import connect, post, post_json, post_sse
from .test_chat import body as chat_body
from .test_chat import deltas, tool_call


def test_split_text():
    assert split_text("Hello from mock", 3) == ("Hello ", "from ", "mock")
    assert split_text("abc", 5) == ("a", "b", "c")
    assert split_text("one two", 1) == ("one two",)


def test_slow_stream_spaces_its_deltas(tmp_path):
    script = {"scenarios": {"slowish": [{"type": "text", "text": "a b c d e", "chunks": 5, "delay": 0.1}]}}
    with ModelServer(script) as server:
        started = time.monotonic()
        _, _, events = post_sse(server.url, "/v1/chat/completions", chat_body("SCENARIO:slowish"))
        elapsed = time.monotonic() - started
    assert [d.get("content") for d in deltas(events)[1:6]] == ["a ", "b ", "c ", "d ", "e"]
    assert elapsed >= 0.4  # four waits of 0.1 s between five chunks (a lower bound, not a speed test)


def test_client_disconnect_mid_stream_is_logged(server):
    conn = connect(server.url)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(chat_body("SCENARIO:slow")),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200
    resp.fp.readline()  # first event arrived
    server.wait_stream_started(timeout=5)
    resp.close()  # the server owns a Connection: close stream; this drops the socket
    conn.close()
    [record] = server.wait_for(lambda r: r.client_disconnected, timeout=10)
    assert record.scenario == "slow" and 0 < record.frames_sent < 100


def test_stop_ends_an_open_slow_stream_promptly(tmp_path):
    server = ModelServer().start()
    conn = connect(server.url)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(chat_body("SCENARIO:slow")),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        server.wait_stream_started(timeout=5)
        server.stop(timeout=5)
        assert resp.read().count(b"data:") < 100  # the stream was cut, not played to the end
    finally:
        conn.close()
        server.stop()


def test_unknown_path_bad_json_and_get_models(server):
    status, payload = post_json(server.url, "/v2/nothing", {})
    assert status == 404
    status, _, raw = post(server.url, "/v1/chat/completions", "not json")
    assert status == 400 and b"bad JSON" in raw
    conn = connect(server.url)
    conn.request("GET", "/v1/models")
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["data"][0]["id"] == "mock-model"
    conn.close()
    kinds = [r.kind for r in server.wait_for(lambda r: True, count=3, timeout=5)]
    assert sorted(kinds) == ["bad_request", "models", "not_found"]


def test_every_request_is_logged_as_jsonl(server, tmp_path):
    post_sse(server.url, "/v1/chat/completions", chat_body("SCENARIO:tool_shell"), headers={"User-Agent": "probe/1"})
    post_json(server.url, "/v1/chat/completions", chat_body("SCENARIO:http500"))
    server.wait_for(count=2, timeout=5)
    lines = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert [(x["seq"], x["scenario"], x["status"]) for x in lines] == [(1, "tool_shell", 200), (2, "http500", 500)]
    assert lines[0]["headers"]["user-agent"] == "probe/1" and lines[0]["tool_calls"] == ["bash"]
    assert lines[0]["body"]["messages"][-1]["content"] == "SCENARIO:tool_shell"


def test_multi_step_scenario_plays_one_segment_per_tool_round(tmp_path):
    script = Script(scenarios={"two": (Text(text="First I touch."), Shell(command="touch a"),
                                       Shell(command="touch b"), Text(text="All done after {output}", chunks=1))})
    with ModelServer(script) as server:
        _, _, events = post_sse(server.url, "/v1/chat/completions", chat_body("SCENARIO:two"))
        assert "".join(d.get("content") or "" for d in deltas(events)) == "First I touch."
        assert tool_call(events)[2]["command"] == "touch a"
        history = []
        for output, expect in (("out-a", "touch b"), ("out-b", None)):
            history += [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                                                              "function": {"name": "bash", "arguments": "{}"}}]},
                        {"role": "tool", "tool_call_id": "c", "content": output}]
            _, _, events = post_sse(server.url, "/v1/chat/completions", chat_body("SCENARIO:two", *history))
            if expect:
                assert tool_call(events)[2]["command"] == expect
            else:
                assert "".join(d.get("content") or "" for d in deltas(events)) == "All done after out-b"
        assert [r.segment for r in server.wait_for(count=3, timeout=5)] == [0, 1, 2]


def test_script_files_default_scenario_and_unknown_markers(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps([{"type": "text", "text": "from json", "chunks": 1}]))
    (tmp_path / "s.toml").write_text('default = "x"\n[[scenarios.x]]\ntype = "error"\nstatus = 503\n')
    with ModelServer(tmp_path / "s.json") as server:
        _, _, events = post_sse(server.url, "/v1/chat/completions", chat_body("SCENARIO:no_such_one"))
        assert deltas(events)[1]["content"] == "from json"
        server.set_script(load_script(tmp_path / "s.toml"))
        status, payload = post_json(server.url, "/v1/chat/completions", chat_body("no marker"))
        assert status == 503 and payload["error"]["message"] == "mock error 503"
        _, _, events = post_sse(server.url, "/v1/chat/completions", chat_body("SCENARIO:text"))
        assert deltas(events)[1]["content"] == "Hello "
    with pytest.raises(ValueError, match="bad scenario script"):
        ModelServer({"scenarios": {"x": [{"type": "dance"}]}})


def test_the_command_prints_its_url_first_and_exits_on_sigterm(tmp_path):
    log = tmp_path / "log.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "paddock.cli", "mock-model", "--port", "0", "--log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and int(url.rsplit(":", 1)[1]) > 0
        status, payload = post_json(url, "/v1/chat/completions", chat_body("hi", stream=False))
        assert status == 200 and payload["choices"][0]["message"]["content"] == "Hello from mock"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert json.loads(log.read_text().splitlines()[0])["status"] == 200
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_the_command_on_a_busy_port_says_so_in_one_line_and_exits_2(server):
    port = server._httpd.server_address[1]
    done = subprocess.run([sys.executable, "-m", "paddock.cli", "mock-model", "--port", str(port)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"paddock mock-model: cannot listen on 127.0.0.1:{port}: Address already in use"]


def test_binds_loopback_only(server):
    assert server._httpd.server_address[0] == "127.0.0.1"
