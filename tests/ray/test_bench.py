"""``paddock bench ray`` at a tiny size on the test cluster prints one JSON document of the
documented shape (no timing is asserted: performance is the benchmark's business)."""

from __future__ import annotations

import argparse
import json

from paddock.cli import _bench
from tests.ray.conftest import require_ray

require_ray()


def test_bench_ray_shape(two_nodes, capsys):
    code = _bench.run(argparse.Namespace(name="ray", json=True, rest=[
        "--chunks", "100", "--rounds", "1", "--address", two_nodes.address]))
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["benchmark"] == "ray" and doc["sessions"] == 8
    for instance in ("local", "placed"):
        figures = doc[instance]
        assert figures["events_per_round"] >= 8 * 100
        assert figures["events_per_s"] > 0 and figures["cpu_per_100k"] > 0
        assert 0 < figures["send_turn_p50_ms"] <= figures["send_turn_p99_ms"]
    assert doc["placed_over_local"] > 0 and isinstance(doc["meets_targets"], bool)
