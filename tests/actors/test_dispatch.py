"""DispatchActor and Dispatcher: pykka semantics on a shared, bounded, elastic worker pool."""

from __future__ import annotations

import threading
import time
from typing import Any

import pykka
import pytest

from paddock.actors import DispatchActor, Dispatcher, SupervisedDispatchActor, blocking
from paddock.supervisors import ChildContext, ChildSpec, ExitReason, Scope, tell_urgent

FAST = dict(backoff_base=0.0, backoff_jitter=0.0)


def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def make_actor_class(dispatcher: Dispatcher):
    class Recorder(DispatchActor):
        pass

    Recorder.dispatcher = dispatcher

    class Echo(Recorder):
        def __init__(self, log: list | None = None) -> None:
            super().__init__()
            self.log = log if log is not None else []
            self.inside = 0
            self.overlaps = 0
            self.threads: set[int] = set()
            self.log.append(("init", threading.get_ident()))

        def on_start(self) -> None:
            self.log.append(("start", threading.get_ident()))

        def on_stop(self) -> None:
            self.log.append(("stop", threading.get_ident()))

        def on_failure(self, exc_type, exc_value, tb) -> None:
            self.log.append(("failure", repr(exc_value)))

        def on_receive(self, message: Any) -> Any:
            self.inside += 1
            if self.inside > 1:
                self.overlaps += 1
            self.threads.add(threading.get_ident())
            try:
                if message == "boom":
                    raise ValueError("boom")
                if isinstance(message, tuple) and message[0] == "wait":
                    event = message[1]
                    if message[2]:
                        with blocking():
                            event.wait(10)
                    else:
                        event.wait(10)  # an undeclared wait: the monitor must notice it
                    return "waited"
                self.log.append(("msg", message))
                return message
            finally:
                self.inside -= 1

        def add(self, a: int, b: int) -> int:
            return a + b

    return Echo


@pytest.fixture
def pool():
    return Dispatcher("test-dispatch", workers=2, stall=0.05, keepalive=0.2)


def test_tell_ask_proxy_and_stop_keep_pykka_semantics(pool):
    Echo = make_actor_class(pool)
    log: list = []
    caller = threading.get_ident()
    ref = Echo.start(log)
    ref.tell("a")
    assert ref.ask("b", timeout=5) == "b"
    assert ref.proxy().add(2, 3).get(timeout=5) == 5
    assert ref.proxy().inside.get(timeout=5) == 0
    assert ref.stop(timeout=5) is True
    assert not ref.is_alive()
    kinds = [entry[0] for entry in log]
    assert kinds == ["init", "start", "msg", "msg", "stop"]
    assert log[0][1] == caller  # __init__ on the caller, the hooks on a worker
    assert log[1][1] != caller and log[-1][1] != caller
    with pytest.raises(pykka.ActorDeadError):
        ref.ask("late", timeout=1)
    with pytest.raises(pykka.ActorDeadError):
        ref.tell("late")


def test_messages_are_handled_one_at_a_time_in_order_per_sender(pool):
    Echo = make_actor_class(pool)
    refs = [Echo.start() for _ in range(20)]
    senders = []

    def send(n: int) -> None:
        for i in range(300):
            for ref in refs:
                ref.tell((n, i))

    for n in range(4):
        senders.append(threading.Thread(target=send, args=(n,)))
    for t in senders:
        t.start()
    for t in senders:
        t.join()
    for ref in refs:
        ref.ask("sync", timeout=10)
        actor = ref._actor_weakref()
        assert actor is not None
        assert actor.overlaps == 0
        seen = [m for kind, m in actor.log if kind == "msg" and isinstance(m, tuple)]
        assert len(seen) == 4 * 300
        for n in range(4):
            assert [i for s, i in seen if s == n] == list(range(300))
        ref.stop(timeout=5)


def test_many_actors_share_few_threads():
    # A monitor too slow to fire: on a loaded machine a descheduled slice would look stalled.
    pool = Dispatcher("test-many", workers=2, stall=30.0)
    Echo = make_actor_class(pool)
    before = threading.active_count()
    refs = [Echo.start() for _ in range(2000)]
    futures = [ref.ask("x", block=False) for ref in refs]
    assert [f.get(timeout=30) for f in futures] == ["x"] * 2000
    assert pool.actors == 2000
    assert pool.peak_threads == 2
    assert threading.active_count() - before <= 4  # the workers and the monitor
    for ref in refs:
        ref.stop(block=False)
    assert wait_for(lambda: pool.actors == 0, 10)


