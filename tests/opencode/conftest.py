"""Fixtures for driving the opencode adapter end to end: the real EventHub, the pinned
``opencode serve`` against the scripted model server, offline."""

from __future__ import annotations

import functools

import msgspec
import pytest

pytest.importorskip("httpx", reason="the opencode driver needs agent-paddock[opencode]")

from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext, ModelAccess
from paddock.testing import MOCK_KEY, build_offline_env
from tests.adapter_harness import AdapterHarness, closing_factory, etype, hub  # noqa: F401  (hub is a fixture)
from tests.adapter_harness import of_type, text_of  # noqa: F401  (re-exported for this folder's tests)
from tests.live.conftest import model_server, require_peer, tripwire, workspace  # noqa: F401  (fixtures)


class Harness(AdapterHarness):
    """One opencode adapter instance on its own home and data dirs (spawned mode unless
    ``server_url`` is given), the model reached through the common keys."""

    start_timeout = 90.0
    event_timeout = 60.0
    close_timeout = 20.0

    def __init__(self, tmp_path, hub, model_server, tripwire=None, instance_id: str = "oc-test", tap=None,
                 **config) -> None:
        super().__init__()
        self.hub = hub
        spec = BUILT_IN_DRIVERS["opencode"]
        self.cwd = tmp_path / "workspace"
        self.cwd.mkdir(exist_ok=True)
        self.root = tmp_path / f"env-{instance_id}"
        self.offline = build_offline_env("opencode", self.root, model_url=model_server.url,
                                         proxy_url=tripwire.url if tripwire is not None else None)
        self.home = self.offline.home
        if "server_url" not in config:
            require_peer("opencode")
        cfg = msgspec.convert({"driver": "opencode", "endpoint": model_server.url, "model": "mock-model", **config},
                              spec.config_type)
        self.ctx = InstanceContext(instance_id=instance_id, driver="opencode", config=cfg, home=str(self.home),
                                   env=dict(self.offline.env), state_dir=str(tmp_path), hub=hub,
                                   access=ModelAccess(endpoint=model_server.url, api_key=MOCK_KEY, model="mock-model"))
        if tap is not None:
            from paddock.drivers.opencode import OpencodeAdapter

            self.adapter = OpencodeAdapter(self.ctx, tap=tap)
        else:
            self.adapter = spec.create(self.ctx)


@pytest.fixture
def make(tmp_path, hub, model_server, tripwire):
    with closing_factory(functools.partial(Harness, tmp_path, hub, model_server, tripwire)) as factory:
        yield factory
