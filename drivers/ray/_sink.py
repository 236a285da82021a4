"""The node-side event sink: the ``HubHandle``'s role for an adapter running on a Ray node.

An adapter on a node emits exactly as it would at home, through ``emitter(...).emit(events)``
and ``instance_warning(...)``. The sink masks the instance's secrets right there (the values
the node built its environment with, plus the common credential shapes), so nothing unmasked
ever leaves the node, and queues each batch with its identity. The host's pump takes the queue
in bounded pulls (:meth:`NodeSink.drain`) and hands each batch to its own ``EventHub``, which
sequences, logs and publishes it as for a local instance (docs/architecture.md, "Placement on a
Ray cluster").

Back-pressure: the queue holds at most ``max_events`` events. An ``emit`` that would pass the
bound waits (inside :func:`paddock.actors.blocking`, so the dispatcher lends another worker)
until the host has drained enough; nothing is dropped. A waiting emitter holds back its session
actor, whose reader then stops reading the agent's pipe, and the agent blocks on its own
output: the whole chain is bounded, end to end.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from paddock.actors import Redactor, blocking
from paddock.contract import ConfinementInfo, Event, EventBase, RuntimeWarningEvent, Session

__all__ = ["Batch", "NodeEmitter", "NodeSink", "Pulled", "decode_pulled", "encode_pulled"]


class Batch(msgspec.Struct, frozen=True, array_like=True):
    """One emitted batch with the identity its emitter was bound to."""

    driver: str
    thread_id: str
    events: list[Event]


class Pulled(msgspec.Struct, frozen=True, kw_only=True):
    """One pull's answer: the batches in emit order, and the node's live sessions then."""

    batches: list[Batch]
    sessions: list[Session]
    buffered: int = 0
    """Events still queued on the node after this pull (the host pulls again at once)."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Pulled)


def encode_pulled(pulled: Pulled) -> bytes:
    return _encoder.encode(pulled)


def decode_pulled(data: bytes) -> Pulled:
    return _decoder.decode(data)


class NodeEmitter:
    """The node's stand-in for :class:`paddock.actors.Emitter`: same ``emit`` contract, except
    that it waits while the node's queue is full (see the module docstring). Thread-safe."""

    __slots__ = ("_sink", "driver", "instance_id", "thread_id")

    def __init__(self, sink: NodeSink, driver: str, instance_id: str, thread_id: str) -> None:
        self._sink = sink
        self.driver = driver
        self.instance_id = instance_id
        self.thread_id = thread_id

    def emit(self, events: Sequence[EventBase]) -> None:
        """Queue ``events`` for the host (in order). Never raises."""
        self._sink.put(self.driver, self.thread_id, events)

    def __repr__(self) -> str:
        return f"<NodeEmitter {self.driver}/{self.instance_id}/{self.thread_id}>"


class NodeSink:
    """Masks and queues one instance's events on its node; the host drains them.

    Thread: ``emitter``/``instance_warning``/``put`` on any thread (session actors, readers);
    ``drain`` on the node actor's pull call. ``close`` releases waiting emitters (what they
    still hold is queued past the bound, so a close loses nothing either).
    """

    def __init__(self, instance_id: str, secrets: Iterable[str], *, max_events: int) -> None:
        self.instance_id = instance_id
        self._redactor = Redactor(secrets)
        self._max = max_events
        self._queue: deque[Batch] = deque()
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False
        self.waits = 0
        """How many emits waited for room (back-pressure reached the node)."""

    def emitter(self, driver: str, instance_id: str, thread_id: str, *,
                confinement: ConfinementInfo | None = None) -> NodeEmitter:
        """As ``HubHandle.emitter``; a placed instance's agents are not confined by this host, so
        ``confinement`` is not stamped."""
        return NodeEmitter(self, driver, instance_id, thread_id)

    def instance_warning(self, driver: str, instance_id: str, code: str, message: str,
                         detail: dict[str, Any] | None = None) -> None:
        self.put(driver, "", [RuntimeWarningEvent(
            driver=driver, instance_id=instance_id, thread_id="", code=code, message=message, detail=detail,
        )])

    def put(self, driver: str, thread_id: str, events: Sequence[EventBase]) -> None:
        if not events:
            return
        try:
            masked = list(self._redactor.redact(list(events)))
        except Exception:  # an event the redactor cannot walk: say so rather than pass it unmasked
            masked = [RuntimeWarningEvent(driver=driver, instance_id=self.instance_id, thread_id=thread_id,
                                          code="node.unmaskable", message="an event could not be masked and was withheld")]
        batch = Batch(driver, thread_id, masked)  # type: ignore[arg-type]  # EventBase subclasses of the union
        with self._cond:
            if self._count + len(masked) > self._max and self._count and not self._closed:
                self.waits += 1
                with blocking():
                    while self._count + len(masked) > self._max and self._count and not self._closed:
                        self._cond.wait(0.5)
            self._queue.append(batch)
            self._count += len(masked)
            self._cond.notify_all()

    def drain(self, max_events: int, wait: float) -> list[Batch]:
        """Up to about ``max_events`` events (whole batches, at least one), waiting up to ``wait``
        seconds for the first one."""
        with self._cond:
            if not self._queue and wait > 0:
                self._cond.wait_for(lambda: bool(self._queue) or self._closed, wait)
            out: list[Batch] = []
            taken = 0
            while self._queue and (not out or taken + len(self._queue[0].events) <= max_events):
                batch = self._queue.popleft()
                taken += len(batch.events)
                out.append(batch)
            self._count -= taken
            if out:
                self._cond.notify_all()
            return out

    def mask(self, text: str) -> str:
        """``text`` with the instance's secrets and the credential shapes masked."""
        return self._redactor.mask(text)

    @property
    def buffered(self) -> int:
        return self._count

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
