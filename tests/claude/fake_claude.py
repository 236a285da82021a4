"""A scripted stand-in for Claude Code's stream-json mode, for tests that need no real CLI.

Run as ``python fake_claude.py [--no-init] <claude flags>``. It answers ``initialize`` (unless
``--no-init``) and plays one behaviour per user message, chosen by a word in the message:
``GARBAGE`` (a non-JSON stdout line first), ``ODD`` (a JSON line that is no object, a line of an
unknown type and an ``assistant`` line of a bad shape first), ``CRASH`` (stderr, then exit 3 mid-turn), ``HANG``
(streams, then ignores ``interrupt``), ``ASK`` (a ``can_use_tool`` the host must answer),
``CANCELREQ`` (a ``can_use_tool`` it then cancels), ``HOOK`` (an unsupported control request
first), ``THINK`` (a streamed thinking block, then a text block of the same message), else a
short text answer. Every host line is appended to ``$FAKE_CLAUDE_LOG``; each start's argv, cwd,
environment and pid to ``$FAKE_CLAUDE_LOG.argv``.
"""

from __future__ import annotations

import json
import os
import sys
import uuid


def out(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> int:
    args = sys.argv[1:]
    sid = next((a.split("=", 1)[1] for a in args if a.startswith(("--session-id=", "--resume="))), str(uuid.uuid4()))
    log = os.environ.get("FAKE_CLAUDE_LOG")
    if log:
        with open(log + ".argv", "a") as f:
            f.write(json.dumps({"argv": args, "cwd": os.getcwd(), "env": dict(os.environ), "pid": os.getpid()}) + "\n")
    n = 0
    waiting: dict[str, dict] = {}
    hang = False
    for line in sys.stdin:
        if log:
            with open(log, "a") as f:
                f.write(line)
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "control_request":
            sub = msg["request"]["subtype"]
            if sub == "initialize" and "--no-init" in args:
                continue
            out({"type": "control_response", "response": {"subtype": "success", "request_id": msg["request_id"],
                                                          "response": {"pid": os.getpid()} if sub == "initialize" else {}}})
            if sub == "interrupt" and not hang:
                out({"type": "result", "subtype": "error_during_execution", "is_error": True, "session_id": sid,
                     "terminal_reason": "aborted_streaming", "usage": {"input_tokens": 0, "output_tokens": 0}})
            continue
        if kind == "control_response":
            rid = msg["response"]["request_id"]
            req = waiting.pop(rid, None)
            if req is not None:
                answer = msg["response"].get("response") or {"error": msg["response"].get("error")}
                text = f"answer {json.dumps(answer, sort_keys=True)}"
                finish(sid, n, text)
            continue
        if kind != "user":
            continue
        n += 1
        text = msg["message"]["content"]
        out({"type": "system", "subtype": "init", "session_id": sid, "model": "fake-model", "permissionMode": "default"})
        if "GARBAGE" in text:
            sys.stdout.write("this is not json\n")
        if "ODD" in text:  # JSON that is no object, an unknown type, a known type of a bad shape
            sys.stdout.write("[1, 2]\n")
            out({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}})
            out({"type": "assistant", "message": {"id": f"msg_odd{n}", "content": "not a list of blocks"}})
        if "CRASH" in text:
            stream_text(n, "partial")
            sys.stderr.write("fatal: the fake crashed\n")
            sys.stderr.flush()
            return 3
        if "HANG" in text:
            hang = True
            stream_text(n, "never ends")
            continue
        if "ASK" in text or "CANCELREQ" in text:
            tool_id = f"toolu_{n}"
            out({"type": "assistant", "message": {"id": f"msg_{n}", "content": [
                {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "echo hi"}}]}})
            rid = f"ask-{n}"
            out({"type": "control_request", "request_id": rid, "request": {
                "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "echo hi"}, "tool_use_id": tool_id,
                "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "echo hi"}],
                                            "behavior": "allow", "destination": "session"}]}})
            if "CANCELREQ" in text:
                out({"type": "control_cancel_request", "request_id": rid})
                finish(sid, n, "cancelled by the CLI")
            else:
                waiting[rid] = msg
            continue
        if "THINK" in text:
            mid = f"msg_t{n}"
            out({"type": "stream_event", "event": {"type": "message_start", "message": {"id": mid}}})
            out({"type": "stream_event", "event": {"type": "content_block_start", "index": 0,
                                                   "content_block": {"type": "thinking", "thinking": ""}}})
            for piece in ("let me ", "think"):
                out({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
                                                       "delta": {"type": "thinking_delta", "thinking": piece}}})
            out({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "signature_delta", "signature": "sig"}}})
            out({"type": "assistant", "message": {"id": mid, "content": [
                {"type": "thinking", "thinking": "let me think", "signature": "sig"}]}})
            out({"type": "stream_event", "event": {"type": "content_block_start", "index": 1,
                                                   "content_block": {"type": "text", "text": ""}}})
            for piece in ("the ", "answer"):
                out({"type": "stream_event", "event": {"type": "content_block_delta", "index": 1,
                                                       "delta": {"type": "text_delta", "text": piece}}})
            out({"type": "assistant", "message": {"id": mid, "content": [{"type": "text", "text": "the answer"}]}})
            out({"type": "result", "subtype": "success", "is_error": False, "stop_reason": "end_turn",
                 "session_id": sid, "result": "the answer", "usage": {"input_tokens": 1, "output_tokens": 1}})
            continue
        if "HOOK" in text:
            out({"type": "control_request", "request_id": "hook-1", "request": {"subtype": "hook_callback",
                                                                               "callback_id": "x", "input": {}}})
            waiting["hook-1"] = msg
            continue
        finish(sid, n, "ok")
    return 0


def stream_text(n: int, text: str) -> None:
    out({"type": "stream_event", "event": {"type": "message_start", "message": {"id": f"msg_s{n}"}}})
    out({"type": "stream_event", "event": {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}})
    out({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": text}}})


def finish(sid: str, n: int, text: str) -> None:
    out({"type": "assistant", "message": {"id": f"msg_f{n}", "content": [{"type": "text", "text": text}]}})
    out({"type": "result", "subtype": "success", "is_error": False, "stop_reason": "end_turn", "session_id": sid,
         "result": text, "total_cost_usd": 0.01 * n,
         "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 5}})


if __name__ == "__main__":
    sys.exit(main())
