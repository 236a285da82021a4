"""Drive one driver adapter end to end through the real EventHub (shared by the driver tests)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import pytest

from paddock.actors import EventHub
from paddock.contract import SendTurnInput, StartSessionInput


def etype(event) -> str:
    return type(event).__struct_config__.tag


def text_of(events, turn_id: str | None = None) -> str:
    """The assistant text of ``events`` (of one turn when ``turn_id`` is given)."""
    return "".join(
        e.delta for e in events
        if etype(e) == "content.delta" and e.stream == "assistant_text" and (turn_id is None or e.turn_id == turn_id)
    )


def of_type(events, name: str) -> list:
    return [e for e in events if etype(e) == name]


def runtime_turn(rt, thread_id: str, text: str) -> list:
    """Send a turn through the Runtime ``rt`` and return its thread's events up to and including
    that turn's ``turn.completed`` (the live runtime tests; the test's timeout bounds the wait)."""
    events = rt.subscribe(thread_id=thread_id)
    try:
        turn = rt.send_turn(thread_id, text)
        out = []
        for event in events:
            out.append(event)
            if etype(event) == "turn.completed" and event.turn_id == turn.turn_id:
                return out
    finally:
        events.close()
    raise AssertionError("no turn.completed")


@contextlib.contextmanager
def closing_factory(build: Callable[..., "AdapterHarness"]) -> Iterator[Callable[..., "AdapterHarness"]]:
    """A factory over ``build`` that closes every harness it made when the block ends (the body
    of the driver tests' ``make`` fixtures)."""
    made: list[AdapterHarness] = []

    def factory(**kw) -> AdapterHarness:
        h = build(**kw)
        made.append(h)
        return h

    yield factory
    for h in made:
        h.close()


@pytest.fixture
def hub():
    """The real EventHub; at the end, the test fails if its grammar guard had to repair anything
    the adapter emitted (every grammar repair is a ``runtime.warning`` coded ``grammar.*``)."""
    handle = EventHub.start(None)
    warnings = handle.subscribe(types=("runtime.warning",))
    yield handle
    handle.flush(timeout=10)
    repaired = []
    while (ev := warnings.get(timeout=0)) is not None:
        if ev.code.startswith("grammar."):
            repaired.append((ev.code, ev.message))
    handle.close()
    assert not repaired, f"the grammar guard repaired events: {repaired}"


class AdapterHarness:
    """Turn helpers over ``self.adapter`` (built by the subclass) and one hub subscription per
    thread. Subclasses set ``hub``, ``cwd``, ``adapter``, and may change the timeouts."""

    start_timeout = 30.0
    event_timeout = 20.0
    close_timeout = 10.0

    def __init__(self) -> None:
        self.subs: dict = {}

    def start(self, thread_id: str = "t1", **kw):
        if thread_id not in self.subs:
            self.subs[thread_id] = self.hub.subscribe(thread_id=thread_id)
        kw.setdefault("cwd", str(self.cwd))
        return self.adapter.start_session(StartSessionInput(thread_id=thread_id, **kw), timeout=self.start_timeout)

    def send(self, text: str, thread_id: str = "t1", **kw):
        return self.adapter.send_turn(SendTurnInput(thread_id=thread_id, text=text, **kw), timeout=30)

    def events_until(self, pred, thread_id: str = "t1", timeout: float | None = None) -> list:
        sub = self.subs[thread_id]
        out = []
        deadline = time.monotonic() + (timeout if timeout is not None else self.event_timeout)
        while True:
            ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
            if ev is None:
                raise AssertionError(f"timed out; got {[etype(e) for e in out][-30:]}")
            out.append(ev)
            if pred(ev):
                return out

    def turn(self, text: str, thread_id: str = "t1", **kw) -> tuple:
        res = self.send(text, thread_id, **kw)
        evs = self.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id, thread_id)
        return res, evs

    def close(self) -> None:
        self.adapter.close(timeout=self.close_timeout)
        for sub in self.subs.values():
            sub.close()
