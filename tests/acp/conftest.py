"""Fixtures for driving ACP adapters end to end: the real EventHub, real agent processes."""

from __future__ import annotations

import os
import time

import msgspec
import pytest

from actors import EventHub
from drivers import BUILT_IN_DRIVERS, InstanceContext
from runtime.contract import SendTurnInput, StartSessionInput


def etype(event) -> str:
    return type(event).__struct_config__.tag


@pytest.fixture
def hub():
    """The real EventHub; at the end, the test fails if its grammar guard had to repair anything
    this adapter emitted (every grammar repair is a ``runtime.warning`` coded ``grammar.*``)."""
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


class Harness:
    """One adapter instance plus helpers to drive turns and read the thread's events."""

    def __init__(self, tmp_path, hub, driver: str = "local", instance_id: str = "inst", **config) -> None:
        self.hub = hub
        self.tmp_path = tmp_path
        spec = BUILT_IN_DRIVERS[driver]
        self.home = tmp_path / f"home-{instance_id}"
        self.home.mkdir(exist_ok=True)
        self.cwd = tmp_path / "ws"
        self.cwd.mkdir(exist_ok=True)
        cfg = msgspec.convert({"driver": driver, **config}, spec.config_type)
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(self.home), "LANG": "C.UTF-8"}
        env.update(config.get("env", {}))
        self.ctx = InstanceContext(
            instance_id=instance_id, driver=driver, config=cfg, home=str(self.home), env=env,
            state_dir=str(tmp_path), hub=hub,
        )
        self.adapter = spec.create(self.ctx)
        self.subs: dict = {}

    def start(self, thread_id: str = "t1", **kw):
        if thread_id not in self.subs:
            self.subs[thread_id] = self.hub.subscribe(thread_id=thread_id)
        kw.setdefault("cwd", str(self.cwd))
        return self.adapter.start_session(StartSessionInput(thread_id=thread_id, **kw), timeout=30)

    def send(self, text: str, thread_id: str = "t1", **kw):
        return self.adapter.send_turn(SendTurnInput(thread_id=thread_id, text=text, **kw), timeout=30)

    def events_until(self, pred, thread_id: str = "t1", timeout: float = 20.0) -> list:
        sub = self.subs[thread_id]
        out = []
        deadline = time.monotonic() + timeout
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
        self.adapter.close(timeout=10)
        for sub in self.subs.values():
            sub.close()


@pytest.fixture
def make(tmp_path, hub):
    made = []

    def factory(**kw) -> Harness:
        h = Harness(tmp_path, hub, **kw)
        made.append(h)
        return h

    yield factory
    for h in made:
        h.close()


def text_of(events, turn_id: str | None = None) -> str:
    return "".join(
        e.delta for e in events
        if etype(e) == "content.delta" and e.stream == "assistant_text" and (turn_id is None or e.turn_id == turn_id)
    )
