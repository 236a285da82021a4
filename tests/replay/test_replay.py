"""Replay recorded transcripts through the replayer (a real subprocess) with the same scripted
sessions that recorded them, over our own transports. Runs everywhere: no real CLI needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paddock.testing import SESSIONS, Recorder, load_transcript
from paddock.contract import PaddockError

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"
ALL = sorted(RECORDINGS.glob("*/*.jsonl"))
REPLAY = [sys.executable, "-m", "paddock.testing.replay"]


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", os.defpath)}


def replay(path: Path, workspace: Path):
    """Run the recording's own session against the replayer, re-recording what goes over the wire."""
    transcript = load_transcript(path)
    header = transcript.header
    recorder = Recorder(cli=header["cli"], version=header["version"], scenario=header["scenario"],
                        protocol=header["protocol"], workspace=str(workspace))
    result = SESSIONS[header["cli"]]([*REPLAY, str(path), "--workspace", str(workspace)], _env(), str(workspace),
                                     f"Paddock recording. SCENARIO:{header['scenario']}", tap=recorder, timeout=20)
    return transcript, recorder, result


def test_there_are_recordings_for_every_driver():
    assert {p.parent.name for p in ALL} >= {"codex", "claude", "acp", "opencode"}
    assert {load_transcript(p).header["cli"] for p in ALL} == {
        "codex", "claude", "gemini", "qwen", "claude-acp", "copilot", "opencode"}


def _channels(lines: list[str]) -> dict[tuple, list[str]]:
    """Frames per direction and channel. A channel is one stdio stream, or for HTTP one request
    (its response and its SSE events); only the interleaving of channels depends on timing."""
    out: dict[tuple, list[str]] = {}
    for line in lines:
        frame = json.loads(line)
        msg = frame.get("msg") or {}
        channel = msg.get("req") if frame["type"] == "emit_inbound" and "http" in msg else None
        out.setdefault((frame["type"], channel), []).append(line)
    return out


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recording_replays_byte_identically(path, tmp_path):
    transcript, recorder, result = replay(path, tmp_path)
    assert result.returncode == 0, result.stderr_tail
    original = path.read_bytes().decode().splitlines()
    again = recorder.dumps().decode().splitlines()
    assert again[0] == original[0]  # header
    # Every direction and channel is byte-identical; only how reader and writer threads
    # interleave may differ between two runs.
    assert _channels(again[1:]) == _channels(original[1:])
    assert sorted(again) == sorted(original)


def _edited(path: Path, tmp_path: Path, edit) -> Path:
    lines = path.read_text().splitlines()
    out = []
    for line in lines:
        frame = json.loads(line)
        out.append(json.dumps(edit(frame), separators=(",", ":"), ensure_ascii=False))
    target = tmp_path / path.name
    target.write_text("\n".join(out) + "\n")
    return target


def test_a_changed_outbound_frame_fails_with_a_readable_diff(tmp_path):
    def edit(frame):
        msg = frame.get("msg") or {}
        if frame["type"] == "expect_outbound" and msg.get("method") == "turn/start":
            msg["params"]["input"][0]["text"] = "a different prompt"
        return frame

    changed = _edited(RECORDINGS / "codex" / "text.jsonl", tmp_path, edit)
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(PaddockError) as info:
        replay(changed, ws)
    stderr = info.value.stderr_tail
    assert "replay mismatch at frame" in stderr and "the client sent a different line than recorded" in stderr
    lines = stderr.splitlines()
    assert "--- recorded (expected)" in lines and "+++ sent (actual)" in lines
    assert [x.split('"text": ')[1] for x in lines if x.startswith(("-", "+")) and '"text": ' in x] == [
        '"a different prompt",', '"Paddock recording. SCENARIO:text",']


def test_a_changed_http_request_fails_with_a_readable_diff(tmp_path):
    def edit(frame):
        msg = frame.get("msg") or {}
        if frame["type"] == "expect_outbound" and msg.get("path") == "/session":
            msg["body"] = {"title": "another title"}
        return frame

    changed = _edited(RECORDINGS / "opencode" / "text.jsonl", tmp_path, edit)
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(Exception) as info:  # the fake server answers 500 and exits 3
        replay(changed, ws)
    assert "500" in str(info.value)
    # The replayer's verdict (exit 3 and the diff) is on its stderr; run it alone to read it.
    proc = subprocess.Popen([*REPLAY, str(changed), "--workspace", str(ws), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env())
    try:
        url = proc.stdout.readline().decode().rsplit(" ", 1)[1].strip()
        port = int(url.rsplit(":", 1)[1])
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/event")
        conn.getresponse()  # the stream opens as recorded
        post = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        post.request("POST", "/session", body=json.dumps({"title": "paddock recording"}))
        assert post.getresponse().status == 500
        assert proc.wait(10) == 3
        stderr = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert "replay mismatch at frame" in stderr
    assert '-    "title": "another title"' in stderr and '+    "title": "paddock recording"' in stderr


def test_wildcards_match_any_value(tmp_path):
    def edit(frame):
        msg = frame.get("msg") or {}
        if frame["type"] == "expect_outbound" and msg.get("method") == "session/prompt":
            msg["params"] = {"sessionId": "<*>", "prompt": "<*>"}
        return frame

    loose = _edited(RECORDINGS / "acp" / "copilot-text.jsonl", tmp_path, edit)
    ws = tmp_path / "ws"
    ws.mkdir()
    _, _, result = replay(loose, ws)
    assert result.returncode == 0


def _run_replayer(path: Path, stdin: bytes, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*REPLAY, str(path)], input=stdin, capture_output=True, cwd=cwd, timeout=30, env=_env())


def test_early_eof_and_extra_lines_fail(tmp_path):
    path = RECORDINGS / "claude" / "text.jsonl"
    early = _run_replayer(path, b"", tmp_path)
    assert early.returncode == 3 and b"closed stdin, but the recording expects another line" in early.stderr
    frames = load_transcript(path).frames
    outbound = [json.dumps(f["msg"]).encode() + b"\n" for f in frames if f["type"] == "expect_outbound"]
    ok = _run_replayer(path, b"".join(outbound), tmp_path)
    assert ok.returncode == 0, ok.stderr
    emitted = ok.stdout.decode().splitlines()
    assert len(emitted) == sum(1 for f in frames if f["type"] == "emit_inbound")
    extra = _run_replayer(path, b"".join(outbound) + b'{"type":"user"}\n', tmp_path)
    assert extra.returncode == 3 and b"after the end of the recording" in extra.stderr


def test_emitted_lines_restore_the_workspace_and_answer_with_the_clients_ids(tmp_path):
    path = RECORDINGS / "acp" / "gemini-text.jsonl"
    frames = load_transcript(path).frames
    first_out = next(f["msg"] for f in frames if f["type"] == "expect_outbound")
    first_out = {**first_out, "id": 41}  # any id: renumbered to 1 on the way in, restored on the way out
    proc = subprocess.Popen([*REPLAY, str(path), "--workspace", str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    try:
        proc.stdin.write(json.dumps(first_out).encode() + b"\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 41 and reply["result"]["protocolVersion"] == 1
    finally:
        proc.kill()
        proc.communicate()


def test_bad_transcript_file_exits_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"expect_outbound","msg":{}}\n')
    result = _run_replayer(bad, b"", tmp_path)
    assert result.returncode == 2 and b"header" in result.stderr
