"""The runtime's own actors: the dispatcher (many actors on few threads), ProcessActor, the line,
JSON-RPC and HTTP/SSE transports, the SessionActor base and the EventHub (fan-in)."""

from ._event_log import EventLog as EventLog, LogReader as LogReader, build_chunks as build_chunks
from ._timers import TimerEntry as TimerEntry, timers as timers
from ._dispatch import (
    DispatchActor as DispatchActor,
    Dispatcher as Dispatcher,
    SupervisedDispatchActor as SupervisedDispatchActor,
    blocking as blocking,
    default_dispatcher as default_dispatcher,
)
from ._subscription import BUFFERED_TEXT_LIMIT as BUFFERED_TEXT_LIMIT, Subscription as Subscription
from .event_hub import Emitter as Emitter, EventHub as EventHub, HubHandle as HubHandle
from ._jsonrpc import (
    INTERNAL_ERROR as INTERNAL_ERROR,
    INVALID_PARAMS as INVALID_PARAMS,
    METHOD_NOT_FOUND as METHOD_NOT_FOUND,
    JsonRpcConnection as JsonRpcConnection,
    JsonRpcNotification as JsonRpcNotification,
    JsonRpcRequest as JsonRpcRequest,
    LineTap as LineTap,
)
from ._control import (
    Interrupt as Interrupt,
    Open as Open,
    Respond as Respond,
    SendTurn as SendTurn,
    TransportWarning as TransportWarning,
    TurnTimerExpired as TurnTimerExpired,
)
from ._requests import PendingRequests as PendingRequests
from ._turns import TurnTracker as TurnTracker
from ._http import (
    HTTP_EXTRA_HINT as HTTP_EXTRA_HINT,
    HttpTransport as HttpTransport,
    SseStatus as SseStatus,
    SseStream as SseStream,
    http_available as http_available,
)
from ._session import SessionActor as SessionActor, SessionRecord as SessionRecord, SessionTable as SessionTable, StoppedSnapshots as StoppedSnapshots
from ._terminal import Terminal as Terminal, TerminalExit as TerminalExit
from .process import (
    ExitInfo as ExitInfo,
    ProcessActor as ProcessActor,
    ProcessHandle as ProcessHandle,
    ProcessSpec as ProcessSpec,
    WarningSink as WarningSink,
)

__all__ = [
    "BUFFERED_TEXT_LIMIT",
    "DispatchActor",
    "Dispatcher",
    "SupervisedDispatchActor",
    "blocking",
    "default_dispatcher",
    "HTTP_EXTRA_HINT",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "METHOD_NOT_FOUND",
    "ExitInfo",
    "Interrupt",
    "Open",
    "PendingRequests",
    "Respond",
    "SendTurn",
    "TransportWarning",
    "TurnTimerExpired",
    "TurnTracker",
    "HttpTransport",
    "JsonRpcConnection",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "LineTap",
    "ProcessActor",
    "ProcessHandle",
    "ProcessSpec",
    "SessionActor",
    "SessionRecord",
    "SessionTable",
    "SseStatus",
    "SseStream",
    "StoppedSnapshots",
    "Terminal",
    "TerminalExit",
    "WarningSink",
    "Emitter",
    "EventHub",
    "EventLog",
    "HubHandle",
    "LogReader",
    "Subscription",
    "TimerEntry",
    "build_chunks",
    "http_available",
    "timers",
]
