"""``placement`` in the config, and a placed instance on a host without Ray (runs without the
``ray`` extra too: it never joins a cluster)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from paddock import Runtime
from paddock._instances._config import load_config
from paddock.contract import ConfigError, InstanceNotFoundError
from paddock.drivers.ray import RayPlacement


def test_placement_is_local_by_default_and_ray_merges_over_the_runtime_default():
    config = load_config({
        "runtime": {"ray": {"address": "ray://head:10001", "resources": {"agents": 1}}},
        "instances": {
            "here": {"driver": "local"},
            "also-here": {"driver": "local", "placement": "local"},
            "short": {"driver": "local", "placement": "ray"},
            "there": {"driver": "local", "placement": {"ray": {"label_selector": {"pool": "b"}, "host_silence": 5}}},
        },
    })
    by_id = {e.instance_id: e for e in config.instances}
    assert by_id["here"].placement is None and by_id["also-here"].placement is None
    assert "placement" not in by_id["also-here"].table  # the driver's schema never sees it
    assert by_id["short"].placement == RayPlacement(address="ray://head:10001", resources={"agents": 1})
    assert by_id["there"].placement == RayPlacement(address="ray://head:10001", resources={"agents": 1},
                                                    label_selector={"pool": "b"}, host_silence=5.0)


@pytest.mark.parametrize(("placement", "message"), [
    ("cloud", "key 'placement'"),
    ({"ray": {}, "k8s": {}}, "key 'placement'"),
    ({"ray": {"adress": "auto"}}, "placement.ray"),
    ({"ray": {"host_silence": 0.1}}, "host_silence"),
    ({"ray": {"resources": {"agents": -1}}}, "resources"),
])
def test_a_bad_placement_is_a_config_error_naming_the_key(placement, message):
    with pytest.raises(ConfigError, match=message):
        load_config({"instances": {"x": {"driver": "local", "placement": placement}}})


def test_without_ray_a_placed_instance_is_unavailable_saying_how_to_install_it(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    config = {"instances": {"placed": {"driver": "local", "placement": "ray"}, "here": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        infos = {i.id: i for i in rt.instances()}
        assert infos["here"].status == "available" and infos["here"].placement == "local"
        placed = infos["placed"]
        assert placed.status == "unavailable" and placed.placement == "ray"
        assert "pip install 'agent-paddock[ray]'" in placed.reason
        with pytest.raises(InstanceNotFoundError, match=r"agent-paddock\[ray\]"):
            rt.start_session("t1", instance="placed", cwd=tmp_path)
        [report] = [r for r in rt.diagnose() if r["id"] == "placed"]
        assert report["placement"] == "ray" and report["status"] == "unavailable"


UNREACHABLE_HOST = """
import sys, time
from paddock import Runtime
from paddock.contract import DriverError
config = {"instances": {"placed": {"driver": "local", "placement": {"ray": {"address": "127.0.0.1:1"}}}}}
with Runtime.open(config, state_dir=sys.argv[1]) as rt:
    started = time.monotonic()
    try:
        rt.start_session("t1", instance="placed", cwd=sys.argv[1])
    except DriverError as exc:
        print(f"{time.monotonic() - started:.1f} {exc}")
"""


def test_a_cluster_that_does_not_answer_fails_the_start_at_once_saying_where(tmp_path):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed: pip install 'agent-paddock[ray]'")
    done = subprocess.run([sys.executable, "-c", UNREACHABLE_HOST, str(tmp_path)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": os.getcwd()})
    seconds, _, message = done.stdout.strip().partition(" ")
    assert "nothing answers at 127.0.0.1:1" in message, done.stdout + done.stderr
    assert float(seconds) < 10
