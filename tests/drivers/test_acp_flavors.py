"""The ACP flavors as records: each maps the common model keys onto its agent's own variables and
settings, finds its pinned binary with no ``binary`` configured, and ``doctor`` reports the
agent's own version. No agent runs here (the live tests run them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paddock.drivers import BUILT_IN_DRIVERS, ModelAccess
from paddock.drivers._peers import load_pins
from paddock.drivers.acp import flavor_env
from paddock.drivers.acp.flavors import FLAVORS
from paddock.drivers.acp.flavors._copilot import failed_text
from paddock.drivers.acp.flavors._gemini import resume_hint

ACCESS = ModelAccess(endpoint="http://127.0.0.1:9/v1", api_key="sk-flavor", model="m-1")

EXPECTED = {
    "gemini": {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9", "GEMINI_API_KEY": "sk-flavor", "GEMINI_MODEL": "m-1",
               "GEMINI_TELEMETRY_ENABLED": "false", "GEMINI_CLI_NO_RELAUNCH": "true"},
    "qwen": {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-flavor", "OPENAI_MODEL": "m-1",
             "QWEN_TELEMETRY_ENABLED": "false", "QWEN_CODE_NO_RELAUNCH": "true"},
    "claude-acp": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "sk-flavor", "ANTHROPIC_MODEL": "m-1",
                   "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
    "copilot": {"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9/v1", "COPILOT_PROVIDER_TYPE": "openai",
                "COPILOT_PROVIDER_API_KEY": "sk-flavor", "COPILOT_MODEL": "m-1", "COPILOT_OFFLINE": "true"},
    "codex-acp": {"PADDOCK_CODEX_API_KEY": "sk-flavor"},
}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_each_flavor_maps_the_common_keys_onto_its_own_variables(kind, tmp_path):
    env = flavor_env(FLAVORS[kind], ACCESS, tmp_path)
    assert {k: env[k] for k in EXPECTED[kind]} == EXPECTED[kind]
    # The endpoint works with or without its version suffix.
    again = flavor_env(FLAVORS[kind], ModelAccess(endpoint="http://127.0.0.1:9", api_key="sk-flavor", model="m-1"),
                       tmp_path / "other")
    assert {k: again[k] for k in EXPECTED[kind]} == EXPECTED[kind]


def test_no_model_keys_means_the_agents_own_login(tmp_path):
    for kind in ("gemini", "qwen", "copilot", "claude-acp"):
        env = flavor_env(FLAVORS[kind], ModelAccess(), tmp_path / kind)
        assert not [k for k in env if k.endswith(("_API_KEY", "BASE_URL"))], (kind, env)
    assert "COPILOT_OFFLINE" not in flavor_env(FLAVORS["copilot"], ModelAccess(), tmp_path)  # it disables GitHub auth


def test_gemini_settings_merge_with_the_users_own(tmp_path):
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"theme": "dark", "telemetry": {"enabled": True, "target": "local"}}))
    flavor_env(FLAVORS["gemini"], ACCESS, tmp_path)
    merged = json.loads(settings.read_text())
    assert merged["theme"] == "dark" and merged["telemetry"] == {"enabled": False, "target": "local"}
    assert merged["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert oct(settings.stat().st_mode & 0o777) == "0o600"


def test_codex_acp_writes_its_config_but_leaves_a_users_own_file(tmp_path):
    flavor_env(FLAVORS["codex-acp"], ACCESS, tmp_path)
    text = (tmp_path / ".codex" / "config.toml").read_text()
    assert 'base_url = "http://127.0.0.1:9/v1"' in text and 'model = "m-1"' in text and "sk-flavor" not in text
    own = tmp_path / "own"
    (own / ".codex").mkdir(parents=True)
    (own / ".codex" / "config.toml").write_text('model = "mine"\n')
    flavor_env(FLAVORS["codex-acp"], ACCESS, own)
    assert (own / ".codex" / "config.toml").read_text() == 'model = "mine"\n'


def test_claude_acp_runs_as_root_only_with_is_sandbox(tmp_path):
    env = flavor_env(FLAVORS["claude-acp"], ACCESS, tmp_path)
    assert ("IS_SANDBOX" in env) == (os.geteuid() == 0)


def test_copilot_model_errors_in_text_are_failures():
    assert failed_text("Error: 400 mock bad request") == "400 mock bad request"
    retried = ("Info: Request failed due to a transient API error. Retrying...Error: Failed to get response from the "
               "AI model; retried 5 times (x) Last error: 500 mock internal error")
    assert failed_text(retried).startswith("Failed to get response from the AI model")
    assert failed_text("Hello from mock") is None
    assert failed_text("Here is how to print Error: in Python") is None


def test_gemini_explains_a_load_in_the_first_minute():
    assert "first minute" in resume_hint("failed with code -32603: Internal error", 5.0)
    assert resume_hint("failed with code -32603: Internal error", 61.0) is None
    assert resume_hint("failed with code -32602: bad params", 5.0) is None


def _fake_peer(root: Path, name: str) -> Path:
    pin = load_pins()[name]
    manifest = pin.prefix(root) / "node_modules" / pin.package / "package.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"version": pin.version}))
    entry = pin.entry_path(root)
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text("#!/bin/sh\necho 9.9.9-not-the-pin\n")
    entry.chmod(0o755)
    return entry


def test_doctor_shows_every_flavors_binary_and_its_own_version(tmp_path):
    peers = tmp_path / "peers"
    entries = {kind: _fake_peer(peers, kind) for kind in FLAVORS}
    config = tmp_path / "paddock.toml"
    config.write_text("".join(
        f'[instances.{kind}]\ndriver = "{kind}"\nendpoint = "http://127.0.0.1:9"\napi_key = "sk-doctor-secret"\n\n'
        for kind in FLAVORS))
    env = {**os.environ, "PADDOCK_PEERS_DIR": str(peers)}
    run = subprocess.run([sys.executable, "-m", "paddock.cli", "doctor", "--json", "--config", str(config),
                          "--state-dir", str(tmp_path / "s")], capture_output=True, text=True, timeout=60, env=env)
    assert "sk-doctor-secret" not in run.stdout + run.stderr
    reports = {r["id"]: r for r in map(json.loads, run.stdout.splitlines())}
    pins = load_pins()
    for kind, entry in entries.items():
        r = reports[kind]
        # The pin's own version (node's, for a node-run agent, would be v20...).
        assert (r["binary"], r["source"], r["version"], r["api_key"]) == (str(entry), "peers", pins[kind].version, "***")


def test_a_flavor_without_its_binary_is_unavailable_with_the_install_command(tmp_path, monkeypatch):
    from paddock import Runtime

    monkeypatch.setenv("PADDOCK_PEERS_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with Runtime.open({"instances": {"g": {"driver": "gemini"}}}, state_dir=tmp_path / "s") as rt:
        [info] = rt.instances()
    assert info.status == "unavailable" and "paddock peers install --only gemini" in (info.reason or "")


def test_every_flavor_is_registered():
    assert set(FLAVORS) <= set(BUILT_IN_DRIVERS)


def test_capability_overrides_follow_the_protocol_facts():
    caps = {k: BUILT_IN_DRIVERS[k].capabilities for k in ("gemini", "qwen", "claude-acp", "copilot", "codex-acp")}
    # Every pinned agent answers initialize with loadSession: true.
    assert all(c.sessions.load and c.sessions.resume for c in caps.values())
    # usage_update + PromptResponse.usage: claude-acp, copilot, codex-acp; gemini/qwen report it otherwise.
    assert {k for k, c in caps.items() if c.streaming.token_usage} == {"claude-acp", "copilot", "codex-acp"}
    # Gemini with fs advertised cannot create a new file: fs is off by default.
    assert caps["gemini"].tools.client_fs is False
