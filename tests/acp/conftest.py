"""Fixtures for driving ACP adapters end to end: the real EventHub, real agent processes."""

from __future__ import annotations

import os

import msgspec
import pytest

from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext
from tests.adapter_harness import AdapterHarness, etype, hub  # noqa: F401  (hub is a fixture)


class Harness(AdapterHarness):
    """One adapter instance plus helpers to drive turns and read the thread's events."""

    def __init__(self, tmp_path, hub, driver: str = "local", instance_id: str = "inst", **config) -> None:
        super().__init__()
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
