"""A scripted ACP agent with claude-agent-acp 0.49.0's session lifecycle, for the mode tests.

- ``session/close`` is answered only after ``CLOSING_AGENT_CLOSE_DELAY`` seconds (default 1),
  while other requests are served: the closing session stays in memory meanwhile;
- ``session/load`` of a session in memory (closing or not) answers from it, with its current
  mode; of one not in memory, reloads it from "disk" in mode ``default`` (modes are not saved);
- ``session/set_mode`` on a closing session is acknowledged and changes nothing (the wire showed
  claude-agent-acp acknowledge a set_mode on the session it was closing);
- a prompt line ``run NAME`` creates the file NAME in the cwd: at once in mode
  ``bypassPermissions``, else after ``session/request_permission`` says allow;
  ``drift`` reports ``current_mode_update`` to ``bypassPermissions`` and goes there (a plan exit
  choosing it); ``planexit`` asks ExitPlanMode's permission (options ``bypassPermissions``
  allow_always, ``default`` allow_once, ``plan`` reject_once) and goes to the mode chosen; ``stuck`` makes every later ``session/set_mode`` fail (-32603);
- a prompt on a session not in memory fails -32603 "Session not found".

Every request the agent receives is appended, as ``method``, to ``requests.log`` in the cwd.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from pathlib import Path

MODES = {"currentModeId": "default", "availableModes": [
    {"id": "default", "name": "Default"}, {"id": "bypassPermissions", "name": "Bypass"}]}
CLOSE_DELAY = float(os.environ.get("CLOSING_AGENT_CLOSE_DELAY", "1.0"))

_buf = bytearray()
_ids = iter(range(1000, 10**9))
sessions: dict[str, dict] = {}  # in memory: {"mode", "closing", "cwd"}
disk: dict[str, str] = {}  # saved sessions: id -> cwd
closes: list[tuple[float, object, str]] = []  # (due, request id, session id)
stuck = False


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


def readline(timeout: float | None) -> dict | None:
    deadline = None if timeout is None else time.monotonic() + timeout
    while b"\n" not in _buf:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not select.select([0], [], [], wait)[0]:
            return None
        chunk = os.read(0, 65536)
        if not chunk:
            raise SystemExit(0)
        _buf.extend(chunk)
    line, _, rest = bytes(_buf).partition(b"\n")
    _buf[:] = rest
    return json.loads(line)


def due_closes() -> None:
    now = time.monotonic()
    for entry in [c for c in closes if c[0] <= now]:
        closes.remove(entry)
        _, rid, sid = entry
        sessions.pop(sid, None)
        send({"id": rid, "result": {}})


def next_message() -> dict:
    while True:
        due_closes()
        wait = min((c[0] for c in closes), default=None)
        msg = readline(None if wait is None else max(0.0, wait - time.monotonic()))
        if msg is not None:
            return msg


def call(method: str, params: dict) -> dict:
    rid = next(_ids)
    send({"id": rid, "method": method, "params": params})
    while True:
        msg = next_message()
        if msg.get("id") == rid and "method" not in msg:
            return msg
        handle(msg)  # the agent serves other requests meanwhile


def update(sid: str, body: dict) -> None:
    send({"method": "session/update", "params": {"sessionId": sid, "update": body}})


def say(sid: str, text: str) -> None:
    update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def prompt(rid: object, sid: str, text: str) -> None:
    global stuck
    session = sessions.get(sid)
    if session is None:
        send({"id": rid, "error": {"code": -32603, "message": "Internal error", "data": {"details": "Session not found"}}})
        return
    for line in text.splitlines():
        op, _, arg = line.partition(" ")
        if op == "drift":
            session["mode"] = "bypassPermissions"
            update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": "bypassPermissions"})
            say(sid, "drifted")
        elif op == "planexit":
            # claude-agent-acp's ExitPlanMode: each allow option names the mode the session goes to.
            answer = call("session/request_permission", {
                "sessionId": sid,
                "toolCall": {"toolCallId": "call-plan", "title": "Ready to code?", "kind": "switch_mode",
                             "status": "pending", "rawInput": {"plan": "touch a file"}},
                "options": [{"optionId": "bypassPermissions", "name": "Yes, and bypass permissions",
                             "kind": "allow_always"},
                            {"optionId": "default", "name": "Yes, and manually approve edits", "kind": "allow_once"},
                            {"optionId": "plan", "name": "No, keep planning", "kind": "reject_once"}]})
            chosen = answer.get("result", {}).get("outcome", {}).get("optionId")
            if chosen in ("bypassPermissions", "default"):
                session["mode"] = chosen
                update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": chosen})
            say(sid, f"plan exit: {chosen}")
        elif op == "stuck":
            stuck = True
            say(sid, "stuck")
        elif op == "run":
            allowed = session["mode"] == "bypassPermissions"
            if not allowed:
                answer = call("session/request_permission", {
                    "sessionId": sid,
                    "toolCall": {"toolCallId": f"call-{arg}", "title": f"touch {arg}", "kind": "execute",
                                 "status": "pending", "rawInput": {"command": f"touch {arg}"}},
                    "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]})
                outcome = answer.get("result", {}).get("outcome", {})
                allowed = outcome.get("optionId") == "allow"
            if allowed:
                Path(session["cwd"], arg).touch()
            say(sid, f"{'ran' if allowed else 'refused'} {arg}")
        else:
            say(sid, f"unknown {line}")
    send({"id": rid, "result": {"stopReason": "end_turn"}})


def handle(msg: dict) -> None:
    method, rid, p = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method is None:
        return
    cwd = p.get("cwd") or (sessions.get(p.get("sessionId", ""), {}).get("cwd"))
    if cwd:
        with open(Path(cwd, "requests.log"), "a") as log:
            log.write(method + "\n")
    sid = p.get("sessionId", "")
    if method == "initialize":
        send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {
            "loadSession": True, "sessionCapabilities": {"close": {}}}, "authMethods": []}})
    elif method == "session/new":
        sid = f"closing-{len(disk) + 1}"
        sessions[sid] = {"mode": "default", "closing": False, "cwd": p["cwd"]}
        disk[sid] = p["cwd"]
        send({"id": rid, "result": {"sessionId": sid, "modes": MODES}})
    elif method == "session/load":
        if sid not in sessions:
            if sid not in disk:
                send({"id": rid, "error": {"code": -32002, "message": f"Resource not found: {sid}"}})
                return
            sessions[sid] = {"mode": "default", "closing": False, "cwd": disk[sid]}
        send({"id": rid, "result": {"modes": {**MODES, "currentModeId": sessions[sid]["mode"]}}})
    elif method == "session/set_mode":
        session = sessions.get(sid)
        if session is None or stuck:
            send({"id": rid, "error": {"code": -32603, "message": "Internal error",
                                       "data": {"details": "Session not found" if session is None else "stuck"}}})
            return
        if not session["closing"]:
            session["mode"] = p["modeId"]
        send({"id": rid, "result": {}})
    elif method == "session/close":
        if sid not in sessions:
            send({"id": rid, "error": {"code": -32603, "message": "Internal error",
                                       "data": {"details": "Session not found"}}})
            return
        sessions[sid]["closing"] = True
        closes.append((time.monotonic() + CLOSE_DELAY, rid, sid))
    elif method == "session/prompt":
        text = "".join(b.get("text", "") for b in p.get("prompt", []))
        prompt(rid, sid, text)
    elif method == "session/cancel":
        pass
    elif rid is not None:
        send({"id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main() -> None:
    while True:
        handle(next_message())


if __name__ == "__main__":
    main()