def test_an_exception_is_returned_to_the_asker_and_on_failure_runs_for_a_tell(pool):
    Echo = make_actor_class(pool)
    log: list = []
    ref = Echo.start(log)
    with pytest.raises(ValueError, match="boom"):
        ref.ask("boom", timeout=5)
    assert ref.ask("still", timeout=5) == "still"  # an ask's exception does not stop it
    ref.tell("boom")
    assert wait_for(lambda: not ref.is_alive())
    assert ("failure", "ValueError('boom')") in log
    assert not [entry for entry in log if entry[0] == "stop"]  # pykka: no on_stop after a failure


def test_a_failed_on_start_stops_the_actor_and_answers_queued_asks_dead(pool):
    class Broken(DispatchActor):
        dispatcher = pool

        def on_start(self) -> None:
            raise RuntimeError("no start")

        def on_receive(self, message):
            return message

    ref = Broken.start()
    future = ref.ask("x", block=False)
    with pytest.raises(pykka.ActorDeadError):
        future.get(timeout=5)
    assert not ref.is_alive()


def test_queued_messages_are_answered_dead_when_the_actor_stops(pool):
    Echo = make_actor_class(pool)
    gate = threading.Event()
    ref = Echo.start()
    first = ref.ask(("wait", gate, True), block=False)
    ref.tell(pykka.messages._ActorStop())
    queued = ref.ask("never", block=False)
    gate.set()
    assert first.get(timeout=5) == "waited"
    with pytest.raises(pykka.ActorDeadError):
        queued.get(timeout=5)


def test_ask_timeout_raises_timeout(pool):
    Echo = make_actor_class(pool)
    gate = threading.Event()
    ref = Echo.start()
    ref.tell(("wait", gate, True))
    with pytest.raises(pykka.Timeout):
        ref.ask("x", timeout=0.1)
    gate.set()
    assert ref.ask("y", timeout=5) == "y"
    ref.stop(timeout=5)


@pytest.mark.parametrize("declared", [True, False], ids=["blocking()", "undeclared"])
def test_a_blocked_handler_does_not_delay_other_actors(declared):
    # One worker only: without compensation the second actor could never run.
    pool = Dispatcher("test-one", workers=1, stall=0.05, keepalive=0.2)
    Echo = make_actor_class(pool)
    stuck, other = Echo.start(), Echo.start()
    gate = threading.Event()
    try:
        stuck.tell(("wait", gate, declared))
        assert wait_for(lambda: stuck._actor_weakref().inside == 1)
        t0 = time.monotonic()
        assert other.ask("turn", timeout=5) == "turn"
        assert time.monotonic() - t0 < 2.0
        assert pool.threads <= 4  # the stuck one, its compensation (+1 for a slow slice under load)
    finally:
        gate.set()
    assert stuck.ask("after", timeout=5) == "after"
    # The compensating worker retires once it is idle past keepalive.
    assert wait_for(lambda: pool.threads == 1, 5)
    stuck.stop(timeout=5)
    other.stop(timeout=5)


def test_a_dispatched_ask_from_a_handler_is_a_declared_wait():
    pool = Dispatcher("test-ask", workers=1, stall=10.0)  # the monitor would be far too late
    Echo = make_actor_class(pool)

    class Asker(DispatchActor):
        dispatcher = pool

        def on_receive(self, message):
            return message.ask("inner", timeout=5)  # the target needs a worker too

    target = Echo.start()
    asker = Asker.start()
    assert asker.ask(target, timeout=5) == "inner"
    asker.stop(timeout=5)
    target.stop(timeout=5)


class Child(SupervisedDispatchActor):
    dispatcher = Dispatcher("test-supervised", workers=2, stall=0.05)

    def __init__(self, events: list, *, context: ChildContext) -> None:
        super().__init__(context=context)
        self.events = events
        self.handled = 0

    def on_start(self) -> None:
        if self.events and self.events[-1] == "fail-next-start":
            self.events.append("start-failed")
            raise RuntimeError("start failed")
        self.events.append("start")

    def on_shutdown(self, deadline: float) -> None:
        self.events.append("shutdown")

    def on_terminate(self, reason: ExitReason) -> None:
        self.events.append(("terminate", reason.kind))

    def on_receive(self, message):
        if message == "crash":
            raise SystemExit(1)  # contained, reported as an error: the supervisor restarts it
        if message == "slow":
            self.handled += 1
            time.sleep(0.02)
        return message


