"""Minimal scripted sessions over OUR transports (``paddock.actors.JsonRpcConnection`` and
``paddock.actors.ProcessActor``), used by ``paddock record`` and by the replay tests.

Each session runs one prompt and returns the decoded inbound messages. They are deliberately
small — handshake, one prompt, accept every approval, stop — and are not drivers. They behave
deterministically for a given inbound stream, which is what makes a recording replayable.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from paddock.actors import (
    ExitInfo,
    HttpTransport,
    JsonRpcConnection,
    JsonRpcNotification,
    JsonRpcRequest,
    LineTap,
    ProcessActor,
    ProcessSpec,
)
from paddock.contract import OperationTimeout


__all__ = ["SESSIONS", "SessionResult", "run_acp", "run_claude", "run_codex", "run_opencode"]

CLIENT_NAME = "paddock_recorder"


class SessionResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a scripted session saw: decoded inbound messages, and how the process ended."""

    messages: list
    returncode: int | None
    stderr_tail: str


class _Inbox:
    """Inbound messages appended on the transport's reader thread; waited for on the caller's."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self._cond = threading.Condition()
        self._closed: BaseException | None = None

    def add(self, msg: dict) -> None:
        with self._cond:
            self.messages.append(msg)
            self._cond.notify_all()

    def close(self, error: BaseException) -> None:
        with self._cond:
            self._closed = error
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[dict], bool], *, timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for msg in self.messages:
                    if predicate(msg):
                        return msg
                if self._closed is not None:
                    raise self._closed
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OperationTimeout(f"waiting for {what}", timeout)
                self._cond.wait(left)


def _result(inbox: _Inbox, info: Any) -> SessionResult:
    return SessionResult(messages=list(inbox.messages), returncode=None if info is None else info.returncode,
                         stderr_tail="" if info is None else info.stderr_tail)


def _decode(raw: msgspec.Raw) -> Any:
    return msgspec.json.decode(raw)


def _jsonrpc_handler(conn_box: list[JsonRpcConnection], inbox: _Inbox,
                     answer: Callable[[str, Any], Any | None]) -> Callable[[list], None]:
    """Notifications go to the inbox; requests are answered by ``answer(method, params)``
    (None: rejected with -32601). Runs on the reader thread."""

    def handle(batch: list) -> None:
        conn = conn_box[0]
        for message in batch:
            params = _decode(message.params)
            if isinstance(message, JsonRpcNotification):
                inbox.add({"method": message.method, "params": params})
            elif isinstance(message, JsonRpcRequest):
                inbox.add({"id": message.id, "method": message.method, "params": params})
                result = answer(message.method, params)
                if result is None:
                    conn.reject(message)
                else:
                    conn.respond(message.id, result)

    return handle


def _open_jsonrpc(argv: Sequence[str], env: dict[str, str], cwd: str, *, name: str, tap: LineTap | None,
                  jsonrpc_field: bool, answer: Callable[[str, Any], Any | None]) -> tuple[JsonRpcConnection, _Inbox]:
    inbox = _Inbox()
    box: list[JsonRpcConnection] = []
    opened = threading.Event()
    handler = _jsonrpc_handler(box, inbox, answer)

    def deliver(batch: list) -> None:
        # The first batch can arrive before open() returns: wait for the connection object.
        opened.wait(30)
        handler(batch)

    conn = JsonRpcConnection.open(
        ProcessSpec(argv=tuple(argv), env=env, cwd=cwd, name=name, shutdown_timeout=5.0),
        handler=deliver, tap=tap, jsonrpc_field=jsonrpc_field,
        on_exit=lambda info: inbox.close(info.error(f"{name!r} exited")),
    )
    box.append(conn)
    opened.set()
    return conn, inbox


def _codex_answer(method: str, params: Any) -> Any | None:
    if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
        return {"decision": "accept"}
    if method in ("execCommandApproval", "applyPatchApproval"):
        return {"decision": "approved"}
    return None


def run_codex(argv: Sequence[str], env: dict[str, str], workspace: str, prompt: str, *,
              tap: LineTap | None = None, timeout: float = 60.0, approval_policy: str | None = None) -> SessionResult:
    """``codex app-server``: initialize, thread/start, one turn/start until turn/completed.
    ``approval_policy`` defaults to ``untrusted`` for tool scenarios (so approvals are asked and
    accepted) and ``never`` otherwise."""
    if approval_policy is None:
        approval_policy = "untrusted" if re.search(r"SCENARIO:(tool|patch)", prompt) else "never"
    conn, inbox = _open_jsonrpc([*argv, "app-server"], env, workspace, name="codex", tap=tap,
                                jsonrpc_field=False, answer=_codex_answer)
    try:
        conn.request("initialize", {"clientInfo": {"name": CLIENT_NAME, "title": "Paddock recorder", "version": "1"},
                                    "capabilities": {"experimentalApi": True}}, timeout=timeout).result()
        conn.notify("initialized")
        started = _decode(conn.request("thread/start", {"cwd": workspace, "approvalPolicy": approval_policy,
                                                        "sandbox": "workspace-write"}, timeout=timeout).result())
        thread_id = started["thread"]["id"]
        conn.request("turn/start", {"threadId": thread_id, "input": [
            {"type": "text", "text": prompt, "text_elements": []}]}, timeout=timeout).result()
        inbox.wait_for(lambda m: m.get("method") == "turn/completed", timeout=timeout, what="turn/completed")
    finally:
        conn.close(timeout=5.0)
    return _result(inbox, conn.process.exit_info)


def _acp_answer(method: str, params: Any) -> Any | None:
    if method == "session/request_permission":
        options = params.get("options") or []
        chosen = next((o for o in options if o.get("kind") == "allow_once"), options[0] if options else None)
        if chosen is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}
    return None


def run_acp(argv: Sequence[str], env: dict[str, str], workspace: str, prompt: str, *, tap: LineTap | None = None,
            timeout: float = 60.0, auth_method: str | None = None, name: str = "acp") -> SessionResult:
    """An ACP agent: initialize, (authenticate), session/new, one session/prompt."""
    conn, inbox = _open_jsonrpc(argv, env, workspace, name=name, tap=tap, jsonrpc_field=True, answer=_acp_answer)
    try:
        conn.request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
            "clientInfo": {"name": CLIENT_NAME, "version": "1"}}, timeout=timeout).result()
        if auth_method:
            conn.request("authenticate", {"methodId": auth_method}, timeout=timeout).result()
        session = _decode(conn.request("session/new", {"cwd": workspace, "mcpServers": []}, timeout=timeout).result())
        result = _decode(conn.request("session/prompt", {"sessionId": session["sessionId"], "prompt": [
            {"type": "text", "text": prompt}]}, timeout=timeout).result())
        inbox.add({"prompt_result": result})
    finally:
        conn.close(timeout=5.0)
    return _result(inbox, conn.process.exit_info)


def run_claude(argv: Sequence[str], env: dict[str, str], workspace: str, prompt: str, *,
               tap: LineTap | None = None, timeout: float = 60.0, model: str = "claude-sonnet-4-5") -> SessionResult:
    """Claude Code stream-json: initialize control request, one user message until ``result``;
    every ``can_use_tool`` is allowed with the original input."""
    inbox = _Inbox()
    box: list = []
    opened = threading.Event()

    def write(msg: dict) -> None:
        box[0].write_lines([msgspec.json.encode(msg)])

    def on_lines(lines: list[bytes]) -> None:
        opened.wait(30)  # the first lines can arrive before open() returns the handle
        for line in lines:
            if tap is not None:
                tap.on_inbound(line)
            try:
                msg = msgspec.json.decode(line)
            except msgspec.DecodeError:
                continue
            if not isinstance(msg, dict):
                continue
            inbox.add(msg)
            request = msg.get("request") or {}
            if msg.get("type") == "control_request" and request.get("subtype") == "can_use_tool":
                write({"type": "control_response", "response": {
                    "subtype": "success", "request_id": msg["request_id"],
                    "response": {"behavior": "allow", "updatedInput": request.get("input") or {}}}})
            elif msg.get("type") == "control_request":
                write({"type": "control_response", "response": {
                    "subtype": "error", "request_id": msg.get("request_id"),
                    "error": f"Unsupported control request subtype: {request.get('subtype')}"}})

    flags = ["--output-format", "stream-json", "--verbose", "--system-prompt", "", "--input-format", "stream-json",
             "--permission-prompt-tool", "stdio", "--permission-mode", "default", f"--model={model}"]
    handle = ProcessActor.open(
        ProcessSpec(argv=(*argv, *flags), env=env, cwd=workspace, name="claude", shutdown_timeout=5.0),
        on_lines=on_lines,
        on_exit=lambda info: inbox.close(info.error("'claude' exited")),
        on_outbound_line=tap.on_outbound if tap is not None else None,
    )
    box.append(handle)
    opened.set()
    try:
        write({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": None}})
        inbox.wait_for(lambda m: m.get("type") == "control_response", timeout=timeout, what="initialize response")
        write({"type": "user", "message": {"role": "user", "content": prompt},
               "parent_tool_use_id": None, "session_id": ""})
        inbox.wait_for(lambda m: m.get("type") == "result", timeout=timeout, what="result")
    finally:
        handle.terminate(5.0)
    return _result(inbox, handle.exit_info)


_READY = re.compile(rb"opencode server listening on (http://\S+)")


def _free_port() -> int:
    # `opencode serve --port 0` prefers 4096 instead of a random port: choose one ourselves.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_opencode(argv: Sequence[str], env: dict[str, str], workspace: str, prompt: str, *,
                 tap: LineTap | None = None, timeout: float = 60.0) -> SessionResult:
    """``opencode serve``: open ``/event``, create a titled session, ``prompt_async`` once, wait
    for ``session.idle`` of that session, stop the server."""
    inbox = _Inbox()
    ready = threading.Event()

    def on_lines(lines: list[bytes]) -> None:
        if any(_READY.search(line) for line in lines):
            ready.set()

    def on_exit(info: ExitInfo) -> None:
        inbox.close(info.error("'opencode' exited"))
        ready.set()

    port = _free_port()
    handle = ProcessActor.open(
        ProcessSpec(argv=(*argv, "serve", "--hostname", "127.0.0.1", "--port", str(port)), env=env, cwd=workspace,
                    name="opencode", shutdown_timeout=5.0, graceful_timeout=0.5),
        on_lines=on_lines,
        on_exit=on_exit,
    )
    stream = None
    try:
        if not ready.wait(timeout):
            raise OperationTimeout("waiting for the opencode readiness line", timeout)
        if handle.exit_info is not None:
            raise handle.exit_info.error("'opencode' exited before it was ready")
        def on_events(batch: list) -> None:
            for event in batch:  # the stream's reader thread
                inbox.add(event)

        # The runtime's own HTTP + SSE transport (the `opencode` extra), tapped.
        client = HttpTransport(f"http://127.0.0.1:{port}", timeout=timeout, tap=tap)
        stream = client.stream("/event", on_events=on_events, name="sse-recording")
        if not stream.wait_connected(timeout):
            raise OperationTimeout("opening the opencode event stream", timeout)
        status, session = client.call("POST", "/session", {"title": "paddock recording"})
        if status != 200:
            raise ConnectionError(f"POST /session answered {status}: {session}")
        sid = session["id"]
        status, _ = client.call("POST", f"/session/{sid}/prompt_async", {"parts": [{"type": "text", "text": prompt}]})
        if status != 204:
            raise ConnectionError(f"prompt_async answered {status}")
        inbox.wait_for(lambda e: e.get("type") == "session.idle" and (e.get("properties") or {}).get("sessionID") == sid,
                       timeout=timeout, what="session.idle")
    finally:
        if stream is not None:
            stream.close()
            stream.transport.close()
        handle.terminate(5.0)
    return _result(inbox, handle.exit_info)


def _acp(extra: Sequence[str], auth: str | None, name: str) -> Callable[..., SessionResult]:
    def run(argv: Sequence[str], env: dict[str, str], workspace: str, prompt: str, **kw: Any) -> SessionResult:
        return run_acp([*argv, *extra], env, workspace, prompt, auth_method=auth, name=name, **kw)
    return run


SESSIONS: dict[str, Callable[..., SessionResult]] = {
    "codex": run_codex,
    "claude": run_claude,
    "opencode": run_opencode,
    "gemini": _acp(["--acp"], "gemini-api-key", "gemini"),
    "qwen": _acp(["--acp"], "openai", "qwen"),
    "claude-acp": _acp([], None, "claude-acp"),
    "copilot": _acp(["--acp"], None, "copilot"),
}
"""Peer name -> ``session(argv, env, workspace, prompt, *, tap=None, timeout=60.0)``."""
