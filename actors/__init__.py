"""The runtime's own actors: ProcessActor, the line and JSON-RPC transports, the SessionActor base
and the EventHub (fan-in)."""

from ._event_log import EventLog as EventLog, LogReader as LogReader
from ._subscription import BUFFERED_TEXT_LIMIT as BUFFERED_TEXT_LIMIT, Subscription as Subscription
from .event_hub import Emitter as Emitter, EventHub as EventHub, HubHandle as HubHandle

__all__ = [
    "BUFFERED_TEXT_LIMIT",
    "Emitter",
    "EventHub",
    "EventLog",
    "HubHandle",
    "LogReader",
    "Subscription",
]
