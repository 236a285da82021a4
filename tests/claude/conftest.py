"""Fixtures for driving the claude adapter end to end: the real EventHub, the pinned Claude Code
CLI against the scripted model server, offline."""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import msgspec
import pytest

from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext
from paddock.testing import build_offline_env
from tests.adapter_harness import AdapterHarness, closing_factory, etype, hub  # noqa: F401  (hub is a fixture)
from tests.adapter_harness import of_type, text_of  # noqa: F401  (re-exported for this folder's tests)
from tests.live.conftest import model_server, require_peer, tripwire, workspace  # noqa: F401  (fixtures)


FAKE_CLAUDE = Path(__file__).with_name("fake_claude.py")


class Harness(AdapterHarness):
    """One claude adapter instance plus helpers to drive turns: on the offline env against the
    pinned CLI (``model_server`` given), or on the scripted fake CLI (``fake_claude.py``)."""

    start_timeout = 60.0
    event_timeout = 30.0
    close_timeout = 15.0

    def __init__(self, tmp_path, hub, model_server=None, tripwire=None, instance_id: str = "claude-test",
                 drop_env: tuple[str, ...] = (), **config) -> None:
        super().__init__()
        self.hub = hub
        spec = BUILT_IN_DRIVERS["claude"]
        self.home = tmp_path / f"home-{instance_id}"
        self.home.mkdir(exist_ok=True)
        self.cwd = tmp_path / "workspace"
        self.cwd.mkdir(exist_ok=True)
        if model_server is not None:
            _, argv = require_peer("claude")
            self.offline = build_offline_env("claude", tmp_path / f"env-{instance_id}", model_url=model_server.url,
                                             proxy_url=tripwire.url if tripwire is not None else None)
            base = {"binary": argv[0], "model": self.offline.model}
            env = dict(self.offline.env)
        else:
            self.log = tmp_path / f"fake-{instance_id}.jsonl"
            base = {"binary": sys.executable, "args": [str(FAKE_CLAUDE), *config.pop("fake_args", ())]}
            env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(self.home), "LANG": "C.UTF-8",
                   "FAKE_CLAUDE_LOG": str(self.log)}
        cfg = msgspec.convert({"driver": "claude", **base, **config}, spec.config_type)
        env = {k: v for k, v in env.items() if k not in drop_env}
        self.ctx = InstanceContext(instance_id=instance_id, driver="claude", config=cfg, home=str(self.home),
                                   env=env, state_dir=str(tmp_path), hub=hub)
        self.adapter = spec.create(self.ctx)


@pytest.fixture
def make(tmp_path, hub, model_server, tripwire):
    with closing_factory(functools.partial(Harness, tmp_path, hub, model_server, tripwire)) as factory:
        yield factory


@pytest.fixture
def make_fake(tmp_path, hub):
    with closing_factory(functools.partial(Harness, tmp_path, hub)) as factory:
        yield factory


def host_lines(h: Harness) -> list[dict]:
    """What the adapter wrote to the fake CLI's stdin."""
    if not h.log.exists():
        return []
    return [json.loads(line) for line in h.log.read_text().splitlines()]


def fake_starts(h: Harness) -> list[dict]:
    """Each start of the fake CLI: its ``argv`` (after the script), ``cwd``, ``env`` and ``pid``."""
    path = Path(str(h.log) + ".argv")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
