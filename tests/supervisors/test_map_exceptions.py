"""map_exceptions: pykka's failures of an ask become the PaddockError family, once."""

from __future__ import annotations

import threading

import pykka
import pytest

from paddock.contract import OperationTimeout, SessionClosedError
from paddock.supervisors import map_exceptions


class _Slow(pykka.ThreadingActor):
    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.release = release

    def on_receive(self, message):
        self.release.wait(10)
        return message


@pytest.fixture
def slow():
    release = threading.Event()
    ref = _Slow.start(release)
    yield ref
    release.set()
    ref.stop()


def test_a_timed_out_ask_is_an_operation_timeout_naming_where(slow):
    with pytest.raises(OperationTimeout) as info:
        with map_exceptions("send_turn", 0.05, where={"driver": "d", "instance_id": "i", "thread_id": "t"}):
            slow.ask("hi", timeout=0.05)
    err = info.value
    assert err.operation == "send_turn" and err.seconds == 0.05
    assert (err.driver, err.instance_id, err.thread_id) == ("d", "i", "t") and err.__suppress_context__


def test_a_dead_actor_is_what_the_caller_says_it_means():
    ref = _Slow.start(threading.Event())
    ref.stop()
    with pytest.raises(SessionClosedError):
        with map_exceptions("send_turn", 1.0, dead=SessionClosedError("t")):
            ref.ask("hi", timeout=1.0)
    with pytest.raises(pykka.ActorDeadError):  # no meaning given: it propagates (a caller that retries)
        with map_exceptions("send_turn", 1.0):
            ref.ask("hi", timeout=1.0)


def test_other_exceptions_and_results_pass_through(slow):
    with pytest.raises(KeyError):
        with map_exceptions("op", 1.0):
            raise KeyError("x")
    with map_exceptions("op", 1.0):
        value = 42
    assert value == 42
