"""The pins file, the install cache check and `paddock peers` (no network: npm is a stand-in script)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from paddock.testing import Peer, install_peer, installed_version, load_pins, peer_argv
from paddock.contract import ProcessError

PINNED = {
    "codex": ("@openai/codex", "0.171.0"),
    "opencode": ("opencode-ai", "1.18.33"),
    "claude": ("@anthropic-ai/claude-code", "2.1.197"),
    "gemini": ("@google/gemini-cli", "0.61.0"),
    "qwen": ("@qwen-code/qwen-code", "0.15.10"),
    "claude-acp": ("@agentclientprotocol/claude-agent-acp", "0.49.0"),
    "copilot": ("@github/copilot", "1.0.102"),
    "codex-acp": ("@zed-industries/codex-acp", "0.16.0"),
}


def test_pins_match_the_protocol_notes():
    pins = load_pins()
    assert {n: (p.package, p.version) for n, p in pins.items()} == PINNED
    assert {n for n, p in pins.items() if p.runner == "node"} == {"gemini", "qwen", "claude-acp"}


def _fake_install(peer: Peer, root, version=None):
    nm = peer.prefix(root) / "node_modules"
    (nm / peer.package).mkdir(parents=True, exist_ok=True)
    (nm / peer.package / "package.json").write_text(json.dumps({"version": version or peer.version}))
    entry = nm / peer.entry
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text("#!/bin/sh\n")
    entry.chmod(0o755)


def test_installed_version_needs_the_manifest_and_the_entry(tmp_path):
    peer = load_pins()["codex"]
    assert installed_version(peer, tmp_path) is None and peer_argv(peer, tmp_path) is None
    _fake_install(peer, tmp_path)
    assert installed_version(peer, tmp_path) == "0.171.0"
    assert peer_argv(peer, tmp_path) == [str(peer.entry_path(tmp_path))]
    peer.entry_path(tmp_path).unlink()
    assert installed_version(peer, tmp_path) is None


def test_node_peers_start_with_node(tmp_path):
    peer = load_pins()["gemini"]
    _fake_install(peer, tmp_path)
    argv = peer_argv(peer, tmp_path)
    if argv is None:
        pytest.skip("node is not on PATH")
    assert os.path.basename(argv[0]) == "node" and argv[1].endswith("bundle/gemini.js")


def _fake_npm(tmp_path, *, fail=False):
    """A stand-in npm that 'installs' by writing the manifest and entry, and logs its argv."""
    script = tmp_path / "npm"
    script.write_text(f"""#!{sys.executable}
import json, os, sys
open({str(tmp_path / 'npm.log')!r}, 'a').write(json.dumps(sys.argv[1:]) + "\\n")
if {fail!r}:
    sys.stderr.write("npm ERR! boom\\n"); sys.exit(1)
prefix = sys.argv[sys.argv.index("--prefix") + 1]
pkg, _, ver = sys.argv[-1].rpartition("@")
nm = os.path.join(prefix, "node_modules")
os.makedirs(os.path.join(nm, pkg), exist_ok=True)
json.dump({{"version": ver}}, open(os.path.join(nm, pkg, "package.json"), "w"))
if os.path.exists({str(tmp_path / 'write_entry')!r}):
    entry = os.path.join(nm, open({str(tmp_path / 'write_entry')!r}).read())
    os.makedirs(os.path.dirname(entry), exist_ok=True)
    open(entry, "w").close()
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_install_runs_npm_once_then_hits_the_cache(tmp_path):
    peer = Peer(name="demo", package="@scope/demo", version="1.2.3", entry="@scope/demo/cli.js",
                protocol="acp", dialect="chat", runner="node")
    npm = _fake_npm(tmp_path)
    # The stand-in writes only the manifest: the missing entry must be reported, not ignored.
    with pytest.raises(ProcessError, match="cli.js is missing"):
        install_peer(peer, tmp_path / "peers", npm=str(npm))
    (tmp_path / "write_entry").write_text(peer.entry)
    first = install_peer(peer, tmp_path / "peers", npm=str(npm))
    second = install_peer(peer, tmp_path / "peers", npm=str(npm))
    assert (first.skipped, second.skipped) == (False, True)
    calls = [json.loads(x) for x in (tmp_path / "npm.log").read_text().splitlines()]
    assert len(calls) == 2  # the failed attempt and the first successful one; the cache hit runs nothing
    assert calls[0][0] == "install" and calls[0][-1] == "@scope/demo@1.2.3"
    assert calls[0][calls[0].index("--prefix") + 1] == str(tmp_path / "peers" / "demo@1.2.3")


def test_npm_failure_is_a_process_error_with_its_stderr(tmp_path):
    peer = Peer(name="demo", package="demo", version="1.0.0", entry="demo/x", protocol="acp", dialect="chat")
    with pytest.raises(ProcessError) as info:
        install_peer(peer, tmp_path / "peers", npm=str(_fake_npm(tmp_path, fail=True)))
    assert "npm ERR! boom" in info.value.stderr_tail


def test_paddock_peers_list_and_path(tmp_path):
    peer = load_pins()["claude"]
    _fake_install(peer, tmp_path)
    run = lambda *a: subprocess.run([sys.executable, "-m", "paddock.cli", "peers", *a], capture_output=True, text=True)
    listed = run("list", "--dir", str(tmp_path))
    assert listed.returncode == 0
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "installed" in lines["claude"] and "missing" in lines["codex"]
    assert run("path", "claude", "--dir", str(tmp_path)).stdout.strip() == str(peer.entry_path(tmp_path))
    missing = run("path", "codex", "--dir", str(tmp_path))
    assert missing.returncode == 1 and "paddock peers install --only codex" in missing.stderr
    assert run("install", "--only", "nope", "--dir", str(tmp_path)).returncode == 2
