"""``acp-registry``: registry documents in the public format, the shipped snapshot, and where a
registry agent's command comes from (npx in the peers dir, uvx, or an unavailable reason)."""

from __future__ import annotations

import json
import os

import pytest

from paddock import Runtime
from paddock.cli import main
from paddock.drivers.acp import load_registry, registry_command, registry_peer
from paddock.drivers.acp._catalog import platform_key


def test_the_snapshot_is_the_registry_format_with_every_distribution_kind():
    doc = load_registry()
    assert doc.version == "1.0.0" and len(doc.agents) >= 10
    kinds = {k for a in doc.agents for k in ("npx", "uvx", "binary") if getattr(a.distribution, k) is not None}
    assert {"npx", "binary"} <= kinds
    agent = doc.agent("claude-code-acp")
    assert agent.distribution.npx.name_and_version == ("@zed-industries/claude-code-acp", "0.16.0")
    with pytest.raises(KeyError) as err:
        doc.agent("no-such-agent")
    assert "gemini" in err.value.args[0]


def _doc(tmp_path, **distribution):
    path = tmp_path / f"registry-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps({"version": "1.0.0", "agents": [
        {"id": "demo", "name": "Demo", "version": "2.0.0", "distribution": distribution}], "extensions": []}))
    return str(path)


def test_an_npx_agent_runs_from_the_peers_dir_once_installed(tmp_path, monkeypatch):
    doc = load_registry(_doc(tmp_path, npx={"package": "@demo/agent@2.0.1", "args": ["--acp"], "env": {"DEMO_QUIET": "1"}}))
    agent = doc.agent("demo")
    env = {"PATH": os.environ["PATH"]}
    reason = registry_command(agent, env, peers_dir=tmp_path / "peers")
    assert isinstance(reason, str) and "paddock peers install --registry demo" in reason
    peer = registry_peer(agent)
    assert (peer.name, peer.package, peer.version) == ("registry-demo", "@demo/agent", "2.0.1")
    package = peer.prefix(tmp_path / "peers") / "node_modules" / "@demo" / "agent"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "cli.js").write_text("console.log('x')\n")
    (package / "package.json").write_text(json.dumps({"version": "2.0.1", "bin": {"agent": "bin/cli.js"}}))
    argv, extra = registry_command(agent, env, peers_dir=tmp_path / "peers")
    assert os.path.basename(argv[0]) == "node" and argv[1:] == [str(package / "bin" / "cli.js"), "--acp"]
    assert extra == {"DEMO_QUIET": "1"}
    # doctor shows the agent's own script and version, never node's.
    source = _doc(tmp_path, npx={"package": "@demo/agent@2.0.1", "args": ["--acp"]})
    monkeypatch.setenv("PADDOCK_PEERS_DIR", str(tmp_path / "peers"))
    with Runtime.open({"instances": {"d": {"driver": "acp-registry", "agent": "demo", "registry": source}}},
                      state_dir=tmp_path / "s") as rt:
        [report] = rt.diagnose()
    assert (report["binary"], report["version"], report["source"]) == (str(package / "bin" / "cli.js"), "2.0.1", "peers")


def test_a_binary_agent_that_cannot_be_fetched_says_what_to_download(tmp_path):
    target = {"archive": "https://example.invalid/demo.tar.gz", "cmd": "./demo", "args": ["acp"]}
    agent = load_registry(_doc(tmp_path, binary={platform_key(): target})).agent("demo")
    reason = registry_command(agent, {"PATH": ""})
    assert isinstance(reason, str) and "does not fetch archives" in reason and "demo.tar.gz" in reason
    demo = tmp_path / "demo"
    demo.write_text("#!/bin/sh\n")
    demo.chmod(0o755)
    assert registry_command(agent, {"PATH": ""}, binary=str(demo)) == ([str(demo), "acp"], {})
    assert "does not exist" in registry_command(agent, {"PATH": ""}, binary=str(tmp_path / "missing"))
    other = load_registry(_doc(tmp_path, binary={"plan9-mips": target})).agent("demo")
    assert "no distribution for" in registry_command(other, {"PATH": ""})


def test_a_uvx_agent_needs_uvx_on_path(tmp_path):
    agent = load_registry(_doc(tmp_path, uvx={"package": "demo-acp", "cmd": "demo", "args": ["serve"]})).agent("demo")
    assert "uvx is not on PATH" in registry_command(agent, {"PATH": str(tmp_path)})
    uvx = tmp_path / "uvx"
    uvx.write_text("#!/bin/sh\n")
    uvx.chmod(0o755)
    assert registry_command(agent, {"PATH": str(tmp_path)}) == ([str(uvx), "--from", "demo-acp", "demo", "serve"], {})


def test_a_bad_registry_document_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": "1.0.0", "agents": [{"id": 3}]}')
    with pytest.raises(ValueError) as err:
        load_registry(str(bad))
    assert "not a registry document" in str(err.value)
    with pytest.raises(ValueError):
        load_registry(str(tmp_path / "missing.json"))


def test_registry_instances_are_listed_unavailable_with_their_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("PADDOCK_PEERS_DIR", str(tmp_path / "empty-peers"))
    config = {"instances": {
        "codex": {"driver": "acp-registry", "agent": "codex-acp"},
        "nope": {"driver": "acp-registry", "agent": "no-such-agent"},
        "npx": {"driver": "acp-registry", "agent": "qwen-code"},
    }}
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        reasons = {i.id: i.reason for i in rt.instances()}
    assert "binary distribution" in reasons["codex"] or "no distribution for" in reasons["codex"]
    assert "no agent 'no-such-agent'" in reasons["nope"]
    assert "paddock peers install --registry qwen-code" in reasons["npx"]


def test_peers_install_refuses_a_binary_distribution(capsys):
    assert main(["peers", "install", "--registry", "codex-acp"]) == 1
    assert "no npx distribution" in capsys.readouterr().err


def test_a_registry_document_is_read_from_a_url(tmp_path):
    import http.server
    import threading

    from paddock.drivers.acp._catalog import SNAPSHOT

    body = SNAPSHOT.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        doc = load_registry(f"http://127.0.0.1:{server.server_port}/registry.json")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert {a.id for a in doc.agents} == {a.id for a in load_registry().agents}
