"""The host's approval hook: ``Runtime.open(..., approval_hook=fn)``.

The deciders of a request, in order: the session's approval rules (the session base, on the
actor, for every driver), then this hook, then a person. The hook sees only the requests no rule
and no runtime mode answered: those are resolved in the same batch as their ``request.opened``,
which the hub hands to a subscription whole. It never runs on an actor's thread: a reader thread
takes the requests from the hub and a few daemon workers call the hook (a hook that never
returns holds one worker, never the actors nor the interpreter's exit); a call that does not return
within its timeout leaves the request to a person (a ``runtime.warning``
``approval.hook_timeout`` says so) and its late answer is dropped.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from collections.abc import Callable

from paddock._observe._event_reader import EventReader
from paddock.actors import HubHandle, timers
from paddock.contract import DECISIONS, Decision, Event, PaddockError, RequestOpened, RuntimeWarningEvent

__all__ = ["ApprovalHook", "HookRunner"]

log = logging.getLogger("paddock.approval_hook")

ApprovalHook = Callable[[RequestOpened], "Decision | None"]
"""Called with a request no rule decided; returns a decision the request offered, or ``None``
(a person decides). Runs on one of the hook's daemon workers, never an actor's thread."""

Answer = Callable[[str, str, str], None]
"""``answer(thread_id, request_id, decision)``: answer as the host (raises ``PaddockError``)."""

DEFAULT_HOOK_TIMEOUT = 10.0
_WORKERS = 4


class HookRunner:
    """Calls ``hook`` for each open request, off the actors' threads, and answers it with
    ``answer``. ``skip(thread_id)`` names threads the hook must not see (``generate_text``'s
    ephemeral sessions decline everything themselves). :meth:`start` and :meth:`close` run on
    the Runtime's thread; the reader, the workers and the timer thread do the rest."""

    def __init__(self, hub: HubHandle, hook: ApprovalHook, answer: Answer, *, timeout: float,
                 skip: Callable[[str], bool]) -> None:
        self._hub = hub
        self._hook = hook
        self._answer = answer
        self._timeout = timeout
        self._skip = skip
        self._todo: queue.SimpleQueue[RequestOpened | None] = queue.SimpleQueue()
        self._workers = [threading.Thread(target=self._work, name=f"paddock-approval-hook-{n}", daemon=True)
                         for n in range(_WORKERS)]
        self._lock = threading.Lock()
        self._waiting: dict[tuple[str, str], bool] = {}  # (thread, request) -> still within its time
        self._closed = False
        self._reader = EventReader(lambda: hub.subscribe(types=("request.opened", "request.resolved")),
                                   "paddock-approval-hook-reader", self._batch, tick=0.5)

    def start(self) -> HookRunner:
        for worker in self._workers:
            worker.start()
        self._reader.start()
        return self

    def close(self, timeout: float = 2.0) -> None:
        with self._lock:
            self._closed = True
            self._waiting.clear()
        self._reader.close(timeout)
        for _ in self._workers:
            self._todo.put(None)  # a worker busy in a hung hook ends when the hook returns

    def _batch(self, events: list[Event]) -> None:
        """Reader thread: the requests of this batch that nothing answered in it go to the hook."""
        opened: dict[tuple[str, str], RequestOpened] = {}
        for event in events:
            if event.request_id is None:
                continue
            key = (event.thread_id, event.request_id)
            if isinstance(event, RequestOpened):
                opened[key] = event
            else:
                opened.pop(key, None)
                with self._lock:
                    self._waiting.pop(key, None)
        for key, event in opened.items():
            if self._skip(event.thread_id):
                continue
            with self._lock:
                if self._closed:
                    return
                self._waiting[key] = True
            timers.schedule(time.monotonic() + self._timeout, functools.partial(self._expire, key, event))
            self._todo.put(event)

    def _work(self) -> None:
        """A worker thread: call the hook for each request handed to it, until told to end."""
        while (event := self._todo.get()) is not None:
            key = (event.thread_id, event.request_id or "")
            with self._lock:
                if not self._waiting.get(key):
                    continue  # resolved or timed out while it waited for a worker
            try:
                decision = self._hook(event)
            except Exception as exc:  # the host's code: report it, never let it end the worker
                self._done(key, event, None, exc)
            else:
                self._done(key, event, decision, None)

    def _expire(self, key: tuple[str, str], event: RequestOpened) -> None:
        """Timer thread: the hook did not answer in time; a person decides."""
        with self._lock:
            if not self._waiting.get(key):
                return
            self._waiting[key] = False
        self._warn(event, "approval.hook_timeout",
                   f"the approval hook did not answer within {self._timeout:g} s; the request waits for a person")

    def _done(self, key: tuple[str, str], event: RequestOpened, decision: Decision | None,
              exc: Exception | None) -> None:
        """Worker thread: answer with the hook's decision if it came in time."""
        with self._lock:
            in_time = self._waiting.pop(key, None)
        if not in_time:
            return
        if exc is not None:
            self._warn(event, "approval.hook_failed", f"the approval hook raised {type(exc).__name__}: {exc}; "
                                                      "the request waits for a person")
            return
        if decision is None:
            return
        if decision not in DECISIONS:
            self._warn(event, "approval.hook_failed", f"the approval hook answered {decision!r}, not one of "
                                                      f"{', '.join(DECISIONS)}; the request waits for a person")
            return
        try:
            self._answer(event.thread_id, event.request_id or "", decision)
        except PaddockError as exc:  # resolved meanwhile (a person, the turn's end) or not offered
            log.debug("approval hook answer for %s not taken: %s", event.request_id, exc)

    def _warn(self, event: RequestOpened, code: str, message: str) -> None:
        try:
            self._hub.emitter(event.driver, event.instance_id, event.thread_id).emit([RuntimeWarningEvent(
                driver=event.driver, instance_id=event.instance_id, thread_id=event.thread_id,
                turn_id=event.turn_id, request_id=event.request_id, code=code, message=message)])
        except PaddockError:
            pass
