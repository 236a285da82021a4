"""Transports to a child: :class:`ProcessActor` (one supervised process, its pipes read by
reader threads), the line splitter and bounded stdin writer, JSON-RPC over lines, HTTP + SSE, and
ACP terminals. Depends on :mod:`paddock.actors.execution` only."""

from ._http import (
    HTTP_EXTRA_HINT as HTTP_EXTRA_HINT,
    HttpTransport as HttpTransport,
    SseStatus as SseStatus,
    SseStream as SseStream,
    http_available as http_available,
)
from ._jsonrpc import (
    INTERNAL_ERROR as INTERNAL_ERROR,
    INVALID_PARAMS as INVALID_PARAMS,
    METHOD_NOT_FOUND as METHOD_NOT_FOUND,
    JsonRpcConnection as JsonRpcConnection,
    JsonRpcNotification as JsonRpcNotification,
    JsonRpcRequest as JsonRpcRequest,
    LineTap as LineTap,
)
from ._process import (
    ExitInfo as ExitInfo,
    ProcessActor as ProcessActor,
    ProcessCallbacks as ProcessCallbacks,
    ProcessHandle as ProcessHandle,
    ProcessSpec as ProcessSpec,
    WarningSink as WarningSink,
)
from ._terminal import Terminal as Terminal, TerminalExit as TerminalExit
from ._unix import UnixLineListener as UnixLineListener

__all__ = [
    "HTTP_EXTRA_HINT", "INTERNAL_ERROR", "INVALID_PARAMS", "METHOD_NOT_FOUND", "ExitInfo", "HttpTransport",
    "JsonRpcConnection", "JsonRpcNotification", "JsonRpcRequest", "LineTap", "ProcessActor", "ProcessCallbacks",
    "ProcessHandle", "ProcessSpec", "SseStatus", "SseStream", "Terminal", "TerminalExit", "UnixLineListener", "WarningSink",
    "http_available",
]
