"""Fixtures for driving the codex adapter end to end: the real EventHub, the pinned Codex
app-server against the scripted model server, offline."""

from __future__ import annotations

import functools
from pathlib import Path

import msgspec
import pytest

import paddock.testing
from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext, model_access
from paddock.testing import MOCK_KEY, build_offline_env
from tests.adapter_harness import AdapterHarness, closing_factory, etype, hub  # noqa: F401  (hub is a fixture)
from tests.adapter_harness import of_type, text_of  # noqa: F401  (re-exported for this folder's tests)
from tests.live.conftest import model_server, require_peer, tripwire, workspace  # noqa: F401  (fixtures)

CATALOG = Path(paddock.testing.__file__).with_name("codex_model_catalog.json")


def offline_config(model_url: str) -> dict:
    """The instance keys that point Codex at the scripted model server (no retries, the test
    catalog so that apply_patch is offered)."""
    return {
        "endpoint": model_url,
        "api_key": MOCK_KEY,
        "model": "mock-model",
        "config": {
            "model_catalog_json": str(CATALOG),
            "model_providers": {"paddock": {"request_max_retries": 0, "stream_max_retries": 0,
                                            "stream_idle_timeout_ms": 20000}},
            "history": {"persistence": "none"},
            "features": {"shell_snapshot": False},
        },
    }


class Harness(AdapterHarness):
    """One codex adapter instance on the offline env, plus turn helpers."""

    start_timeout = 60.0
    event_timeout = 30.0
    close_timeout = 15.0

    def __init__(self, tmp_path: Path, hub, model_server, tripwire=None, instance_id: str = "codex-test",
                 binary: str | None = None, tap=None, env_root: Path | None = None, **config) -> None:
        super().__init__()
        self.hub = hub
        spec = BUILT_IN_DRIVERS["codex"]
        self.home = Path(config.pop("home", tmp_path / f"home-{instance_id}"))
        self.home.mkdir(parents=True, exist_ok=True)
        self.cwd = Path(config.pop("cwd", tmp_path / "workspace"))
        self.cwd.mkdir(exist_ok=True)
        if binary is None:
            require_peer("codex")
        offline = build_offline_env("codex", env_root or tmp_path / f"env-{instance_id}", model_url=model_server.url,
                                    proxy_url=tripwire.url if tripwire is not None else None)
        env = {k: v for k, v in offline.env.items() if k not in ("CODEX_HOME", "PADDOCK_MOCK_KEY")}
        table = {"driver": "codex", **offline_config(model_server.url), **config}
        if binary is not None:
            table["binary"] = binary
        if "home" not in table and config.get("shadow_home"):
            table["home"] = str(self.home)
        cfg = msgspec.convert(table, spec.config_type)
        self.ctx = InstanceContext(instance_id=instance_id, driver="codex", config=cfg, home=str(self.home),
                                   env=env, state_dir=str(tmp_path), hub=hub, access=model_access(cfg, {}))
        if tap is not None:
            from paddock.drivers.codex import CodexAdapter

            self.adapter = CodexAdapter(self.ctx, tap=tap)
        else:
            self.adapter = spec.create(self.ctx)


@pytest.fixture
def make(tmp_path, hub, model_server, tripwire):
    with closing_factory(functools.partial(Harness, tmp_path, hub, model_server, tripwire)) as factory:
        yield factory
