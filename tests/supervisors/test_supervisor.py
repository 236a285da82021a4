"""OTP semantics of Supervisor and Scope, with real child processes."""

from __future__ import annotations

import os
import signal
import threading
import time

import psutil
import pykka
import pytest

from paddock.actors import JsonRpcConnection, ProcessActor, ProcessHandle, ProcessSpec
from paddock.contract import ValidationError, ProcessError
from paddock.supervisors import (
    ChildContext,
    ChildSpec,
    RestartLimitExceeded,
    Scope,
    SupervisedActor,
    Supervisor,
)
from tests.helpers import SLEEP, helper

FAST = dict(backoff_base=0.0, backoff_jitter=0.0)


class Tracker:
    """Start factories for process children that record every start, handle and exit."""

    def __init__(self) -> None:
        self.handles: dict[str, ProcessHandle] = {}
        self.starts: list[str] = []
        self.exits: list[str] = []
        self.cond = threading.Condition()

    def spec(self, child_id: str, restart: str = "permanent", argv=None, **kw) -> ChildSpec:
        def start(ctx: ChildContext) -> pykka.ActorRef:
            handle = ProcessActor.open(
                ProcessSpec(
                    argv=argv or (SLEEP, "777"),
                    name=child_id,
                    shutdown_timeout=2.0,
                    graceful_timeout=0.05,
                ),
                on_lines=lambda lines: None,
                on_exit=lambda info: self._exited(child_id),
                context=ctx,
            )
            with self.cond:
                self.handles[child_id] = handle
                self.starts.append(child_id)
                self.cond.notify_all()
            return handle.actor_ref

        return ChildSpec(child_id, start, restart=restart, **kw)  # type: ignore[arg-type]

    def _exited(self, child_id: str) -> None:
        with self.cond:
            self.exits.append(child_id)
            self.cond.notify_all()

    def pids(self) -> dict[str, int]:
        return {k: h.pid for k, h in self.handles.items()}  # type: ignore[misc]

    def wait_starts(self, count: int, timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.starts) >= count, timeout), self.starts

    def wait_exits(self, count: int, timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.exits) >= count, timeout), self.exits

    def crash(self, child_id: str) -> None:
        os.kill(self.handles[child_id].pid, signal.SIGKILL)  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def pids_running(arg: str) -> list[int]:
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if arg in proc.cmdline():
                found.append(proc.pid)
        except psutil.Error:
            pass
    return found


def restart_case(strategy: str) -> tuple[list[str], set[str]]:
    t = Tracker()
    specs = [t.spec("a"), t.spec("b"), t.spec("c")]
    with Scope(specs, strategy=strategy, **FAST) as scope:  # type: ignore[arg-type]
        assert t.starts == ["a", "b", "c"]
        before = t.pids()
        t.crash("b")
        expected = {"one_for_one": 4, "one_for_all": 6, "rest_for_one": 5}[strategy]
        t.wait_starts(expected)
        restarted_order = t.starts[3:]
        after = t.pids()
        assert [c.state for c in scope.which_children()] == ["running"] * 3
        changed = {k for k in before if before[k] != after[k]}
    return restarted_order, changed


def test_one_for_one_restarts_only_the_failed_child():
    assert restart_case("one_for_one") == (["b"], {"b"})


def test_one_for_all_restarts_every_child_in_start_order():
    assert restart_case("one_for_all") == (["a", "b", "c"], {"a", "b", "c"})


def test_rest_for_one_restarts_the_child_and_those_started_after_it():
    assert restart_case("rest_for_one") == (["b", "c"], {"b", "c"})


def test_children_stop_in_reverse_start_order():
    t = Tracker()
    with Scope([t.spec("a"), t.spec("b"), t.spec("c")], **FAST):
        pass
    assert t.exits == ["c", "b", "a"]
    assert not any(alive(pid) for pid in t.pids().values())


def test_transient_restarts_only_after_an_abnormal_exit():
    t = Tracker()
    decisions: list[tuple[str, str, bool]] = []

    def on_child_exit(child_id, reason, restarting):
        decisions.append((child_id, reason.kind, restarting))

    specs = [t.spec("tr", "transient", argv=helper("lines"))]
    with Scope(specs, on_child_exit=on_child_exit, **FAST) as scope:
        t.crash("tr")
        t.wait_starts(2)
        t.handles["tr"].write_lines([b"exit 0"])
        t.wait_exits(2)
        [info] = _wait_for(scope.which_children, lambda cs: cs[0].state == "stopped")
        assert info.state == "stopped" and info.ref is None
        assert t.starts == ["tr", "tr"]
    assert decisions == [("tr", "error", True), ("tr", "normal", False)]


