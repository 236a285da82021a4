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
from ._redact import REDACTED as REDACTED, Redactor as Redactor
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
from ._instance import SharedProcessAdapter as SharedProcessAdapter
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
    "Emitter",
    "EventHub",
    "EventLog",
    "ExitInfo",
    "HTTP_EXTRA_HINT",
    "HttpTransport",
    "HubHandle",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "Interrupt",
    "JsonRpcConnection",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "LineTap",
    "LogReader",
    "METHOD_NOT_FOUND",
    "Open",
    "PendingRequests",
    "ProcessActor",
    "ProcessHandle",
    "ProcessSpec",
    "REDACTED",
    "Redactor",
    "Respond",
    "SendTurn",
    "SessionActor",
    "SessionRecord",
    "SessionTable",
    "SharedProcessAdapter",
    "SseStatus",
    "SseStream",
    "StoppedSnapshots",
    "Subscription",
    "SupervisedDispatchActor",
    "Terminal",
    "TerminalExit",
    "TimerEntry",
    "TransportWarning",
    "TurnTimerExpired",
    "TurnTracker",
    "WarningSink",
    "blocking",
    "build_chunks",
    "default_dispatcher",
    "http_available",
    "timers",
]
