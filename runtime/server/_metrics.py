"""Prometheus metrics of a served Runtime (``GET /metrics``, behind the same auth as the API).

Metrics cost nothing on the event hot path: one daemon thread reads one subscription filtered to
the few event types below (never a content delta), and counts each batch it takes in one pass;
the hub only checks the type filter once per published batch. What can be read when scraped is
read then: events published (the hub's last ``seq``), the event log's size, the lag of this
reader behind the hub.

| metric | from |
|---|---|
| ``paddock_turns_started_total``, ``paddock_turns_completed_total{state}``, ``paddock_turns_running`` | ``turn.started``, ``turn.completed`` |
| ``paddock_turn_running_seconds`` | how long the oldest running turn has run, when scraped |
| ``paddock_turn_duration_seconds`` | ``turn.started`` to ``turn.completed`` |
| ``paddock_turns_queued``, ``paddock_turn_queue_wait_seconds`` | admission's queue depth (``turn.queued`` until its ``turn.started`` or ``turn.completed``) and the wait of each turn started from it |
| ``paddock_turn_first_text_seconds`` | ``turn.started`` to the turn's first assistant message item |
| ``paddock_requests_opened_total{kind}``, ``paddock_requests_resolved_total{resolution,decision}``, ``paddock_requests_pending`` | ``request.*`` |
| ``paddock_requests_decided_total{decided_by}`` | answered ``request.resolved`` by who decided (``person``, ``rule``, ``host``, ``session``, ``mode``) |
| ``paddock_request_answer_seconds`` | ``request.opened`` to ``request.resolved`` |
| ``paddock_sessions_live``, ``paddock_session_exits_total{reason}`` | ``session.started``, ``session.exited`` |
| ``paddock_warnings_total{code}`` | ``runtime.warning`` (process restarts, stalls, model retries) |
| ``paddock_mcp_servers{server,status}`` | ``mcp.status.updated`` |
| ``paddock_events_total``, ``paddock_event_log_bytes``, ``paddock_metrics_lag_events`` | read when scraped |
| ``paddock_usage_tokens_total{kind}``, ``paddock_usage_cost_usd_total{source}``, ``paddock_usage_turn_seconds_total`` | the usage ledger, read when scraped |

Every series is labelled with ``instance`` and ``driver``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from paddock._observe._event_reader import EventReader
from paddock.actors import Subscription
from paddock.contract import (
    Event,
    ItemStarted,
    McpStatusUpdated,
    RequestOpened,
    RequestResolved,
    RuntimeWarningEvent,
    SessionExited,
    SessionStarted,
    TurnCompleted,
    TurnQueued,
    TurnStarted,
    UsageReport,
)

__all__ = ["CONTENT_TYPE", "MetricsCollector", "TYPES"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TYPES = ("turn.queued", "turn.started", "turn.completed", "item.started", "request.opened", "request.resolved", "session.started",
         "session.exited", "runtime.warning", "mcp.status.updated")
"""The event types the metrics reader subscribes to."""
BATCH = 1024
_BY = ("instance", "driver")
# Turns last from a second to an hour; answers to approvals from a second to a day.
_TURN_BUCKETS = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
_FIRST_TEXT_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
_ANSWER_BUCKETS = (1, 5, 15, 30, 60, 300, 900, 3600, 14400, 86400)


class _ScrapeTime(Collector):
    """Values read when scraped: events published, the log's size, the reader's lag, how long
    the running turns have been running."""

    def __init__(self, last_seq: Callable[[], int], log_path: str | None, read_seq: Callable[[], int],
                 running: Callable[[], list[tuple[str, str, float]]],
                 usage: Callable[[], UsageReport] | None = None) -> None:
        self._usage = usage
        self._last_seq = last_seq
        self._log_path = log_path
        self._read_seq = read_seq
        self._running = running

    def collect(self) -> Iterable[Metric]:
        oldest = GaugeMetricFamily("paddock_turn_running_seconds", "How long the oldest running turn has run",
                                   labels=list(_BY))
        now = time.time()
        ages: dict[tuple[str, str], float] = {}
        for instance, driver, started in self._running():
            ages[(instance, driver)] = max(ages.get((instance, driver), 0.0), now - started)
        for key, age in ages.items():
            oldest.add_metric(list(key), max(0.0, age))
        yield oldest
        last = self._last_seq()
        yield CounterMetricFamily("paddock_events", "Events published by the hub (rate() is events per second)",
                                  value=last)
        yield GaugeMetricFamily("paddock_metrics_lag_events",
                                "Events the metrics reader is behind the hub (hub lag and subscriber backlog)",
                                value=max(0, last - self._read_seq()))
        if self._log_path is not None:
            try:
                size = sum(os.path.getsize(self._log_path + tail) for tail in ("", "-wal") if os.path.exists(self._log_path + tail))
            except OSError:
                size = 0
            yield GaugeMetricFamily("paddock_event_log_bytes", "Size of the event log on disk (with its WAL)", value=size)
        if self._usage is not None:
            yield from _usage_metrics(self._usage())


def _usage_metrics(report: UsageReport) -> Iterable[Metric]:
    """The ledger's figures per instance and driver, as counters (they only grow)."""
    tokens = CounterMetricFamily("paddock_usage_tokens", "Tokens the agents used, by kind (the usage ledger)",
                                 labels=[*_BY, "kind"])
    cost = CounterMetricFamily("paddock_usage_cost_usd", "Cost of the turns whose cost is known, in USD",
                               labels=[*_BY, "source"])
    seconds = CounterMetricFamily("paddock_usage_turn_seconds", "Wall time of turns (the usage ledger)", labels=list(_BY))
    for i in report.instances:
        by = [i.instance_id, i.driver]
        for kind in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens"):
            tokens.add_metric([*by, kind.removesuffix("_tokens")], getattr(i, kind))
        if i.cost is not None:
            cost.add_metric([*by, i.cost_source], i.cost)
        seconds.add_metric(by, i.turn_seconds)
    yield tokens
    yield cost
    yield seconds


