"""A log the disk refuses (SQLite's SQLITE_FULL, as on a full disk): the hub holds the events in
memory, in order, says so, and writes them when the disk allows. Nothing lost, nothing shown
before it is logged, nothing twice."""

from __future__ import annotations

import time

import pytest

from paddock.actors import EventHub
from paddock.contract import PersistenceError, RuntimeErrorEvent

from .conftest import delta, drain, turn_completed, turn_started
from .test_hub import logged
from tests.helpers import until



def test_a_turn_end_the_disk_refuses_is_held_and_written_when_the_disk_allows(log_path):
    with EventHub.start(log_path) as hub:
        sub = hub.subscribe()
        emitter = hub.emitter("local", "loc", "t1")
        emitter.emit([turn_started("u1")])
        hub.flush()
        hub.limit_log_pages(0)  # the database may not grow: the next pages are refused
        emitter.emit([delta("u1", None, "x" * 200) for _ in range(100)])
        emitter.emit([turn_completed("u1")])
        until(lambda: hub.refused is not None, timeout=10.0)
        assert "database or disk is full" in hub.refused
        with pytest.raises(PersistenceError, match="disk is full"):
            hub.flush(timeout=5)
        assert [e.type for e in drain(sub)] == ["turn.started"]  # nothing shown before it is logged

        hub.limit_log_pages(None)  # the disk has room again
        shown = drain(sub)
        while not any(isinstance(e, RuntimeErrorEvent) for e in shown):
            event = sub.get(timeout=10)
            assert event is not None, [e.type for e in shown]
            shown.append(event)
        assert hub.refused is None
        hub.flush()
        shown += drain(sub)

    types = [e.type for e in shown]
    assert types == ["content.delta"] * 100 + ["turn.completed", "runtime.error"], types
    error = shown[-1]
    assert error.code == "event_log.write_refused" and "database or disk is full" in error.message
    assert (error.driver, error.instance_id, error.thread_id) == ("local", "loc", "t1")
    rows = logged(log_path)
    assert [r[0] for r in rows] == list(range(1, len(shown) + 2))  # every event once, in order
    assert [r[3] for r in rows] == ["turn.started", *types]


def test_closing_while_the_disk_refuses_gives_up_the_held_events_and_returns(log_path):
    hub = EventHub.start(log_path)
    emitter = hub.emitter("local", "loc", "t1")
    emitter.emit([turn_started("u1")])
    hub.flush()
    hub.limit_log_pages(0)
    emitter.emit([delta("u1", None, "y" * 200) for _ in range(100)])
    until(lambda: hub.refused is not None, timeout=10.0)
    started = time.monotonic()
    hub.close(timeout=5)
    assert time.monotonic() - started < 2.0 and not hub.alive
    assert [r[3] for r in logged(log_path)] == ["turn.started"]
    with EventHub.start(log_path) as again:  # seq continues after the last committed event
        again.emitter("local", "loc", "t1").emit([turn_completed("u1")])
        assert again.flush() == 2
