"""The event pipeline: the :class:`EventHub` (fan-in: correlate, sequence, log, publish), the
durable event log, the grammar guard, secret redaction (of events, and of the host's Python log
records: :data:`LOG_MASK`) and subscriptions. Depends on nothing else in :mod:`paddock.actors`."""

from ._event_log import EventLog as EventLog, LogReader as LogReader, build_chunks as build_chunks
from ._hub import Emitter as Emitter, EventHub as EventHub, HubHandle as HubHandle
from ._log_mask import LOG_MASK as LOG_MASK, LogMask as LogMask
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
    "BUFFERED_TEXT_LIMIT", "END", "LOG_MASK", "NEEDS_IO", "REDACTED", "Emitter", "EventHub", "EventLog", "HubHandle",
    "LogMask", "LogReader", "Redactor", "SubscribeOptions", "Subscription", "build_chunks", "type_filter",
]
