"""OpenTelemetry spans for turns, approval requests and control calls, through ``opentelemetry-api``
only: with the API absent every function here is a no-op, and with the API but no SDK configured
by the host the spans are the API's own non-recording ones.

- **Control calls**: every operation of a :class:`~paddock.Runtime` (``start_session``,
  ``send_turn``, ``respond_to_request``, ...) runs inside a span ``paddock.<operation>`` on the
  caller's thread, so the host's current span is its parent.
- **Turns and requests**: when the host configured a tracer provider before ``Runtime.open``, one
  daemon thread (``paddock-spans``) reads a subscription of the turn and request events and
  records a span per turn (``invoke_agent <instance>``, from ``turn.started`` to its
  ``turn.completed``) and per approval request (``paddock.request <kind>``, a child of its turn,
  from ``request.opened`` to ``request.resolved``), with the events' own timestamps. Attributes
  follow the OpenTelemetry GenAI semantic conventions where they fit (``gen_ai.operation.name``,
  ``gen_ai.provider.name``, ``gen_ai.agent.name``, ``gen_ai.conversation.id``,
  ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``/``output_tokens``); the rest are
  ``paddock.*``. Nothing runs on the event hot path: the hub hands that subscription only the
  four event types, once per batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from paddock.contract import Event, RequestOpened, RequestResolved, TurnCompleted, TurnStarted

from ._event_reader import EventReader

if TYPE_CHECKING:
    from paddock.actors import Subscription

try:  # optional: the spans are a no-op without it
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - exercised where the API is not installed
    _trace = None  # type: ignore[assignment]

__all__ = ["SPAN_TYPES", "TurnSpans", "control_span", "tracing_configured"]

SPAN_TYPES = ("turn.started", "turn.completed", "request.opened", "request.resolved")
_tracer: Any = None


def _get_tracer() -> Any:
    global _tracer
    if _tracer is None and _trace is not None:
        from paddock import __version__

        # A proxy that follows the provider the host sets, also later.
        _tracer = _trace.get_tracer("paddock", __version__)
    return _tracer


def tracing_configured() -> bool:
    """True when ``opentelemetry-api`` is installed and the host set a tracer provider (an SDK)."""
    return _trace is not None and not isinstance(_trace.get_tracer_provider(), _trace.ProxyTracerProvider)


@contextlib.contextmanager
def control_span(operation: str, args: Mapping[str, Any]) -> Iterator[None]:
    """A span ``paddock.<operation>`` around one control call (the caller's thread); an error
    it raises is recorded on the span and re-raised."""
    tracer = _get_tracer()
    if tracer is None:
        yield
        return
    attributes = {"paddock.operation": operation}
    thread_id = args.get("thread_id")
    if isinstance(thread_id, str):
        attributes["gen_ai.conversation.id"] = thread_id
    instance = args.get("instance")
    if isinstance(instance, str):
        attributes["gen_ai.agent.name"] = instance
    with tracer.start_as_current_span(f"paddock.{operation}", attributes=attributes):
        yield


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _end(span: Any, ev: Event, attributes: Mapping[str, str | int | None]) -> None:
    """Set the ``attributes`` that have a value on ``span`` and end it at ``ev``'s time."""
    for key, value in attributes.items():
        if value is not None:
            span.set_attribute(key, value)
    span.end(end_time=_ns(ev.created_at))


class TurnSpans:
    """Spans of turns and requests from the events (see the module docstring). :meth:`start`
    begins reading on its own daemon thread; :meth:`close` ends every span still open (at the
    close time, marked unfinished) and joins the thread."""

    def __init__(self, subscribe: Callable[[], Subscription]) -> None:
        self._turns: dict[str, Any] = {}
        self._requests: dict[str, Any] = {}
        self._reader = EventReader(subscribe, "paddock-spans", self._record_all)

    def start(self) -> TurnSpans:
        self._reader.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        self._reader.close(timeout)
        for span in [*self._requests.values(), *self._turns.values()]:
            span.set_attribute("paddock.unfinished", True)
            span.end()
        self._turns.clear()
        self._requests.clear()

    def _record_all(self, batch: list[Event]) -> None:
        for ev in batch:
            self.record(ev)

    def record(self, ev: Event) -> None:
        """One event (the reader thread)."""
        tracer = _get_tracer()
        if tracer is None or _trace is None:
            return
        if isinstance(ev, TurnStarted):
            attributes = {
                "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": ev.driver,
                "gen_ai.agent.name": ev.instance_id, "gen_ai.conversation.id": ev.thread_id,
                "paddock.turn_id": ev.turn_id or "",
            }
            if ev.model:
                attributes["gen_ai.request.model"] = ev.model
            span = tracer.start_span(f"invoke_agent {ev.instance_id}", kind=_trace.SpanKind.CLIENT,
                                     start_time=_ns(ev.created_at), attributes=attributes)
            self._turns[ev.turn_id or ""] = span
        elif isinstance(ev, TurnCompleted):
            span = self._turns.pop(ev.turn_id or "", None)
            if span is not None:
                usage = ev.usage
                if ev.state == "failed":
                    span.set_status(_trace.Status(_trace.StatusCode.ERROR, ev.error or "the turn failed"))
                _end(span, ev, {"paddock.turn.state": ev.state,
                                "gen_ai.usage.input_tokens": usage.input_tokens if usage is not None else None,
                                "gen_ai.usage.output_tokens": usage.output_tokens if usage is not None else None})
        elif isinstance(ev, RequestOpened):
            parent = self._turns.get(ev.turn_id or "")
            context = _trace.set_span_in_context(parent) if parent is not None else None
            span = tracer.start_span(f"paddock.request {ev.kind}", context=context, start_time=_ns(ev.created_at),
                                     attributes={"paddock.request.kind": ev.kind, "gen_ai.conversation.id": ev.thread_id,
                                                 "gen_ai.agent.name": ev.instance_id})
            self._requests[ev.request_id or ""] = span
        elif isinstance(ev, RequestResolved):
            span = self._requests.pop(ev.request_id or "", None)
            if span is not None:
                _end(span, ev, {"paddock.request.resolution": ev.resolution, "paddock.request.decision": ev.decision})
