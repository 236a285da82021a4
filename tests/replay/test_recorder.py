"""The recorder's normalisation: id renumbering per direction, paths, timestamps, host."""

from __future__ import annotations

import json
import socket

from paddock.testing import Recorder, load_transcript
from paddock.testing._transcript import diff_frames, matches


def _frames(rec: Recorder) -> list[dict]:
    return [json.loads(x) for x in rec.dumps().decode().splitlines()]


def test_jsonrpc_ids_are_renumbered_per_direction_in_first_seen_order(tmp_path):
    rec = Recorder(cli="x", version="1", scenario="s", protocol="acp", workspace=str(tmp_path))
    rec.on_outbound(b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}')
    rec.on_inbound(b'{"jsonrpc":"2.0","id":7,"result":{}}')
    rec.on_outbound(b'{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"' + str(tmp_path).encode() + b'"}}')
    rec.on_inbound(b'{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}')
    rec.on_outbound(b'{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}')
    rec.on_inbound(b'{"jsonrpc":"2.0","id":9,"result":{"sessionId":"s1"}}')
    rec.on_inbound(b"not json at all")
    header, *frames = _frames(rec)
    assert header == {"type": "header", "format": "paddock-transcript/1", "cli": "x", "version": "1",
                      "scenario": "s", "protocol": "acp"}
    assert [(f["type"][:4], f.get("msg", {}).get("id")) for f in frames] == [
        ("expe", 1), ("emit", 1), ("expe", 2), ("emit", 1), ("expe", 1), ("emit", 2), ("emit", None)]
    assert frames[2]["msg"]["params"]["cwd"] == "<workspace>"
    assert frames[-1] == {"type": "emit_inbound", "line": "not json at all"}


def test_claude_request_ids_timestamps_paths_and_host(tmp_path):
    home = tmp_path / "home"
    rec = Recorder(cli="claude", version="2", scenario="s", protocol="claude-stream-json",
                   workspace=str(tmp_path / "ws"), replacements=[(str(home), "<home>")])
    rec.on_outbound(b'{"type":"control_request","request_id":"req_1_ab","request":{"subtype":"initialize"}}')
    rec.on_inbound(b'{"type":"control_response","response":{"subtype":"success","request_id":"req_1_ab"}}')
    slug = str(tmp_path / "ws").replace("/", "-").replace("_", "-")
    line = {"type": "control_request", "request_id": "4c28-uuid", "timestamp": "2026-11-29T19:00:00Z",
            "emittedAtMs": 1795979018000, "path": f"{home}/.claude/projects/{slug}/x.jsonl",
            "host": socket.gethostname(), "request": {"subtype": "can_use_tool"}}
    rec.on_inbound(json.dumps(line).encode())
    rec.on_outbound(b'{"type":"control_response","response":{"subtype":"success","request_id":"4c28-uuid"}}')
    _, a, b, c, d = _frames(rec)
    assert a["msg"]["request_id"] == "id-1" and b["msg"]["response"]["request_id"] == "id-1"
    assert c["msg"]["request_id"] == "id-1" and d["msg"]["response"]["request_id"] == "id-1"
    assert c["msg"]["timestamp"] == "<ts>" and c["msg"]["emittedAtMs"] == 0
    assert c["msg"]["path"] == "<home>/.claude/projects/<workspace-slug>/x.jsonl"
    assert c["msg"]["host"] == "<host>"


def test_written_file_loads_back(tmp_path):
    rec = Recorder(cli="codex", version="1", scenario="text", protocol="codex-app-server")
    rec.on_outbound(b'{"id":1,"method":"initialize"}')
    path = rec.write(tmp_path / "sub" / "t.jsonl")
    transcript = load_transcript(path)
    assert transcript.framing == "jsonrpc" and transcript.frames[0]["msg"]["method"] == "initialize"


def test_matches_and_diff():
    assert matches({"a": "<*>", "b": [1, "<*>"]}, {"a": {"x": 1}, "b": [1, None]})
    assert not matches({"a": 1}, {"a": 1, "b": 2}) and not matches({"a": 1}, {"a": 1.0}) and not matches([1], [1, 2])
    diff = diff_frames({"k": "old"}, {"k": "new"})
    assert '-  "k": "old"' in diff and '+  "k": "new"' in diff
