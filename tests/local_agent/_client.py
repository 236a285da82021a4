"""A minimal raw JSON-RPC client for driving ``python -m paddock.drivers.local`` over real pipes.

A reader thread parses every stdout line into :attr:`RawClient.messages` (non-JSON lines are kept
as ``bytes``); tests wait on conditions over that list with a timeout, never on sleeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 10.0


class RawClient:
    def __init__(self, *args: str, env: dict[str, str] | None = None, buffered_pipe: bool = False) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "paddock.drivers.local", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        self.messages: list[Any] = []
        self.stderr: list[bytes] = []
        self._cv = threading.Condition()
        self._next_id = 1000
        self._eof = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._err.start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            try:
                msg: Any = json.loads(line)
            except ValueError:
                msg = line
            with self._cv:
                self.messages.append(msg)
                self._cv.notify_all()
        with self._cv:
            self._eof = True
            self._cv.notify_all()

    def _read_err(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self.stderr.append(line)

    # -- sending --------------------------------------------------------------------------

    def send(self, obj: Any) -> None:
        data = obj if isinstance(obj, bytes) else (json.dumps(obj) + "\n").encode()
        self.proc.stdin.write(data)  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}})
        return self._next_id

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def answer(self, req_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": req_id, "result": result})

    def answer_error(self, req_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}})

    # -- waiting --------------------------------------------------------------------------

    def wait_for(self, pred: Callable[[Any], bool], *, start: int = 0, timeout: float = TIMEOUT) -> tuple[int, Any]:
        """The first message at index >= start matching ``pred``, as (index, message)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            i = start
            while True:
                while i < len(self.messages):
                    if pred(self.messages[i]):
                        return i, self.messages[i]
                    i += 1
                remaining = deadline - time.monotonic()
                if self._eof or remaining <= 0:
                    raise AssertionError(
                        f"no matching message within {timeout}s (eof={self._eof}); got {self.messages[-5:]!r}"
                        f"; stderr={b''.join(self.stderr)[-2000:]!r}"
                    )
                self._cv.wait(remaining)

    def response(self, req_id: int, *, timeout: float = TIMEOUT) -> dict[str, Any]:
        return self.wait_for(lambda m: isinstance(m, dict) and m.get("id") == req_id and "method" not in m, timeout=timeout)[1]

    def agent_request(self, method: str, *, start: int = 0, timeout: float = TIMEOUT) -> tuple[int, dict[str, Any]]:
        return self.wait_for(lambda m: isinstance(m, dict) and m.get("method") == method and "id" in m, start=start, timeout=timeout)

    def wait_eof(self, *, timeout: float = TIMEOUT) -> None:
        with self._cv:
            assert self._cv.wait_for(lambda: self._eof, timeout), "agent stdout did not close"

    def updates(self, session_id: str, upto: int | None = None) -> list[dict[str, Any]]:
        with self._cv:
            msgs = self.messages[:upto] if upto is not None else list(self.messages)
        return [
            m["params"]["update"]
            for m in msgs
            if isinstance(m, dict) and m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
        ]

    # -- protocol helpers -------------------------------------------------------------------

    def initialize(self, *, fs_write: bool = False) -> dict[str, Any]:
        rid = self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": fs_write, "writeTextFile": fs_write}, "terminal": False},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        return self.response(rid)

    def new_session(self, cwd: str | os.PathLike[str]) -> str:
        resp = self.response(self.request("session/new", {"cwd": str(cwd), "mcpServers": []}))
        return resp["result"]["sessionId"]

    def prompt(self, session_id: str, text: str) -> int:
        return self.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})

    def turn(self, session_id: str, text: str, *, timeout: float = TIMEOUT) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Prompt and wait for the result; returns (response, this turn's updates)."""
        with self._cv:
            start = len(self.messages)
        rid = self.prompt(session_id, text)
        idx, resp = self.wait_for(lambda m: isinstance(m, dict) and m.get("id") == rid and "method" not in m, start=start, timeout=timeout)
        with self._cv:
            window = self.messages[start:idx]
        ups = [
            m["params"]["update"]
            for m in window
            if isinstance(m, dict) and m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
        ]
        return resp, ups

    def close(self, *, timeout: float = 5.0) -> int | None:
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self._reader.join(timeout)
            self._err.join(timeout)


def chunks_text(updates: list[dict[str, Any]]) -> list[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
