"""The ACP v1 agent: request dispatch, sessions and turns.

Threads: the **reader** (the process's main thread) decodes stdin lines and handles every
request except ``session/prompt`` inline, including ``session/cancel`` and the client's answers
to our own requests. Each ``session/prompt`` runs in its own **turn thread**; turns of one
session run one after another in prompt order, turns of different sessions concurrently.
All output goes through one :class:`~._wire.Wire`.
"""

from __future__ import annotations

import base64
import binascii
import os
import signal
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING

import msgspec

from ._directives import Action, DirectiveError, Directives, parse_prompt
from ._history import History, Turn
from ._wire import Pending, Wire

if TYPE_CHECKING:  # the agent imports nothing of the runtime at run time
    from paddock.contract import JsonObject, JsonValue

    from ._mcp import McpClient
    from ._tools import RunningCommand

__all__ = ["AGENT_NAME", "AGENT_VERSION", "Agent", "split_answer"]

AGENT_NAME = "paddock-local"
AGENT_VERSION = "0.1.0"
CONTEXT_SIZE = 200_000
_BATCH_BYTES = 16 * 1024

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
RATE_LIMITED = 429  # not a JSON-RPC code: what agents put there for a model's HTTP 429
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002

PERMISSION_OPTIONS: list[JsonValue] = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
]
_OPTION_KINDS = {o["optionId"]: o["kind"] for o in PERMISSION_OPTIONS if isinstance(o, dict)}

MODES: list[JsonValue] = [
    {"id": "default", "name": "Default", "description": "Ask before running commands or writing files"},
    {"id": "plan", "name": "Plan", "description": "Same behaviour; accepted for mode-mapping tests"},
]
_MODE_IDS = {m["id"] for m in MODES if isinstance(m, dict)}

AVAILABLE_COMMANDS: list[JsonValue] = [
    {"name": "reply", "description": "@reply TEXT: answer TEXT", "input": {"hint": "TEXT"}},
    {"name": "chunks", "description": "@chunks N: stream the answer in N chunks", "input": {"hint": "N"}},
    {"name": "delay", "description": "@delay SECONDS: pause between chunks", "input": {"hint": "SECONDS"}},
    {"name": "run", "description": "@run COMMAND: run a shell command (asks first)", "input": {"hint": "COMMAND"}},
    {"name": "write", "description": "@write PATH TEXT: write a file (asks first)", "input": {"hint": "PATH TEXT"}},
    {"name": "mcp", "description": "@mcp SERVER TOOL [JSON]: call an MCP tool (asks first)",
     "input": {"hint": "SERVER TOOL [JSON]"}},
]

GARBAGE_LINE = b"this is not JSON (paddock-local @garbage)\n"


def _log(text: str) -> None:
    print(f"paddock-local: {text}", file=sys.stderr, flush=True)


def _text(text: str) -> JsonObject:
    return {"type": "content", "content": {"type": "text", "text": text}}


def _resource_effect(d: Directives) -> str | None:
    """Run ``@alloc``, ``@fork`` and ``@burn`` (in that order); the answer they make, or None."""
    from ._tools import allocate, burn, fork_sleepers

    said = []
    if d.alloc is not None:
        said.append(f"allocated {allocate(d.alloc)} MB")
    if d.fork is not None:
        said.append(f"forked {fork_sleepers(d.fork)}")
    if d.burn is not None:
        burn(d.burn)
        said.append(f"burned {d.burn:g} s")
    return "; ".join(said) or None


