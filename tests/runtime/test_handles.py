"""Handles that only a factory builds: constructing one directly is a TypeError naming the
factory; the factories still work, and Runtime.close takes its timeout by keyword only."""

from __future__ import annotations

from pathlib import Path

import pytest

from paddock import Runtime
from paddock.actors import Emitter, EventHub, HubHandle, Subscription


@pytest.mark.parametrize(("cls", "factory"), [
    (Runtime, "Runtime.open"),
    (HubHandle, "EventHub.start"),
    (Emitter, "HubHandle.emitter"),
    (Subscription, "HubHandle.subscribe"),
])
def test_direct_construction_names_the_factory(cls, factory):
    with pytest.raises(TypeError, match=factory.replace(".", r"\.")):
        cls()
    with pytest.raises(TypeError, match=factory.replace(".", r"\.")):
        cls(config=None, state_dir=Path("."))


def test_the_factories_build_them(tmp_path):
    hub = EventHub.start(None)
    try:
        assert isinstance(hub, HubHandle)
        assert isinstance(hub.emitter("d", "i", "t"), Emitter)
        with hub.subscribe() as sub:
            assert isinstance(sub, Subscription)
    finally:
        hub.close()
    rt = Runtime.open({"instances": {}}, state_dir=tmp_path / "state")
    try:
        assert isinstance(rt, Runtime)
        with pytest.raises(TypeError):
            rt.close(5.0)  # keyword-only, like every other timeout
    finally:
        rt.close(timeout=5.0)
