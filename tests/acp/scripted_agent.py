"""A tiny scripted ACP agent for adapter tests: each prompt line is a command it performs
against the client (``read PATH``, ``term CMD``, ``termenv NAME=VALUE CMD``, ``termlimit N CMD``, ``termhang CMD``,
``termcwd DIR CMD``, ``ask METHOD``), then it answers with one ``agent_message_chunk`` per command result.
The prompt ``deaf-start`` drops cancels sent in its first 0.3 s, like the agents the cancel guard is
for; ``deaf-forever [N]`` ignores cancels altogether (N chunks, default 16). With ``SCRIPTED_STUCK`` set, ``session/new`` for a
cwd whose name starts with ``stuck`` is never answered (a stuck agent; it leaves a
``session-new-received`` file in that cwd), and every other
``session/new`` gets its own id (``scripted-N``)."""

from __future__ import annotations

import json
import os
import select
import sys
import time

_next_id = iter(range(1000, 10**9))
_buf = bytearray()
_queued: list[dict] = []


def readline(timeout: float | None = None) -> dict | None:
    """The next JSON line from stdin; None at EOF or after ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while b"\n" not in _buf:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not select.select([0], [], [], wait)[0]:
            return None
        chunk = os.read(0, 65536)
        if not chunk:
            if not _buf:
                raise SystemExit(0)
            break
        _buf.extend(chunk)
    line, _, rest = bytes(_buf).partition(b"\n")
    _buf[:] = rest
    return json.loads(line)


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def call(method: str, params: dict) -> dict:
    rid = next(_next_id)
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    while True:
        msg = readline()
        if msg.get("id") == rid and "method" not in msg:
            return msg


def run(sid: str, line: str) -> str:
    op, _, arg = line.partition(" ")
    if op == "read":
        r = call("fs/read_text_file", {"sessionId": sid, "path": arg})
        return f"ok:{r['result']['content']}" if "result" in r else f"err:{r['error']['code']}:{r['error']['message']}"
    if op in ("term", "termlimit", "termhang", "termcwd", "termenv"):
        params = {"sessionId": sid, "command": arg}
        if op == "termenv":
            pair, _, cmd = arg.partition(" ")
            name, _, value = pair.partition("=")
            params = {"sessionId": sid, "command": cmd, "env": [{"name": name, "value": value}]}
        if op == "termcwd":
            d, _, cmd = arg.partition(" ")
            params = {"sessionId": sid, "command": cmd, "cwd": d}
        if op == "termlimit":
            n, _, cmd = arg.partition(" ")
            params = {"sessionId": sid, "command": cmd, "outputByteLimit": int(n)}
        r = call("terminal/create", params)
        if "error" in r:
            return f"err:{r['error']['code']}:{r['error']['message']}"
        tid = r["result"]["terminalId"]
        if op == "termhang":
            return f"started:{tid}"
        ex = call("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})["result"]
        out = call("terminal/output", {"sessionId": sid, "terminalId": tid})["result"]
        call("terminal/release", {"sessionId": sid, "terminalId": tid})
        return f"exit={ex['exitCode']} truncated={out['truncated']} out={out['output']}"
    if op == "ask":
        r = call(arg, {"sessionId": sid, "terminalId": "term-nope"})
        return f"err:{r['error']['code']}" if "error" in r else "ok"
    return f"unknown:{line}"


def chunk(sid: str, text: str) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})


def deaf_forever(rid, sid: str, count: int = 16) -> None:
    """Ignore every cancel: stream ``count`` chunks 0.05 s apart, then end the turn normally."""
    for i in range(count):
        chunk(sid, f"d{i} ")
        msg = readline(0.05)
        if msg is not None and msg.get("method") != "session/cancel":
            _queued.append(msg)  # a prompt sent meanwhile waits for this one, as in a real agent
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def deaf_start(rid, sid: str) -> None:
    """Drop any session/cancel that arrives in the first 0.3 s (the bug some agents have), then
    stream 16 chunks 0.05 s apart, honouring a cancel from then on."""
    start = time.monotonic()
    while time.monotonic() - start < 0.3:
        readline(0.3 - (time.monotonic() - start))
    for i in range(16):
        chunk(sid, f"c{i} ")
        msg = readline(0.05)
        if msg is not None and msg.get("method") == "session/cancel":
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "cancelled"}})
            return
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def main() -> None:
    while True:
        msg = _queued.pop(0) if _queued else readline()
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize" and os.environ.get("SCRIPTED_HANG_INIT"):
            continue
        if method == "initialize":
            caps = {"sessionCapabilities": {"resume": {}}} if os.environ.get("SCRIPTED_RESUME") else {}
            if os.environ.get("SCRIPTED_CLOSE_MARK"):
                caps = {"sessionCapabilities": {"close": {}}}
            send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": caps,
                                                          "authMethods": [{"id": "good", "name": "Good"}]}})
        elif method == "authenticate":
            if params.get("methodId") == "good":
                send({"jsonrpc": "2.0", "id": rid, "result": {}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "Authentication required"}})
        elif method == "session/close" and os.environ.get("SCRIPTED_CLOSE_MARK"):
            with open(os.environ["SCRIPTED_CLOSE_MARK"], "a") as mark:
                mark.write(params.get("sessionId", "") + "\n")
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/resume" and os.environ.get("SCRIPTED_RESUME"):
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/new" and os.environ.get("SCRIPTED_STUCK"):
            if not os.path.basename(params.get("cwd", "")).startswith("stuck"):
                send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"scripted-{next(_next_id)}"}})
            else:  # never answered; the marker lets a test see the request arrived
                open(os.path.join(params["cwd"], "session-new-received"), "w").close()
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "scripted-1"}})
        elif method == "session/prompt":
            sid = params["sessionId"]
            text = "".join(b.get("text", "") for b in params["prompt"])
            if text == "deaf-start":
                deaf_start(rid, sid)
                continue
            if text.startswith("deaf-forever"):
                deaf_forever(rid, sid, int(text.split()[1]) if " " in text else 16)
                continue
            for cmd in text.splitlines():
                result = run(sid, cmd.strip())
                send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
                    "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": result + "\n"}}}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        elif rid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


if __name__ == "__main__":
    main()
