"""Offline environment builders: files written, switches present, nothing ambient leaking in."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from paddock.testing import MOCK_KEY, OFFLINE_BUILDERS, build_offline_env, load_pins

URL = "http://127.0.0.1:45678"

REQUIRED = {
    "codex": {"CODEX_HOME", "PADDOCK_MOCK_KEY"},
    "opencode": {"OPENCODE_CONFIG", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH",
                 "OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_CLAUDE_CODE",
                 "OPENCODE_DISABLE_EXTERNAL_SKILLS", "OPENCODE_DISABLE_PROJECT_CONFIG"},
    "claude": {"CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
               "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING", "CLAUDE_CODE_MAX_RETRIES"},
    "gemini": {"GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_TELEMETRY_ENABLED", "GEMINI_CLI_NO_RELAUNCH"},
    "qwen": {"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "QWEN_TELEMETRY_ENABLED", "QWEN_CODE_NO_RELAUNCH"},
    "claude-acp": {"CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL",
                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY"},
    "copilot": {"COPILOT_OFFLINE", "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_API_KEY",
                "COPILOT_MODEL"},
    "codex-acp": {"CODEX_HOME", "PADDOCK_CODEX_API_KEY"},
}
AMBIENT = {
    "OPENAI_API_KEY": "sk-ambient", "OPENAI_BASE_URL": "https://ambient.invalid/v1", "ANTHROPIC_API_KEY": "ambient",
    "ANTHROPIC_BASE_URL": "https://ambient.invalid", "CODEX_HOME": "/ambient/codex", "CODEX_SANDBOX": "ambient",
    "GEMINI_API_KEY": "ambient", "GOOGLE_API_KEY": "ambient", "CLAUDECODE": "1", "CI": "true",
    "COPILOT_GITHUB_TOKEN": "ambient", "GH_TOKEN": "ambient", "HTTPS_PROXY": "http://ambient.invalid:1",
    "OPENCODE_CONFIG_CONTENT": "{}", "HOME": "/ambient/home", "XDG_CONFIG_HOME": "/ambient/xdg",
}


def test_there_is_a_builder_for_every_pinned_cli():
    assert set(OFFLINE_BUILDERS) == set(load_pins()) == set(REQUIRED)


@pytest.mark.parametrize("cli", sorted(REQUIRED))
def test_builder_env_is_private_offline_and_free_of_ambient_values(cli, tmp_path, monkeypatch):
    for key, value in AMBIENT.items():
        monkeypatch.setenv(key, value)
    built = build_offline_env(cli, tmp_path, model_url=URL)
    env = built.env
    assert REQUIRED[cli] <= set(env), REQUIRED[cli] - set(env)
    for key, value in env.items():
        assert "ambient" not in value, (key, value)
    assert not {"CLAUDECODE", "CI", "GH_TOKEN", "COPILOT_GITHUB_TOKEN", "OPENCODE_CONFIG_CONTENT",
                "HTTPS_PROXY", "GOOGLE_API_KEY"} & set(env)
    for key in ("HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        assert Path(env[key]).is_relative_to(tmp_path) and Path(env[key]).is_dir(), key
    assert built.home == env["HOME"] and env["NO_PROXY"] == "127.0.0.1,localhost"
    # Every URL the CLI is given, in env or in its config files, is on loopback; the model URL is
    # the scripted server.
    texts = list(env.values()) + [Path(f).read_text() for f in built.files]
    urls = {u for t in texts for u in re.findall(r"https?://[^\s\"',]+", t)}
    assert all(u.startswith("http://127.0.0.1:") for u in urls), urls
    assert any(u.startswith(URL) for u in urls), urls
    assert any(MOCK_KEY in t for t in texts)  # a dummy key, never an ambient one
    assert all(Path(f).is_relative_to(tmp_path) for f in built.files)


def test_codex_config_and_catalog(tmp_path):
    built = build_offline_env("codex", tmp_path, model_url=URL)
    home = Path(built.env["CODEX_HOME"])
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["model"] == built.model and config["model_provider"] == "mock"
    provider = config["model_providers"]["mock"]
    assert provider["base_url"] == URL + "/v1" and provider["wire_api"] == "responses"
    assert provider["env_key"] == "PADDOCK_MOCK_KEY" and provider["request_max_retries"] == 0
    assert config["features"] == {"plugins": False, "remote_plugin": False, "apps": False, "shell_snapshot": False}
    assert config["analytics"]["enabled"] is False and config["otel"]["exporter"] == "none"
    [entry] = json.loads(Path(config["model_catalog_json"]).read_text())["models"]
    assert entry["slug"] == built.model and entry["apply_patch_tool_type"] == "freeform"
    assert entry["use_responses_lite"] is False


def test_opencode_config_enables_only_the_mock_provider(tmp_path):
    built = build_offline_env("opencode", tmp_path, model_url=URL)
    config = json.loads(Path(built.env["OPENCODE_CONFIG"]).read_text())
    assert config["enabled_providers"] == ["mock"] and config["model"] == config["small_model"] == "mock/mock-model"
    assert config["provider"]["mock"]["options"]["baseURL"] == URL + "/v1" and config["share"] == "disabled"


def test_gemini_and_qwen_settings(tmp_path):
    gemini = build_offline_env("gemini", tmp_path / "g", model_url=URL)
    settings = json.loads((Path(gemini.home) / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["telemetry"]["enabled"] is False and settings["privacy"]["usageStatisticsEnabled"] is False
    qwen = build_offline_env("qwen", tmp_path / "q", model_url=URL)
    settings = json.loads((Path(qwen.home) / ".qwen" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "openai" and settings["general"]["disableAutoUpdate"] is True


def test_proxy_tripwire_and_extra_and_path(tmp_path):
    built = build_offline_env("copilot", tmp_path, model_url="http://localhost:9/", proxy_url="http://127.0.0.1:1",
                              path="/bin", extra={"COPILOT_MODEL": "x"})
    env = built.env
    assert env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:9/v1"
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        assert env[key] == "http://127.0.0.1:1"
    assert env["PATH"] == "/bin" and env["COPILOT_MODEL"] == "x"


@pytest.mark.parametrize("url", ["https://127.0.0.1:1", "http://10.0.0.1:1", "http://api.example:80", "http://127.0.0.1"])
def test_non_loopback_model_urls_are_refused(url, tmp_path):
    with pytest.raises(ValueError, match="must be http://127.0.0.1"):
        build_offline_env("claude", tmp_path, model_url=url)


def test_unknown_cli(tmp_path):
    with pytest.raises(KeyError):
        build_offline_env("nope", tmp_path, model_url=URL)
