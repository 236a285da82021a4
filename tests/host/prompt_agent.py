"""A tiny ACP agent for the hand-off tests: it appends the text of every ``session/prompt`` it
receives to the JSONL file ``$PROMPT_LOG`` (one ``{"session", "text"}`` per prompt) and answers
``ok``; it refuses ``session/set_mode`` (JSON-RPC -32603), so a turn sent with a new interaction
mode fails before its prompt is written."""

from __future__ import annotations

import json
import os
import sys


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> None:
    log = os.environ["PROMPT_LOG"]
    n = 0
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        elif method == "session/new":
            n += 1
            modes = {"currentModeId": "default",
                     "availableModes": [{"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan"}]}
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"prompt-{n}", "modes": modes}})
        elif method == "session/set_mode":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "set_mode refused"}})
        elif method == "session/prompt":
            text = "\n".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"session": params.get("sessionId"), "text": text}) + "\n")
            send({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": params.get("sessionId"),
                "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        elif rid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
