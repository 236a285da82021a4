"""The network tripwire itself: it must see a connection when something does leave loopback."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from paddock.testing import build_offline_env

from ._stdio import StdioPeer
from .conftest import Tripwire, require_peer


def test_tripwire_records_a_proxied_request():
    wire = Tripwire()
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": wire.url, "https": wire.url}))
        with pytest.raises(OSError):
            opener.open("http://example.invalid/", timeout=5)
        assert wire.wait_for_hit(timeout=5) and "example.invalid" in wire.hits[0]
    finally:
        wire.close()


def test_tripwire_relays_loopback_targets(model_server):
    wire = Tripwire()
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": wire.url}))
        with opener.open(model_server.url + "/", timeout=5) as resp:
            assert resp.read() == b"paddock mock model server\n"
        assert not wire.hits and wire.relayed == [f"GET {model_server.url}/ HTTP/1.1"]
    finally:
        wire.close()


@pytest.mark.live
def test_tripwire_catches_codex_plugin_sync_when_the_offline_switches_are_removed(tmp_path, workspace, model_server):
    """Codex syncs curated plugins from github.com at start unless [features] turns it off; with
    the switches removed the proxy tripwire must see that attempt."""
    _, argv = require_peer("codex")
    wire = Tripwire()
    offline = build_offline_env("codex", tmp_path / "env", model_url=model_server.url, proxy_url=wire.url)
    config = Path(offline.env["CODEX_HOME"]) / "config.toml"
    config.write_text(config.read_text().replace("plugins = false", "plugins = true").replace("apps = false", "apps = true"))
    codex = StdioPeer([*argv, "app-server"], env=offline.env, cwd=str(workspace))
    try:
        codex.request("initialize", {"clientInfo": {"name": "paddock_live", "title": "t", "version": "0"},
                                     "capabilities": {"experimentalApi": True}}, jsonrpc=False)
        codex.send({"method": "initialized"})
        codex.request("thread/start", {"cwd": str(workspace)}, jsonrpc=False)
        hit = wire.wait_for_hit(timeout=15)
    finally:
        codex.close()
        wire.close()
    assert hit, "the tripwire saw nothing although plugin sync was enabled"
    assert any("github.com" in h or "chatgpt.com" in h for h in wire.hits), wire.hits