class MetricsCollector:
    """Turns a Runtime's events into Prometheus metrics. :meth:`start` begins reading on a daemon
    thread of its own (``paddock-metrics``); :meth:`render` (any thread) is the text exposition;
    :meth:`close` ends the subscription and joins the thread."""

    def __init__(self, subscribe: Callable[[], Subscription], *, last_seq: Callable[[], int],
                 log_path: str | None, usage: Callable[[], UsageReport] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.turns_started = Counter("paddock_turns_started", "Turns started", _BY, registry=r)
        self.turns_completed = Counter("paddock_turns_completed", "Turns ended, by state", (*_BY, "state"), registry=r)
        self.turn_duration = Histogram("paddock_turn_duration_seconds", "Turn duration", _BY, buckets=_TURN_BUCKETS,
                                       registry=r)
        self.first_text = Histogram("paddock_turn_first_text_seconds", "Time from a turn's start to its first assistant text",
                                    _BY, buckets=_FIRST_TEXT_BUCKETS, registry=r)
        self.requests_opened = Counter("paddock_requests_opened", "Approval requests opened", (*_BY, "kind"), registry=r)
        self.requests_resolved = Counter("paddock_requests_resolved", "Approval requests resolved",
                                         (*_BY, "resolution", "decision"), registry=r)
        self.requests_decided = Counter("paddock_requests_decided", "Approval requests answered, by who decided",
                                        (*_BY, "decided_by"), registry=r)
        self.requests_pending = Gauge("paddock_requests_pending", "Approval requests waiting for an answer", _BY, registry=r)
        self.answer_time = Histogram("paddock_request_answer_seconds", "Time from an approval request to its answer", _BY,
                                     buckets=_ANSWER_BUCKETS, registry=r)
        self.sessions_live = Gauge("paddock_sessions_live", "Live sessions", _BY, registry=r)
        self.session_exits = Counter("paddock_session_exits", "Sessions ended, by cause", (*_BY, "reason"), registry=r)
        self.warnings = Counter("paddock_warnings", "runtime.warning events, by code", (*_BY, "code"), registry=r)
        self.mcp = Gauge("paddock_mcp_servers", "MCP servers by their last reported status (1 = current)",
                         (*_BY, "server", "status"), registry=r)
        self.turns_running = Gauge("paddock_turns_running", "Turns running now", _BY, registry=r)
        self.turns_queued = Gauge("paddock_turns_queued", "Turns waiting in admission's queue", _BY, registry=r)
        self.queue_wait = Histogram("paddock_turn_queue_wait_seconds", "Time a turn waited in admission's queue",
                                    _BY, buckets=_TURN_BUCKETS, registry=r)
        self._queued: dict[str, float] = {}  # queued turn id -> queued at
        self._read_seq = 0
        self._turns: dict[str, tuple[float, bool]] = {}  # turn id -> (started at, first text seen)
        self._turn_labels: dict[str, tuple[str, str]] = {}  # turn id -> (instance, driver)
        r.register(_ScrapeTime(last_seq, log_path, lambda: self._read_seq, self._running, usage))
        self._requests: dict[str, float] = {}  # request id -> opened at
        self._live: set[str] = set()  # thread ids
        self._mcp_status: dict[tuple[str, str, str], str] = {}
        self._reader = EventReader(subscribe, "paddock-metrics", self.count, most=BATCH)

    def start(self) -> None:
        self._reader.start()

    def close(self, timeout: float = 5.0) -> None:
        self._reader.close(timeout)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def count(self, batch: list[Event]) -> None:
        """Count one batch (the reader thread)."""
        for ev in batch:
            labels = (ev.instance_id, ev.driver)
            if isinstance(ev, TurnStarted):
                self._dequeued(ev, labels, started=True)
                self.turns_started.labels(*labels).inc()
                if ev.turn_id and ev.turn_id not in self._turns:
                    self._turns[ev.turn_id] = (ev.created_at, False)
                    self._turn_labels[ev.turn_id] = labels
                    self.turns_running.labels(*labels).inc()
            elif isinstance(ev, ItemStarted):
                turn = self._turns.get(ev.turn_id or "")
                if turn is not None and not turn[1] and ev.kind == "assistant_message" and ev.turn_id:
                    self._turns[ev.turn_id] = (turn[0], True)
                    self.first_text.labels(*labels).observe(max(0.0, ev.created_at - turn[0]))
            elif isinstance(ev, TurnQueued):
                if ev.turn_id and ev.turn_id not in self._queued:
                    self._queued[ev.turn_id] = ev.created_at
                    self.turns_queued.labels(*labels).inc()
            elif isinstance(ev, TurnCompleted):
                self._dequeued(ev, labels, started=False)
                self.turns_completed.labels(*labels, ev.state).inc()
                began = self._turns.pop(ev.turn_id or "", None)
                if began is not None:
                    self._turn_labels.pop(ev.turn_id or "", None)
                    self.turns_running.labels(*labels).dec()
                    self.turn_duration.labels(*labels).observe(max(0.0, ev.created_at - began[0]))
            elif isinstance(ev, RequestOpened):
                self.requests_opened.labels(*labels, ev.kind).inc()
                if ev.request_id and ev.request_id not in self._requests:
                    self._requests[ev.request_id] = ev.created_at
                    self.requests_pending.labels(*labels).inc()
            elif isinstance(ev, RequestResolved):
                self.requests_resolved.labels(*labels, ev.resolution, ev.decision or "").inc()
                if ev.resolution == "answered":
                    self.requests_decided.labels(*labels, ev.decided_by or "unknown").inc()
                opened = self._requests.pop(ev.request_id or "", None)
                if opened is not None:
                    self.requests_pending.labels(*labels).dec()
                    if ev.resolution == "answered":
                        self.answer_time.labels(*labels).observe(max(0.0, ev.created_at - opened))
            elif isinstance(ev, SessionStarted):
                if ev.thread_id not in self._live:
                    self._live.add(ev.thread_id)
                    self.sessions_live.labels(*labels).inc()
            elif isinstance(ev, SessionExited):
                self.session_exits.labels(*labels, ev.reason).inc()
                if ev.thread_id in self._live:
                    self._live.discard(ev.thread_id)
                    self.sessions_live.labels(*labels).dec()
            elif isinstance(ev, RuntimeWarningEvent):
                self.warnings.labels(*labels, ev.code).inc()
            elif isinstance(ev, McpStatusUpdated):
                self._mcp(labels, ev)
            if ev.seq:
                self._read_seq = ev.seq

    def _dequeued(self, ev: TurnStarted | TurnCompleted, labels: tuple[str, str], *, started: bool) -> None:
        """A queued turn left the queue: started (its wait observed), or ended while queued."""
        if not self._queued:
            return
        queued_at = self._queued.pop(ev.turn_id or "", None)
        if queued_at is not None:
            self.turns_queued.labels(*labels).dec()
            if started:
                self.queue_wait.labels(*labels).observe(max(0.0, ev.created_at - queued_at))

    def _running(self) -> list[tuple[str, str, float]]:
        """(instance, driver, started at) of each running turn (the scraping thread: a copy)."""
        turns, labels = dict(self._turns), dict(self._turn_labels)
        return [(*labels[t], began) for t, (began, _) in turns.items() if t in labels]

    def _mcp(self, labels: tuple[str, str], ev: McpStatusUpdated) -> None:
        key = (*labels, ev.server)
        before = self._mcp_status.get(key)
        if before is not None:
            self.mcp.labels(*key, before).set(0)
        self._mcp_status[key] = ev.status
        self.mcp.labels(*key, ev.status).set(1)