def test_supervised_dispatch_actor_restarts_and_reports_every_exit_once():
    events: list = []
    refs: list[pykka.ActorRef] = []

    def start(ctx):
        refs.append(Child.start(events, context=ctx))
        return refs[-1]

    with Scope([ChildSpec("child", start)], **FAST):
        assert refs[0].ask("hi", timeout=5) == "hi"
        refs[0].tell("crash")
        assert wait_for(lambda: len(refs) == 2 and refs[1].is_alive())
        assert refs[1].ask("again", timeout=5) == "again"
    assert events == ["start", ("terminate", "error"), "start", "shutdown", ("terminate", "shutdown")]


def test_shutdown_overtakes_queued_messages_of_a_dispatched_actor():
    events: list = []
    refs: list[pykka.ActorRef] = []

    def start(ctx):
        refs.append(Child.start(events, context=ctx))
        return refs[-1]

    scope = Scope([ChildSpec("busy", start, shutdown=1.0)], **FAST).start()
    actor = refs[0]._actor_weakref()
    for _ in range(200):
        refs[0].tell("slow")
    scope.close(timeout=5.0)
    assert not refs[0].is_alive()
    assert actor is not None and actor.handled < 50
    assert events[-1] == ("terminate", "shutdown")


def test_a_failed_start_of_a_dispatched_child_is_its_start_error():
    events: list = ["fail-next-start"]
    scope = Scope([ChildSpec("child", lambda ctx: Child.start(events, context=ctx), start_timeout=5.0)], **FAST)
    with pytest.raises(RuntimeError, match="start failed"):
        scope.start()
    scope.close(timeout=2.0)
    assert events == ["fail-next-start", "start-failed", ("terminate", "error")]


def test_tell_urgent_puts_a_message_ahead_of_the_queue(pool):
    Echo = make_actor_class(pool)
    gate = threading.Event()
    log: list = []
    ref = Echo.start(log)
    ref.tell(("wait", gate, True))
    for i in range(5):
        ref.tell(i)
    assert tell_urgent(ref, "first")
    gate.set()
    ref.ask("sync", timeout=5)
    assert [m for kind, m in log if kind == "msg"] == ["first", 0, 1, 2, 3, 4, "sync"]
    ref.stop(timeout=5)


class Opener(DispatchActor):
    """Answers "open" only when "answer" arrives; stashes "use" until then."""

    dispatcher = Dispatcher("test-defer", workers=1)

    def __init__(self) -> None:
        super().__init__()
        self.pending = None
        self.order: list = []

    def on_receive(self, message):
        if message == "open":
            self.pending = self.defer_reply()
            return "ignored"
        if isinstance(message, tuple) and message[0] == "answer":
            reply, self.pending = self.pending, None
            if message[1] == "fail":
                reply.fail(ValueError("agent said no"))
            else:
                reply.set(message[1])
            self.unstash_all()
            return None
        if message == "defer-then-raise":
            self.defer_reply()
            raise KeyError("late")
        if self.pending is not None and isinstance(message, str) and message.startswith("use"):
            self.stash()
            return None
        self.order.append(message)
        return message


def test_a_deferred_reply_answers_later_and_stashed_messages_keep_their_order():
    ref = Opener.start()
    opened = ref.ask("open", block=False)
    used = [ref.ask(f"use{n}", block=False) for n in range(3)]
    assert ref.ask("other", timeout=5) == "other"  # not stashed: runs while the open waits
    with pytest.raises(pykka.Timeout):
        opened.get(timeout=0.05)
    ref.tell(("answer", "session-1"))
    assert opened.get(timeout=5) == "session-1"
    assert [f.get(timeout=5) for f in used] == ["use0", "use1", "use2"]
    assert ref._actor_weakref().order == ["other", "use0", "use1", "use2"]
    failing = ref.ask("open", block=False)
    ref.tell(("answer", "fail"))
    with pytest.raises(ValueError, match="agent said no"):
        failing.get(timeout=5)
    with pytest.raises(KeyError):
        ref.ask("defer-then-raise", timeout=5)
    ref.stop(timeout=5)


def test_open_deferred_replies_and_stashed_messages_are_answered_dead_at_stop():
    ref = Opener.start()
    opened = ref.ask("open", block=False)
    used = ref.ask("use", block=False)
    assert ref.ask("sync", timeout=5) == "sync"
    ref.stop(timeout=5)
    for future in (opened, used):
        with pytest.raises(pykka.ActorDeadError):
            future.get(timeout=5)
