"""The event pipeline: the :class:`EventHub` (fan-in: correlate, sequence, log, publish), the
durable event log, the grammar guard, secret redaction and subscriptions. Depends on nothing else
in :mod:`paddock.actors`."""

from ._event_log import EventLog as EventLog, LogReader as LogReader, build_chunks as build_chunks
from ._hub import Emitter as Emitter, EventHub as EventHub, HubHandle as HubHandle
from ._redact import REDACTED as REDACTED, Redactor as Redactor
from ._subscription import (
    BUFFERED_TEXT_LIMIT as BUFFERED_TEXT_LIMIT,
    END as END,
    NEEDS_IO as NEEDS_IO,
    SubscribeOptions as SubscribeOptions,
    Subscription as Subscription,
    type_filter as type_filter,
)

__all__ = [
    "BUFFERED_TEXT_LIMIT", "END", "NEEDS_IO", "REDACTED", "Emitter", "EventHub", "EventLog", "HubHandle", "LogReader", "Redactor",
    "SubscribeOptions", "Subscription", "build_chunks", "type_filter",
]
