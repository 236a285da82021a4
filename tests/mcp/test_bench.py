"""``paddock bench mcp`` at a tiny size prints its one JSON document, every call reported."""

from __future__ import annotations

import argparse
import json

import pytest

from paddock.cli import _bench

pytest.importorskip("mcp", reason="the test MCP server needs the mcp SDK: pip install -e '.[test]'")


def test_mcp_bench_shape(capsys):
    code = _bench.run(argparse.Namespace(name="mcp", json=True, rest=["--calls", "5", "--rounds", "1", "--warmup", "1"]))
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["benchmark"] == "mcp"
    [r] = doc["per_round"]
    assert set(r) == {"direct", "relay", "relay_http"} and all(r[w]["calls"] == 5 for w in r)
    assert r["relay"]["calls_reported"] == 6 and r["relay_http"]["calls_reported"] == 6
    assert doc["meets_targets"]["every_call_reported"] is True
    assert set(doc["added"]) == {"relay", "relay_http"}
