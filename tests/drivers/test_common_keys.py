"""The model keys every driver understands (``endpoint``, ``api_key``/``api_key_env``, ``model``)
and binary resolution from the peers dir, through the public Runtime where it matters."""

from __future__ import annotations

import os
import stat

import pytest

from paddock import Runtime
from paddock.contract import ConfigError
from paddock.drivers import ModelAccess, find_binary, model_access
from paddock.drivers._registry import DriverConfig
from paddock.drivers._peers import load_pins


def test_base_url_accepts_the_endpoint_with_or_without_its_version_suffix():
    for url in ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/", "http://127.0.0.1:9"):
        access = ModelAccess(endpoint=url.rstrip("/"))
        assert access.base_url("/v1") == "http://127.0.0.1:9/v1"
        assert access.base_url() == "http://127.0.0.1:9"
    gemini = ModelAccess(endpoint="https://gw.example/proxy/v1beta")
    assert gemini.base_url() == "https://gw.example/proxy" and gemini.base_url("/v1") == "https://gw.example/proxy/v1"
    assert ModelAccess().base_url("/v1") is None


@pytest.mark.parametrize(
    "endpoint, fragment",
    [("ftp://h/v1", "http(s) URL"), ("http://u:p@h/v1", "user-info"), ("http://h/v1?x=1", "query"), ("nohost", "http(s)")],
)
def test_a_bad_endpoint_is_a_config_error_naming_the_key(tmp_path, endpoint, fragment):
    config = {"instances": {"a": {"driver": "local", "endpoint": endpoint}}}
    with pytest.raises(ConfigError) as err:
        Runtime.open(config, state_dir=tmp_path / "s")
    assert "endpoint" in str(err.value) and fragment in str(err.value)


def test_the_key_never_shows_in_a_repr():
    config = DriverConfig(driver="x", api_key="sk-very-secret", env={"TOKEN": "t0ps3cret"})
    access = ModelAccess(api_key="sk-very-secret")
    for text in (repr(config), str(config), repr(access), str(access)):
        assert "very-secret" not in text and "t0ps3cret" not in text
    assert access.secrets == ("sk-very-secret",)


def test_api_key_env_reads_the_host_variable_and_a_missing_one_makes_the_instance_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("PADDOCK_TEST_KEY", "k-123")
    assert model_access(DriverConfig(driver="x", api_key_env="PADDOCK_TEST_KEY"), os.environ).api_key == "k-123"
    config = {"instances": {"a": {"driver": "local", "api_key_env": "PADDOCK_TEST_UNSET_KEY"}}}
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        [info] = rt.instances()
        assert info.status == "unavailable" and "PADDOCK_TEST_UNSET_KEY" in (info.reason or "")
    with pytest.raises(ConfigError):
        Runtime.open({"instances": {"a": {"driver": "local", "api_key": "a", "api_key_env": "B"}}}, state_dir=tmp_path / "t")


def _fake_peer(root, name):
    pin = load_pins()[name]
    entry = pin.entry_path(root)
    entry.parent.mkdir(parents=True)
    entry.write_text("#!/bin/sh\necho fake\n")
    entry.chmod(entry.stat().st_mode | stat.S_IXUSR)
    manifest = pin.prefix(root) / "node_modules" / pin.package / "package.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text('{"version": "%s"}' % pin.version)
    return pin, entry


def test_find_binary_prefers_config_then_the_peers_dir_then_path(tmp_path):
    env = {"PATH": str(tmp_path / "bin")}
    (tmp_path / "bin").mkdir()
    assert "neither in the peers dir" in find_binary(None, peer="codex", env=env, peers_dir=tmp_path / "peers")
    on_path = tmp_path / "bin" / "codex"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    found = find_binary(None, peer="codex", env=env, peers_dir=tmp_path / "peers")
    assert not isinstance(found, str) and found.source == "path" and found.path == str(on_path)
    pin, entry = _fake_peer(tmp_path / "peers", "codex")
    found = find_binary(None, peer="codex", env=env, peers_dir=tmp_path / "peers")
    assert not isinstance(found, str) and (found.source, found.argv, found.pinned) == ("peers", (str(entry),), pin.version)
    found = find_binary(str(on_path), peer="codex", env=env, peers_dir=tmp_path / "peers")
    assert not isinstance(found, str) and found.source == "config"
    assert "not found on PATH" in find_binary("nope-cli", peer="codex", env=env)


def test_a_node_run_peer_resolves_to_node_plus_its_script(tmp_path):
    node = tmp_path / "bin" / "node"
    node.parent.mkdir()
    node.write_text("#!/bin/sh\n")
    node.chmod(0o755)
    _, entry = _fake_peer(tmp_path / "peers", "gemini")
    found = find_binary(None, peer="gemini", env={"PATH": str(node.parent)}, peers_dir=tmp_path / "peers")
    assert not isinstance(found, str) and found.argv == (str(node), str(entry)) and found.path == str(entry)


def test_the_local_agent_is_given_the_model_keys_and_never_shows_the_key(tmp_path):
    from paddock.contract import ContentDelta  # noqa: F401  (event type names below)

    config = {"instances": {"a": {"driver": "local", "endpoint": "http://127.0.0.1:9/v1", "api_key": "sk-hidden-123",
                                  "model": "m-1"}}}
    ws = tmp_path / "ws"
    ws.mkdir()
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        rt.start_session("t", instance="a", cwd=str(ws))
        answers = {}
        for name in ("PADDOCK_MODEL_ENDPOINT", "PADDOCK_MODEL", "PADDOCK_MODEL_API_KEY"):
            with rt.subscribe(thread_id="t") as events:
                turn = rt.send_turn("t", f"@env {name}")
                text = []
                for event in events:
                    if event.type == "content.delta":
                        text.append(event.delta)
                    if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                        break
            answers[name] = "".join(text)
    assert answers == {"PADDOCK_MODEL_ENDPOINT": "http://127.0.0.1:9/v1", "PADDOCK_MODEL": "m-1",
                       "PADDOCK_MODEL_API_KEY": "[redacted]"}  # the hub redacts the key


def test_claude_gets_anthropic_variables_and_the_switches(tmp_path, monkeypatch):
    from paddock.drivers._claude_code import CLAUDE_CODE_QUIET, claude_code_env

    env = claude_code_env(ModelAccess(endpoint="http://127.0.0.1:9/v1", api_key="k", model="claude-x"))
    assert env == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "k", "ANTHROPIC_MODEL": "claude-x"}
    assert CLAUDE_CODE_QUIET["DISABLE_TELEMETRY"] == "1" and CLAUDE_CODE_QUIET["DISABLE_AUTOUPDATER"] == "1"
    assert claude_code_env(ModelAccess()) == {}