def split_answer(answer: str, n: int) -> list[str]:
    """Exactly ``n`` non-empty pieces whose concatenation is the streamed answer.

    An answer shorter than ``n`` characters is first repeated until it has at least ``n``; the
    pieces are near-equal (the first ``len % n`` are one character longer). An empty answer
    yields no pieces at all.
    """
    if not answer:
        return []
    if len(answer) < n:
        answer = answer * -(-n // len(answer))
    q, r = divmod(len(answer), n)
    pieces = []
    pos = 0
    for i in range(n):
        end = pos + q + (1 if i < r else 0)
        pieces.append(answer[pos:end])
        pos = end
    return pieces


class _TurnState:
    """Cancellation state of one running prompt; written by the reader, read by the turn."""

    __slots__ = ("cancelled", "wakeup", "waiting", "command", "done")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.cancelled = False
        self.wakeup = threading.Event()
        self.waiting: Pending | None = None
        self.command: RunningCommand | None = None

    def cancel(self) -> None:
        self.cancelled = True
        self.wakeup.set()
        waiting = self.waiting
        if waiting is not None:
            waiting.cancel()
        command = self.command
        if command is not None:
            command.kill()


class _Session:
    __slots__ = ("id", "cwd", "history", "mode", "config", "last_done", "turns", "chunk_prefix", "usage_total", "cost_total", "mcp")

    def __init__(self, session_id: str, cwd: str, history: list[Turn], prefix: bytes) -> None:
        self.id = session_id
        self.cwd = cwd
        self.history = history
        self.mode = "default"
        self.config: JsonObject = {}
        # Turns of a session run in prompt order: each waits for the previous one's event.
        self.last_done: threading.Event | None = None
        # Running and queued turns; added by the reader at dispatch, so a cancel that follows
        # the prompt immediately is never lost. Removed by the turn thread when it answers.
        self.turns: set[_TurnState] = set()
        self.chunk_prefix = prefix
        self.usage_total = sum(a + b for t in history if t.usage for a, b in (t.usage,))
        self.cost_total = 0.0
        self.mcp: dict[str, McpClient] = {}


MODELS_ENV = "PADDOCK_LOCAL_MODELS"
"""Comma-separated model ids: when set, each new session offers them as its ``model`` config
option (the first current), for tests of model catalogs."""


NO_ATTACHMENTS_ENV = "PADDOCK_LOCAL_NO_ATTACHMENTS"
"""``1``: ``initialize`` declares no image or embedded-context prompts, for tests of refusals."""


def _received(blocks: list[JsonValue]) -> tuple[str, ...]:
    """One line per image or embedded resource block of a prompt: ``image <mimeType> <bytes>
    bytes`` (the base64 decoded) or ``resource <uri> <mimeType> <chars> chars``. Raises
    :class:`DirectiveError` for a block it cannot read."""
    out: list[str] = []
    for b in blocks:
        if not isinstance(b, dict) or b.get("type") == "text":
            continue
        kind = b.get("type")
        if kind == "image":
            try:
                size = len(base64.b64decode(str(b.get("data")), validate=True))
            except (binascii.Error, ValueError):
                raise DirectiveError("an image block's data is not base64") from None
            out.append(f"image {b.get('mimeType')} {size} bytes")
        elif kind == "resource" and isinstance(res := b.get("resource"), dict) and isinstance(text := res.get("text"), str):
            out.append(f"resource {res.get('uri')} {res.get('mimeType')} {len(text)} chars")
        # Other blocks (resource_link, which every agent takes) are not echoed.
    return tuple(out)


class Agent:
    """One agent process's state. Construct, then feed stdin lines to :meth:`handle_line`
    from a single reader thread; call :meth:`shutdown` at EOF."""

    def __init__(self, wire: Wire, history: History) -> None:
        self._wire = wire
        self._store = history
        self._decoder = msgspec.json.Decoder()
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._pending: dict[int, Pending] = {}
        self._next_id = 0
        self._client_writes_files = False

    # -- reader thread ----------------------------------------------------------------------

    def handle_line(self, line: bytes) -> None:
        """Handle one stdin line (reader thread). Malformed lines are logged and ignored; no
        input line can stop the reader."""
        try:
            self._handle_line(line)
        except Exception:
            _log(f"ignoring an input line that broke the reader: {line[:120]!r}\n" + traceback.format_exc())

    def _handle_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            msg = self._decoder.decode(line)
        except msgspec.DecodeError as exc:
            _log(f"ignoring a non-JSON input line ({exc}): {line[:120]!r}")
            return
        if not isinstance(msg, dict):
            _log(f"ignoring a JSON line that is not an object: {line[:120]!r}")
            return
        method = msg.get("method")
        if isinstance(method, str):
            params = msg.get("params")
            if not isinstance(params, dict):
                params = {}
            if "id" in msg:
                self._handle_request(msg["id"], method, params)
            else:
                self._handle_notification(method, params)
        elif "id" in msg and ("result" in msg or "error" in msg):
            self._handle_response(msg)
        else:
            _log(f"ignoring an input line that is neither request nor response: {line[:120]!r}")

    def shutdown(self, *, timeout: float = 2.0) -> None:
        """Stdin closed: cancel every turn (killing running commands), give them ``timeout``
        seconds to send their ``cancelled`` answers, and flush (reader thread)."""
        import time

        deadline = time.monotonic() + timeout
        turns = [turn for session in list(self._sessions.values()) for turn in list(session.turns)]
        for turn in turns:
            turn.cancel()
        for turn in turns:
            turn.done.wait(max(0.0, deadline - time.monotonic()))
        for session in list(self._sessions.values()):
            self._close_mcp(session)
        self._wire.flush_and_wait(timeout=max(0.1, deadline - time.monotonic()))

    def _respond(self, req_id: JsonValue, result: JsonValue) -> None:
        self._wire.send({"jsonrpc": "2.0", "id": req_id, "result": result}, flush=True, throttle=False)

    def _error(self, req_id: JsonValue, code: int, message: str, data: JsonValue = None, *, throttle: bool = False) -> None:
        error: JsonObject = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._wire.send({"jsonrpc": "2.0", "id": req_id, "error": error}, flush=True, throttle=throttle)

    def _handle_response(self, msg: JsonObject) -> None:
        req_id = msg["id"]
        if not isinstance(req_id, int):
            return  # our ids are integers
        with self._lock:
            pending = self._pending.pop(req_id, None)
        if pending is None:
            return  # an answer to @garbage's request, or to a request a cancel gave up on
        if "error" in msg:
            pending.error = msg["error"]
        else:
            pending.result = msg.get("result")
        pending.event.set()

    def _handle_notification(self, method: str, params: JsonObject) -> None:
        if method == "session/cancel":
            session_id = params.get("sessionId")
            session = self._sessions.get(session_id) if isinstance(session_id, str) else None
            if session is not None:
                for turn in list(session.turns):
                    turn.cancel()
        # Unknown notifications are ignored (ACP).

    def _handle_request(self, req_id: JsonValue, method: str, params: JsonObject) -> None:
        handler = _REQUEST_HANDLERS.get(method)
        if handler is None:
            self._error(req_id, METHOD_NOT_FOUND, "Method not found", {"method": method})
            return
        try:
            handler(self, req_id, params)
        except Exception as exc:  # a bug here must not kill the reader
            _log("internal error:\n" + traceback.format_exc())
            self._error(req_id, INTERNAL_ERROR, f"Internal error: {exc}")

    def _initialize(self, req_id: JsonValue, params: JsonObject) -> None:
        caps = params.get("clientCapabilities")
        fs = caps.get("fs") if isinstance(caps, dict) else None
        self._client_writes_files = isinstance(fs, dict) and fs.get("writeTextFile") is True
        takes = os.environ.get(NO_ATTACHMENTS_ENV) != "1"
        self._respond(
            req_id,
            {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": True,
                    "promptCapabilities": {"image": takes, "audio": False, "embeddedContext": takes},
                    "mcpCapabilities": {"http": False, "sse": False},
                },
                "authMethods": [],
                "agentInfo": {"name": AGENT_NAME, "title": "Paddock local agent", "version": AGENT_VERSION},
            },
        )

    def _authenticate(self, req_id: JsonValue, params: JsonObject) -> None:
        self._respond(req_id, {})

    def _make_session(self, session_id: str, cwd: str, history: list[Turn]) -> _Session:
        prefix = (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
            + self._wire.encode(session_id)
            + b',"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":'
        )
        session = _Session(session_id, cwd, history, prefix)
        self._sessions[session_id] = session
        return session

    def _modes(self, session: _Session) -> JsonObject:
        return {"currentModeId": session.mode, "availableModes": MODES}

    def _new_session(self, req_id: JsonValue, params: JsonObject) -> None:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            self._error(req_id, INVALID_PARAMS, "Invalid params: cwd must be a non-empty string")
            return
        h = os.urandom(16).hex()
        session_id = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        try:
            self._store.create(session_id, cwd)
        except OSError as exc:
            _log(f"cannot persist session {session_id} under {self._store.root}: {exc}")
        session = self._make_session(session_id, cwd, [])
        result: JsonObject = {"sessionId": session_id, "modes": self._modes(session)}
        models = [m for m in os.environ.get(MODELS_ENV, "").split(",") if m]
        if models:
            # A model_config option (category "model"), as ACP agents offer their models.
            session.config["model"] = models[0]
            result["configOptions"] = [{"id": "model", "name": "Model", "category": "model", "type": "select",
                                        "currentValue": models[0], "options": [{"value": m, "name": m} for m in models]}]
        self._with_mcp(session, params.get("mcpServers"), req_id, result)

    def _with_mcp(self, session: _Session, servers: JsonValue, req_id: JsonValue, result: JsonObject) -> None:
        """Answer ``session/new``/``session/load`` with ``result`` once the session's MCP servers
        are connected (on a thread of their own: the reader stays free for other sessions)."""
        from ._mcp import stdio_entries

        entries = stdio_entries(servers)
        self._close_mcp(session)
        if not entries:
            self._respond(req_id, result)
            self._send_commands(session)
            return

        def connect() -> None:
            from ._mcp import connect_all

            session.mcp = connect_all(entries, session.cwd)
            self._respond(req_id, result)
            self._send_commands(session)

        threading.Thread(target=connect, name=f"mcp-{session.id[:8]}", daemon=True).start()

    def _close_mcp(self, session: _Session) -> None:
        clients, session.mcp = session.mcp, {}
        for client in clients.values():
            client.close()

    def _send_commands(self, session: _Session) -> None:
        self._update(
            session,
            {"sessionUpdate": "available_commands_update", "availableCommands": AVAILABLE_COMMANDS},
            flush=True,
            throttle=False,
        )

    def _load_session(self, req_id: JsonValue, params: JsonObject) -> None:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            self._error(req_id, INVALID_PARAMS, "Invalid params: sessionId must be a string")
            return
        existing = self._sessions.get(session_id)
        history = list(existing.history) if existing is not None else self._store.load(session_id)
        if history is None:
            self._error(req_id, RESOURCE_NOT_FOUND, "Resource not found", {"sessionId": session_id})
            return
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            cwd = existing.cwd if existing is not None else os.getcwd()
        if existing is not None:
            existing.cwd = cwd
            session = existing
        else:
            session = self._make_session(session_id, cwd, history)
        for turn in history:
            self._update(
                session,
                {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": turn.user}},
                throttle=False,
            )
            if turn.agent:
                self._update(
                    session,
                    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": turn.agent}},
                    throttle=False,
                )
        self._with_mcp(session, params.get("mcpServers"), req_id, {"modes": self._modes(session)})

    def _session_or_error(self, req_id: JsonValue, params: JsonObject) -> _Session | None:
        session_id = params.get("sessionId")
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            self._error(req_id, RESOURCE_NOT_FOUND, "Resource not found", {"sessionId": params.get("sessionId")})
        return session

    def _set_mode(self, req_id: JsonValue, params: JsonObject) -> None:
        session = self._session_or_error(req_id, params)
        if session is None:
            return
        mode = params.get("modeId")
        if mode not in _MODE_IDS:
            self._error(req_id, INVALID_PARAMS, f"Invalid params: unknown mode {mode!r}")
            return
        session.mode = mode  # type: ignore[assignment]
        self._respond(req_id, {})

    def _set_config_option(self, req_id: JsonValue, params: JsonObject) -> None:
        session = self._session_or_error(req_id, params)
        if session is None:
            return
        config_id = params.get("configId")
        if not isinstance(config_id, str) or "value" not in params:
            self._error(req_id, INVALID_PARAMS, "Invalid params: configId and value are required")
            return
        session.config[config_id] = params["value"]
        options: list[JsonValue] = []
        for cid, value in session.config.items():
            if isinstance(value, bool):
                options.append({"type": "boolean", "id": cid, "name": cid, "currentValue": value})
            else:
                text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
                options.append(
                    {
                        "type": "select",
                        "id": cid,
                        "name": cid,
                        "currentValue": text,
                        "options": [{"value": text, "name": text}],
                    }
                )
        self._respond(req_id, {"configOptions": options})

    def _prompt(self, req_id: JsonValue, params: JsonObject) -> None:
        session = self._session_or_error(req_id, params)
        if session is None:
            return
        blocks = params.get("prompt")
        if not isinstance(blocks, list):
            self._error(req_id, INVALID_PARAMS, "Invalid params: prompt must be a list of content blocks")
            return
        text = "\n".join(
            t for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(t := b.get("text"), str)
        )
        try:
            directives = parse_prompt(text)
            received = _received(blocks)
        except DirectiveError as exc:
            self._error(req_id, INVALID_PARAMS, f"Invalid params: {exc}")
            return
        if directives.ignore_sigterm:
            # signal.signal works only in the main thread, which is this reader thread.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        turn = _TurnState()
        session.turns.add(turn)
        previous, session.last_done = session.last_done, turn.done
        try:
            threading.Thread(
                target=self._run_turn,
                args=(req_id, session, turn, previous, directives, text, received),
                name=f"turn-{session.id[:8]}",
                daemon=True,
            ).start()
        except RuntimeError as exc:  # cannot start a thread: answer, and keep the FIFO chain intact
            session.turns.discard(turn)
            session.last_done = previous
            turn.done.set()
            self._error(req_id, INTERNAL_ERROR, f"Internal error: {exc}")

    # -- agent→client requests (turn threads) -----------------------------------------------

    def _request(self, method: str, params: JsonObject, *, wait: bool = True) -> Pending:
        with self._lock:
            req_id = self._next_id
            self._next_id += 1
            pending = Pending(req_id)
            if wait:
                self._pending[req_id] = pending
        self._wire.send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params}, flush=wait)
        return pending

    def _wait(self, pending: Pending, turn: _TurnState) -> None:
        turn.waiting = pending
        if turn.cancelled:
            pending.cancel()
        pending.event.wait()
        turn.waiting = None
        if pending.cancelled and pending.req_id is not None:
            with self._lock:
                self._pending.pop(pending.req_id, None)

    def _ask_permission(self, session: _Session, turn: _TurnState, tool_call: JsonObject) -> tuple[str, str]:
        """("allow" | "reject" | "cancelled", detail)."""
        pending = self._request(
            "session/request_permission",
            {"sessionId": session.id, "toolCall": tool_call, "options": PERMISSION_OPTIONS},
        )
        self._wait(pending, turn)
        if pending.cancelled:
            return "cancelled", "the turn was cancelled"
        if pending.error is not None:
            message = pending.error.get("message") if isinstance(pending.error, dict) else None
            return "reject", f"the permission request failed: {message or pending.error}"
        outcome = pending.result.get("outcome") if isinstance(pending.result, dict) else None
        kind = outcome.get("outcome") if isinstance(outcome, dict) else None
        if kind == "cancelled":
            return "cancelled", "the permission request was cancelled"
        if kind == "selected":
            option = outcome.get("optionId")  # type: ignore[union-attr]
            option_kind = _OPTION_KINDS.get(option) if isinstance(option, str) else None
            if option_kind in ("allow_once", "allow_always"):
                return "allow", option_kind
            if option_kind == "reject_once":
                return "reject", "rejected by the user"
            return "reject", f"unknown option {option!r}"
        return "reject", f"malformed permission outcome {pending.result!r}"

    # -- turn threads -----------------------------------------------------------------------

    def _update(self, session: _Session, update: JsonObject, *, flush: bool = False, throttle: bool = True) -> None:
        self._wire.send(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session.id, "update": update}},
            flush=flush,
            throttle=throttle,
        )

    def _run_turn(
        self, req_id: JsonValue, session: _Session, turn: _TurnState, previous: threading.Event | None, d: Directives, user_text: str,
        received: tuple[str, ...] = (),
    ) -> None:
        if previous is not None:
            previous.wait()
        try:
            sent: list[str] = []
            if (d.limit_until is not None and time.time() < d.limit_until
                    and d.limit_account in (None, os.environ.get("ACCOUNT"))):
                # What a model's usage limit looks like from an ACP agent: an error with its text.
                self._error(req_id, RATE_LIMITED, f"usage limit reached; resets at {d.limit_until:.3f}",
                            {"resetsAt": d.limit_until}, throttle=True)
                session.turns.discard(turn)
                return
            try:
                if received and not turn.cancelled:
                    # Echo what the prompt carried besides text, for tests of attachments.
                    echo = "received: " + "; ".join(received) + "\n"
                    self._update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": echo}})
                    sent.append(echo)
                stop = "cancelled" if turn.cancelled else self._turn_body(session, turn, d, user_text, sent)
            except Exception as exc:
                _log("turn failed:\n" + traceback.format_exc())
                self._error(req_id, INTERNAL_ERROR, f"Internal error: {exc}", throttle=True)
                return
            finally:
                session.turns.discard(turn)
                self._record(session, user_text, sent, d.usage)
            result: JsonObject = {"stopReason": stop}
            if d.usage is not None:
                inp, out = d.usage
                result["usage"] = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out}
            self._wire.send({"jsonrpc": "2.0", "id": req_id, "result": result}, flush=True)
        finally:
            turn.done.set()

    def _record(self, session: _Session, user_text: str, sent: list[str], usage: tuple[int, int] | None) -> None:
        turn = Turn(user_text, "".join(sent), usage)
        session.history.append(turn)
        try:
            self._store.append(session.id, turn)
        except OSError as exc:
            _log(f"cannot persist a turn of session {session.id}: {exc}")

    def _turn_body(self, session: _Session, turn: _TurnState, d: Directives, user_text: str, sent: list[str]) -> str:
        wire = self._wire
        turn_no = len(session.history)
        if d.garbage:
            wire.send_raw(GARBAGE_LINE)
            # Fire and forget: the client answers -32601, which _handle_response drops.
            self._request("local/unknown", {"sessionId": session.id}, wait=False)
        spawned = None
        if d.spawn is not None:
            from ._tools import spawn_sleeper

            spawned = spawn_sleeper(d.spawn)
        effect = _resource_effect(d)
        if d.plan:
            self._update(
                session,
                {
                    "sessionUpdate": "plan",
                    "entries": [{"content": step, "priority": "medium", "status": "pending"} for step in d.plan],
                },
            )
        for index, action in enumerate(d.actions):
            if turn.cancelled:
                return "cancelled"
            if action.kind == "run":
                self._do_run(session, turn, f"run-{turn_no}-{index}", action)
            elif action.kind == "mcp":
                self._do_mcp(session, turn, f"mcp-{turn_no}-{index}", action)
            else:
                self._do_write(session, turn, f"write-{turn_no}-{index}", action)
        if turn.cancelled:
            return "cancelled"

        if d.reply is not None:
            answer = d.reply
        elif d.reply_history:
            answer = f"history: {turn_no}"
        elif d.env is not None:
            answer = os.environ.get(d.env, "<unset>")
        elif spawned is not None:
            answer = f"spawned {spawned}"
        elif effect is not None:
            answer = effect
        else:
            answer = f"You said: {d.prompt}"

        if d.cost is not None:
            session.cost_total += d.cost
            self._update(session, {"sessionUpdate": "usage_update", "used": session.usage_total, "size": CONTEXT_SIZE,
                                   "cost": {"amount": round(session.cost_total, 9), "currency": "USD"}})
        pieces = split_answer(answer, d.chunks if d.chunks is not None else min(3, len(answer)))
        prefix = session.chunk_prefix
        suffix = b"}}}}\n"
        delay = d.delay
        if delay == 0 and d.crash is None:
            # Back-to-back chunks are encoded in per-turn batches outside the wire's lock: with
            # many streaming sessions, one lock round per line makes the threads convoy.
            encode_into = msgspec.json.Encoder().encode_into
            batch = bytearray()
            for piece in pieces:
                if turn.cancelled:
                    break
                batch += prefix
                encode_into(piece, batch, -1)
                batch += suffix
                sent.append(piece)
                if len(batch) >= _BATCH_BYTES:
                    wire.send_raw(batch)
                    batch = bytearray()
            if batch:
                wire.send_raw(batch)
        else:
            for i, piece in enumerate(pieces):
                if i and delay > 0:
                    wire.flush()
                    if turn.wakeup.wait(delay):
                        break
                if turn.cancelled:
                    break
                wire.send_chunk(prefix, piece, suffix)
                sent.append(piece)
                if d.crash is not None:
                    self._crash(session, user_text, sent, d)
        if d.crash is not None:
            self._crash(session, user_text, sent, d)
        if turn.cancelled:
            return "cancelled"
        if d.usage is not None:
            session.usage_total += d.usage[0] + d.usage[1]
            self._update(session, {"sessionUpdate": "usage_update", "used": session.usage_total, "size": CONTEXT_SIZE})
        return "end_turn"

    def _crash(self, session: _Session, user_text: str, sent: list[str], d: Directives) -> None:
        self._record(session, user_text, sent, d.usage)
        self._wire.flush_and_wait(timeout=5.0)
        _log(f"@crash: exiting with code {d.crash}")
        os._exit(d.crash)  # type: ignore[arg-type]

    def _declined(self, session: _Session, tool_call_id: str, detail: str) -> None:
        message = f"declined: {detail}"
        self._end_tool(session, tool_call_id, "failed", [_text(message)], {"message": message, "code": "declined"})

    def _failed(self, session: _Session, tool_call_id: str, message: str, raw: JsonValue = None) -> None:
        raw = raw if raw is not None else {"message": message}
        self._end_tool(session, tool_call_id, "failed", [_text(message)], raw)

    def _permitted(self, session: _Session, turn: _TurnState, tool_call: JsonObject) -> bool:
        """Announce ``tool_call`` and ask the client's permission (turn thread): True when it
        may run (the call is then ``in_progress``); otherwise it is declined (and a cancelled
        ask cancels the turn)."""
        tool_call_id = str(tool_call["toolCallId"])
        self._update(session, {"sessionUpdate": "tool_call", **tool_call})
        decision, detail = self._ask_permission(session, turn, tool_call)
        if decision != "allow":
            if decision == "cancelled":
                turn.cancel()
            self._declined(session, tool_call_id, detail)
            return False
        update: JsonObject = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "status": "in_progress"}
        self._update(session, update)
        return True

    def _end_tool(self, session: _Session, tool_call_id: str, status: str, content: list[JsonValue],
                  raw: JsonValue) -> None:
        self._update(
            session,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": status,
                "content": content,
                "rawOutput": raw,
            },
        )

    def _do_run(self, session: _Session, turn: _TurnState, tool_call_id: str, action: Action) -> None:
        command = action.arg
        tool_call: JsonObject = {
            "toolCallId": tool_call_id,
            "title": command,
            "kind": "execute",
            "status": "pending",
            "rawInput": {"command": command},
        }
        if not self._permitted(session, turn, tool_call):
            return
        from ._tools import RunningCommand

        try:
            running = RunningCommand(command, session.cwd)
        except OSError as exc:
            self._failed(session, tool_call_id, f"cannot run the command: {exc}")
            return
        turn.command = running
        if turn.cancelled:
            running.kill()
        output: list[str] = []

        def on_output(piece: str) -> None:
            output.append(piece)
            self._update(
                session,
                {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "content": [_text(piece)]},
                flush=True,
            )

        try:
            code = running.pump(on_output)
        finally:
            turn.command = None
        text = "".join(output)
        if turn.cancelled:
            self._failed(session, tool_call_id, "cancelled: the command was killed", {"exitCode": code, "output": text})
            return
        content: list[JsonValue] = [_text(text)] if text else []
        self._end_tool(session, tool_call_id, "completed", content, {"exitCode": code, "output": text})

    def _do_mcp(self, session: _Session, turn: _TurnState, tool_call_id: str, action: Action) -> None:
        from ._mcp import McpError

        tool_call: JsonObject = {
            "toolCallId": tool_call_id,
            "title": f"{action.arg}: {action.text}",
            "kind": "other",
            "status": "pending",
            "rawInput": dict(action.arguments),  # type: ignore[arg-type]
        }
        if not self._permitted(session, turn, tool_call):
            return
        client = session.mcp.get(action.arg)
        if client is None:
            known = ", ".join(session.mcp) or "none"
            self._failed(session, tool_call_id, f"no connected MCP server {action.arg!r} (connected: {known})")
            return
        try:
            call = client.begin("tools/call", {"name": action.text, "arguments": dict(action.arguments)})  # type: ignore[arg-type]
        except McpError as exc:
            self._failed(session, tool_call_id, str(exc))
            return
        turn.waiting = call
        if turn.cancelled:
            call.cancel()
        call.event.wait()
        turn.waiting = None
        if call.cancelled:
            self._failed(session, tool_call_id, "cancelled before the MCP server answered")
            return
        if call.error is not None:
            message = call.error.get("message") if isinstance(call.error, dict) else call.error
            self._failed(session, tool_call_id, f"tools/call failed: {message}", {"error": call.error})
            return
        result = call.result if isinstance(call.result, dict) else {}
        blocks = result.get("content")
        texts = [t for b in blocks if isinstance(b, dict) and isinstance(t := b.get("text"), str)] \
            if isinstance(blocks, list) else []
        text = "".join(texts)
        if result.get("isError") is True:
            self._failed(session, tool_call_id, text or "the tool failed", result)
            return
        self._end_tool(session, tool_call_id, "completed", [_text(text)] if text else [], result)

    def _do_write(self, session: _Session, turn: _TurnState, tool_call_id: str, action: Action) -> None:
        from ._tools import read_old_text, write_file

        path = os.path.normpath(os.path.join(session.cwd, action.arg))
        diff: JsonObject = {"type": "diff", "path": path, "oldText": read_old_text(path), "newText": action.text}
        tool_call: JsonObject = {
            "toolCallId": tool_call_id,
            "title": f"Write {action.arg}",
            "kind": "edit",
            "status": "pending",
            "content": [diff],
            "locations": [{"path": path}],
            "rawInput": {"path": action.arg, "content": action.text},
        }
        if not self._permitted(session, turn, tool_call):
            return
        if self._client_writes_files:
            pending = self._request(
                "fs/write_text_file", {"sessionId": session.id, "path": path, "content": action.text}
            )
            self._wait(pending, turn)
            if pending.cancelled:
                self._failed(session, tool_call_id, "cancelled before the client confirmed the write")
                return
            if pending.error is not None:
                err = pending.error
                message = err.get("message") if isinstance(err, dict) else None
                self._failed(session, tool_call_id, str(message or err), {"error": err})
                return
            via = "client"
        else:
            try:
                write_file(path, action.text)
            except OSError as exc:
                self._failed(session, tool_call_id, f"cannot write {path}: {exc.strerror or exc}")
                return
            via = "direct"
        raw: JsonObject = {"path": path, "chars": len(action.text), "via": via}
        self._end_tool(session, tool_call_id, "completed", [diff], raw)


_REQUEST_HANDLERS = {
    "initialize": Agent._initialize,
    "authenticate": Agent._authenticate,
    "session/new": Agent._new_session,
    "session/load": Agent._load_session,
    "session/prompt": Agent._prompt,
    "session/set_mode": Agent._set_mode,
    "session/set_config_option": Agent._set_config_option,
}