def test_temporary_is_never_restarted_and_is_forgotten():
    t = Tracker()
    with Scope([t.spec("tmp", "temporary"), t.spec("perm")], **FAST) as scope:
        t.crash("tmp")
        t.wait_exits(1)
        assert [c.id for c in _wait_for(lambda: scope.which_children(), lambda cs: len(cs) == 1)] == ["perm"]
        assert t.starts == ["tmp", "perm"]


def _wait_for(get, predicate, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = get()
        if predicate(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.01)


def test_temporary_sibling_stopped_by_one_for_all_is_not_restarted():
    t = Tracker()
    with Scope([t.spec("tmp", "temporary"), t.spec("b")], strategy="one_for_all", **FAST) as scope:
        t.crash("b")
        t.wait_starts(3)
        assert t.starts == ["tmp", "b", "b"]
        assert [c.id for c in scope.which_children()] == ["b"]


def test_exceeding_the_restart_intensity_escalates_and_stops_everything():
    t = Tracker()
    escalated: list[BaseException] = []
    scope = Scope(
        [t.spec("a"), t.spec("flaky")],
        max_restarts=2,
        period=60.0,
        on_escalate=escalated.append,
        **FAST,
    )
    with scope:
        for n in range(2):
            t.crash("flaky")
            t.wait_starts(3 + n)
        pids = t.pids()
        t.crash("flaky")
        reason = scope._ctx.wait_exit(10.0)  # type: ignore[union-attr]
    assert reason is not None and reason.abnormal
    assert isinstance(reason.error, RestartLimitExceeded)
    assert escalated == [reason.error]
    assert "'flaky' needed more than 2 restarts within 60 s" in str(reason.error)
    assert "its last error: 'flaky' exited (killed by signal 9)" in str(reason.error)
    assert not any(alive(pid) for pid in pids.values())


def test_a_child_supervisor_escalates_to_its_parent_which_restarts_it():
    t = Tracker()

    def inner(ctx: ChildContext) -> pykka.ActorRef:
        return Supervisor.start([t.spec("leaf")], max_restarts=0, name="inner", context=ctx, **FAST)

    with Scope([ChildSpec("inner", inner), t.spec("sibling")], **FAST) as scope:
        first = t.pids()["leaf"]
        t.crash("leaf")  # inner gives up at once and fails upward; the root restarts inner
        t.wait_starts(3)
        assert t.starts == ["leaf", "sibling", "leaf"]
        assert t.pids()["leaf"] != first and alive(t.pids()["sibling"])
        assert [c.state for c in scope.which_children()] == ["running", "running"]


def test_backoff_delays_the_restart():
    t = Tracker()
    with Scope([t.spec("a")], backoff_base=0.3, backoff_jitter=0.0):
        crashed_at = time.monotonic()
        t.crash("a")
        t.wait_starts(2)
        assert time.monotonic() - crashed_at >= 0.3


def test_failed_start_of_missing_binary_unwinds_started_siblings():
    t = Tracker()
    specs = [t.spec("a"), t.spec("b"), t.spec("agent", argv=("no-such-agent-binary",))]
    with pytest.raises(ProcessError) as caught:
        Scope(specs, **FAST).start()
    assert "no-such-agent-binary" in str(caught.value)
    assert t.exits == ["b", "a"]
    assert not any(alive(pid) for pid in t.pids().values())


class Handshaking(SupervisedActor):
    """Starts a JSON-RPC child and performs a handshake in on_start."""

    def __init__(self, method: str, *, context: ChildContext) -> None:
        super().__init__(context=context)
        self.method = method

    def on_start(self) -> None:
        spec = ProcessSpec(argv=helper("jsonrpc_peer"), name="fake-agent")
        self.conn = JsonRpcConnection.open(spec)
        self.conn.request(self.method).result(10)

    def on_terminate(self, reason) -> None:
        self.conn.close(timeout=1.0)


def test_crash_during_handshake_unwinds_siblings_and_shows_command_and_stderr():
    t = Tracker()
    specs = [
        t.spec("a"),
        ChildSpec("session", lambda ctx: Handshaking.start("crash", context=ctx)),
        t.spec("never"),
    ]
    with pytest.raises(ProcessError) as caught:
        Scope(specs, **FAST).start()
    err = caught.value
    assert "'fake-agent' exited before answering 'crash'" in str(err)
    assert err.exit_code == 3
    assert "fatal: the peer crashed on purpose" in str(err)
    assert t.starts == ["a"] and t.exits == ["a"]


def test_dynamic_children():
    t = Tracker()
    with Scope([t.spec("a")], **FAST) as scope:
        scope.start_child(t.spec("s1", "transient"))
        scope.start_child(t.spec("s2", "transient"))
        assert [c.id for c in scope.which_children()] == ["a", "s1", "s2"]
        with pytest.raises(ValidationError, match="already has a child 's1'"):
            scope.start_child(t.spec("s1"))
        assert scope.terminate_child("s1") is True
        assert scope.terminate_child("nope") is False
        assert [c.id for c in scope.which_children()] == ["a", "s2"]
        assert not alive(t.pids()["s1"])
        with pytest.raises(ProcessError):
            scope.start_child(t.spec("bad", argv=("no-such-agent-binary",)))
        assert [c.id for c in scope.which_children()] == ["a", "s2"]
    assert t.exits == ["s1", "s2", "a"]


class Crasher(SupervisedActor):
    def __init__(self, *, context: ChildContext) -> None:
        super().__init__(context=context)
        self.handled = 0

    def on_receive(self, message):
        if message == "exit":
            raise SystemExit(3)  # pykka alone would stop every actor in the process
        if message == "slow":
            self.handled += 1
            time.sleep(0.05)
        return None


def test_base_exception_in_an_actor_is_contained_and_restarted():
    starts: list[pykka.ActorRef] = []

    def start(ctx):
        ref = Crasher.start(context=ctx)
        starts.append(ref)
        return ref

    t = Tracker()
    with Scope([ChildSpec("crasher", start), t.spec("bystander")], **FAST):
        starts[0].tell("exit")
        deadline = time.monotonic() + 10
        while len(starts) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(starts) == 2
        assert alive(t.pids()["bystander"]) and starts[1].is_alive()


def test_close_overtakes_queued_messages():
    refs: list[pykka.ActorRef] = []

    def start(ctx):
        refs.append(Crasher.start(context=ctx))
        return refs[-1]

    scope = Scope([ChildSpec("busy", start, shutdown=1.0)], **FAST).start()
    actor = refs[0]._actor_weakref()
    for _ in range(200):
        refs[0].tell("slow")
    scope.close(timeout=5.0)
    assert not refs[0].is_alive()
    assert actor is not None and actor.handled < 50


def test_close_during_a_slow_start_kills_the_starting_child():
    t = Tracker()

    def slow(ctx):
        # startup_grace keeps on_start (and so the supervisor) busy while the child runs.
        spec = ProcessSpec(argv=(SLEEP, "888"), name="slow", startup_grace=30.0)
        return ProcessActor.start(spec, on_lines=lambda lines: None, context=ctx)

    scope = Scope([t.spec("a"), ChildSpec("slow", slow)], **FAST)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            scope.start()
        except BaseException as exc:
            errors.append(exc)

    starter = threading.Thread(target=run)
    starter.start()
    t.wait_starts(1)
    slow_pids = _wait_for(lambda: pids_running("888"), bool)
    assert slow_pids
    scope.close(timeout=0.5)
    starter.join(10)
    assert not starter.is_alive() and len(errors) == 1
    assert not any(alive(pid) for pid in [*slow_pids, *t.pids().values()])


def test_a_child_that_keeps_dying_at_start_up_escalates_with_its_stderr():
    t = Tracker()
    escalated: list[BaseException] = []
    scope = Scope(
        [t.spec("agent", argv=helper("die_at_start"))],
        max_restarts=2,
        on_escalate=escalated.append,
        **FAST,
    )
    scope.start()
    try:
        reason = scope._ctx.wait_exit(10.0)  # type: ignore[union-attr]
    finally:
        scope.close(timeout=2.0)
    assert reason is not None and isinstance(reason.error, RestartLimitExceeded)
    assert t.starts == ["agent"] * 3
    text = str(reason.error)
    assert "'agent' exited (exit code 2)" in text
    assert "config file /nonexistent/agent.toml not found" in text


def test_closing_the_scope_from_a_supervisor_callback_does_not_deadlock():
    t = Tracker()
    holder: list[Scope] = []
    scope = Scope(
        [t.spec("a"), t.spec("b")],
        on_child_exit=lambda child_id, reason, restarting: holder[0].close(timeout=2.0),
        **FAST,
    )
    holder.append(scope)
    scope.start()
    t.crash("a")
    reason = scope._ctx.wait_exit(10.0)  # type: ignore[union-attr]
    assert reason is not None and reason.kind == "shutdown"
    scope.close()
    assert not any(alive(pid) for pid in t.pids().values())
