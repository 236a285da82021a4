"""The relay's tap: what it reads of the JSON-RPC lines going by, and the back end a front
speaks to. Used by both fronts of the relay (stdio in :mod:`._relay`, streamable HTTP in
:mod:`._http_front`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

import msgspec

from paddock.contract import JsonValue

from ._protocol import CallEnded, CallStarted, Failed, Initialized, Report, ToolsListed

__all__ = ["Backend", "Tap"]

_RESULT_TEXT_LIMIT = 64 * 1024


class _Message(msgspec.Struct, frozen=True):
    """The JSON-RPC fields the tap reads; everything else passes untouched."""

    id: JsonValue = None
    method: str | None = None
    params: JsonValue = None
    result: JsonValue = None
    error: JsonValue = None


_message_decoder = msgspec.json.Decoder(_Message)


def _text_of(result: JsonValue) -> str:
    content = result.get("content") if isinstance(result, dict) else None
    parts = [b.get("text") for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    return "".join(p for p in parts if isinstance(p, str))[:_RESULT_TEXT_LIMIT]


def _error_text(error: JsonValue) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return str(error)


class Tap:
    """Watches the JSON-RPC lines going by and turns the ones that matter into reports. Lines
    are never changed. Thread-safe (the agent's and the server's sides call it)."""

    def __init__(self, report: Callable[[Report], None]) -> None:
        self._report = report
        self._lock = threading.Lock()
        # request id (as JSON) -> what it was: "initialize", "tools/list", or a running call
        self._pending: dict[bytes, tuple[str, int, str, float]] = {}
        self._calls = 0
        self._tools: list[str] = []
        self.initialized = False

    def from_agent(self, line: bytes) -> None:
        try:
            msg = _message_decoder.decode(line)
        except msgspec.DecodeError:
            return
        if msg.method is None or msg.id is None:
            return
        key = msgspec.json.encode(msg.id)
        if msg.method in ("initialize", "tools/list"):
            # a tools/list with a cursor asks for a further page: the count accumulates
            paged = isinstance(msg.params, dict) and msg.params.get("cursor") is not None
            with self._lock:
                self._pending[key] = (msg.method, 0, "paged" if paged else "", time.monotonic())
        elif msg.method == "tools/call":
            params = msg.params if isinstance(msg.params, dict) else {}
            tool = params.get("name")
            tool = tool if isinstance(tool, str) else "?"
            with self._lock:
                self._calls += 1
                call = self._calls
                self._pending[key] = ("tools/call", call, tool, time.monotonic())
            self._report(CallStarted(call=call, tool=tool, arguments=params.get("arguments")))

    def from_server(self, line: bytes) -> None:
        try:
            msg = _message_decoder.decode(line)
        except msgspec.DecodeError:
            return
        if msg.method is not None or msg.id is None:
            return  # a request or notification of the server's own
        with self._lock:
            entry = self._pending.pop(msgspec.json.encode(msg.id), None)
        if entry is None:
            return
        method, call, tool, started = entry
        if method == "tools/call":
            seconds = time.monotonic() - started
            if msg.error is not None:
                self._report(CallEnded(call=call, tool=tool, seconds=seconds, error=_error_text(msg.error)))
                return
            text = _text_of(msg.result)
            failed = isinstance(msg.result, dict) and msg.result.get("isError") is True
            self._report(CallEnded(call=call, tool=tool, seconds=seconds, error=(text or "the tool failed") if failed else None,
                                   result=None if failed else text))
            return
        if msg.error is not None:  # initialize or tools/list
            self._report(Failed(reason=f"{method} failed: {_error_text(msg.error)}"))
            return
        result = msg.result if isinstance(msg.result, dict) else {}
        if method == "initialize":
            info = result.get("serverInfo")
            info = info if isinstance(info, dict) else {}
            name, version, protocol = info.get("name"), info.get("version"), result.get("protocolVersion")
            self.initialized = True
            self._report(Initialized(name=name if isinstance(name, str) else None,
                                     version=version if isinstance(version, str) else None,
                                     protocol=protocol if isinstance(protocol, str) else None))
        else:
            tools = result.get("tools")
            names = [t.get("name") for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
            with self._lock:
                if tool != "paged":
                    self._tools = []
                self._tools.extend(n for n in names if isinstance(n, str) and n not in self._tools)
                listed = tuple(self._tools)
            self._report(ToolsListed(count=len(listed), names=listed))


class Backend(Protocol):
    """The real server as a front sees it: lines in, and closing."""

    def send(self, line: bytes) -> None: ...

    def close(self) -> None: ...
