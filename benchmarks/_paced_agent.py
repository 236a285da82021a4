"""A paced fake ACP agent for ``paddock bench latency`` (a separate program, not runtime code).

``python benchmarks/_paced_agent.py`` speaks ACP v1 on stdio: ``initialize``, ``session/new``
and ``session/prompt``; other requests get -32601, notifications are ignored, EOF on stdin ends
it. A prompt whose text is ``pace RATE COUNT TAG`` streams COUNT ``agent_message_chunk`` updates
at RATE per second on an absolute schedule (chunk k is due at start + k / RATE; one pacer thread
writes every due chunk of every session in one ``os.write`` per tick of about 0.2 ms), each
chunk's text being the unique token ``TAG:k;``, then answers the prompt with ``end_turn``. Any
other prompt is answered at once with one chunk echoing it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

_lock = threading.Lock()
_streams: list[list] = []  # [session_id, request_id, start, rate, count, sent, tag]
_wake = threading.Event()
_sessions = 0


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def _line(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _chunk(sid: str, text: str) -> bytes:
    return _line({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": sid, "update": {"sessionUpdate": "agent_message_chunk",
                                     "content": {"type": "text", "text": text}}}})


_prefixes: dict[str, bytes] = {}


def _prefix(sid: str) -> bytes:
    head = _prefixes.get(sid)
    if head is None:
        head = _prefixes[sid] = _chunk(sid, "").rsplit(b'"}}}}', 1)[0]
    return head


def _pacer() -> None:
    while True:
        if not _streams:
            _wake.wait()
            _wake.clear()
            continue
        now = time.perf_counter()
        out = bytearray()
        with _lock:
            for s in list(_streams):
                sid, rid, start, rate, count, sent, tag = s
                due = min(count, int((now - start) * rate) + 1)
                if sent < due:
                    head, tail = _prefix(sid), b'"}}}}\n'
                    for k in range(sent, due):
                        out += head + f"{tag}:{k};".encode() + tail
                    sent = due
                s[5] = sent
                if sent >= count:
                    out += _line({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
                    _streams.remove(s)
        if out:
            with _out_lock:
                _write(bytes(out))
        time.sleep(_TICK)


_out_lock = threading.Lock()
_TICK = float(os.environ.get("PADDOCK_PACED_TICK", "0.001"))


def _send(obj: object) -> None:
    with _out_lock:
        _write(_line(obj))


def main() -> int:
    global _sessions
    threading.Thread(target=_pacer, daemon=True).start()
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method, rid = msg.get("method"), msg.get("id")
        if method is None or rid is None:
            continue
        params = msg.get("params") or {}
        if method == "initialize":
            _send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": 1, "agentCapabilities": {"loadSession": False}, "authMethods": []}})
        elif method == "session/new":
            _sessions += 1
            _send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"paced-{_sessions}"}})
        elif method == "session/prompt":
            sid = params.get("sessionId", "")
            text = " ".join(b.get("text", "") for b in params.get("prompt") or () if isinstance(b, dict))
            words = text.split()
            if len(words) == 4 and words[0] == "pace":
                rate, count, tag = float(words[1]), int(words[2]), words[3]
                with _lock:
                    _streams.append([sid, rid, time.perf_counter(), rate, count, 0, tag])
                _wake.set()
            else:
                with _out_lock:
                    _write(_chunk(sid, text or "ok"))
                    _write(_line({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}}))
        else:
            _send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
