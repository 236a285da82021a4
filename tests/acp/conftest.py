"""Fixtures for driving ACP adapters end to end: the real EventHub, real agent processes."""

from __future__ import annotations

import functools
import os

import msgspec
import pytest

from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext
from tests.adapter_harness import AdapterHarness, closing_factory, etype, hub  # noqa: F401  (hub is a fixture)
from tests.adapter_harness import of_type, text_of  # noqa: F401  (re-exported for this folder's tests)


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
    with closing_factory(functools.partial(Harness, tmp_path, hub)) as factory:
        yield factory
