"""Offline environments for the pinned CLIs: private home and config folders, config files, the
switches that stop telemetry, update checks and plugin sync, loopback-only model URLs, dummy keys.

The settings are the ones under "Staying offline" in ``shared/protocols/README.md`` (strace showed
only loopback connections with them). An environment is built from scratch: nothing from the
ambient environment reaches the CLI except ``PATH`` (so inherited ``OPENAI_*``, ``ANTHROPIC_*``,
``CODEX_*``, ``GEMINI_*``, ``CLAUDECODE``, ``CI`` ... cannot leak in).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from paddock.drivers._access import ModelAccess
from paddock.drivers._claude_code import CLAUDE_CODE_QUIET, claude_code_env
from paddock.drivers.acp._flavor import is_root

__all__ = ["OFFLINE_BUILDERS", "MOCK_KEY", "OfflineEnv", "build_offline_env"]

MOCK_KEY = "paddock-mock-key"
_CATALOG = Path(__file__).with_name("codex_model_catalog.json")
_LOOPBACK = {"127.0.0.1", "localhost"}
_DEAD_REGISTRY = "http://127.0.0.1:9/"  # discard port: nothing listens, connections are refused


class OfflineEnv(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a CLI process needs to run offline against the scripted model server."""

    cli: str
    env: dict[str, str]
    """The complete child environment (pass it as is; do not merge ``os.environ``)."""
    home: str
    files: tuple[str, ...]
    """Config files written, absolute paths."""
    model: str
    """The model name the CLI is configured to ask for."""


def _write(path: Path, text: str, files: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    files.append(str(path))


def _check_loopback(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in _LOOPBACK or not parts.port:
        raise ValueError(f"model URL must be http://127.0.0.1:<port>, got {url!r}")
    return f"http://127.0.0.1:{parts.port}"


def _base(root: Path, path: str | None, proxy_url: str | None) -> dict[str, str]:
    home = root / "home"
    env = {
        "PATH": path if path is not None else os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "USER": "paddock",
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(root / "tmp"),
        "NO_BROWSER": "1",
        "DO_NOT_TRACK": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    if proxy_url:
        # Tripwire: anything that is not loopback goes to this proxy (which only logs and refuses).
        for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env[key] = env[key.lower()] = proxy_url
    for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "TMPDIR"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def _codex(root: Path, url: str, env: dict[str, str], files: list[str]) -> str:
    model = "mock-model"
    codex_home = root / "codex-home"
    catalog = codex_home / "model_catalog.json"
    _write(catalog, _CATALOG.read_text(encoding="utf-8"), files)
    config = f"""\
model = "{model}"
model_provider = "mock"
check_for_update_on_startup = false
model_catalog_json = {_toml_str(str(catalog))}

[model_providers.mock]
name = "mock"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "PADDOCK_MOCK_KEY"
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

# Without these three Codex syncs curated plugins from github.com and chatgpt.com at start.
[features]
plugins = false
remote_plugin = false
apps = false
shell_snapshot = false

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"
"""
    _write(codex_home / "config.toml", config, files)
    env.update(CODEX_HOME=str(codex_home), PADDOCK_MOCK_KEY=MOCK_KEY, RUST_LOG="warn")
    return model


def _opencode(root: Path, url: str, env: dict[str, str], files: list[str]) -> str:
    config = {
        "autoupdate": False,
        "share": "disabled",
        # Without enabled_providers the built-in Zen provider (a public endpoint) is enabled.
        "enabled_providers": ["mock"],
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": f"{url}/v1", "apiKey": MOCK_KEY},
            "models": {"mock-model": {"name": "Mock model", "tool_call": True,
                                      "limit": {"context": 128000, "output": 4096}}},
        }},
        "permission": {"webfetch": "deny"},
    }
    path = root / "opencode.json"
    _write(path, json.dumps(config, indent=2), files)
    env.update(
        OPENCODE_CONFIG=str(path),
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",  # else the models.dev catalog is fetched
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        OPENCODE_DISABLE_CLAUDE_CODE="1",
        OPENCODE_DISABLE_EXTERNAL_SKILLS="1",
        OPENCODE_DISABLE_PROJECT_CONFIG="1",
    )
    # No flag stops the background install of @opencode-ai/plugin into each config folder; point
    # its package registry at a closed loopback port so the attempt fails at once, locally.
    for key in ("NPM_CONFIG_REGISTRY", "npm_config_registry", "BUN_CONFIG_REGISTRY"):
        env[key] = _DEAD_REGISTRY
    return "mock/mock-model"


def _flavor(kind: str, root: Path, url: str, env: dict[str, str], files: list[str], model: str) -> str:
    """The flavor's own mapping of the common model keys (one copy, in paddock.drivers)."""
    from paddock.drivers.acp import flavor_env
    from paddock.drivers.acp.flavors import FLAVORS

    access = ModelAccess(endpoint=url, api_key=MOCK_KEY, model=model)
    flavor = FLAVORS[kind]
    env.update(flavor_env(flavor, access, Path(env["HOME"]), files))
    return model


def _claude_vars(root: Path, url: str, env: dict[str, str], model: str | None = None) -> None:
    config_dir = root / "claude-config"
    config_dir.mkdir(parents=True, exist_ok=True)
    env.update(claude_code_env(ModelAccess(endpoint=url, api_key=MOCK_KEY, model=model)), **CLAUDE_CODE_QUIET)
    # Error tests want one request per model failure, and a config dir the test can inspect.
    env.update(CLAUDE_CONFIG_DIR=str(config_dir), CLAUDE_CODE_MAX_RETRIES="0")
    if is_root():
        env["IS_SANDBOX"] = "1"  # else bypassPermissions (and claude-agent-acp) refuse to run as root


def _claude(root: Path, url: str, env: dict[str, str], files: list[str]) -> str:
    _claude_vars(root, url, env)
    return "claude-sonnet-4-5"


def _claude_acp(root: Path, url: str, env: dict[str, str], files: list[str]) -> str:
    _claude_vars(root, url, env)
    return _flavor("claude-acp", root, url, env, files, "claude-sonnet-4-5")


def _gemini(root: Path, url: str, env: dict[str, str], files: list[str]) -> str:
    return _flavor("gemini", root, url, env, files, "gemini-mock")


def _qwen(root: Path, url: str, env: dict[str, str], files: list[str]) -> str:
    return _flavor("qwen", root, url, env, files, "mock-model")


def _copilot(root: Path, url: str, env: dict[str, str], files: list[str]) -> str:
    return _flavor("copilot", root, url, env, files, "gpt-4.1")


def _codex_acp(root: Path, url: str, env: dict[str, str], files: list[str]) -> str:
    return _flavor("codex-acp", root, url, env, files, "gpt-5.4-mini")


OFFLINE_BUILDERS: dict[str, Callable[[Path, str, dict[str, str], list[str]], str]] = {
    "codex": _codex,
    "opencode": _opencode,
    "claude": _claude,
    "gemini": _gemini,
    "qwen": _qwen,
    "claude-acp": _claude_acp,
    "copilot": _copilot,
    "codex-acp": _codex_acp,
}
"""Peer name (as in ``paddock/drivers/peers.toml``) -> builder."""


def build_offline_env(
    cli: str,
    root: str | Path,
    *,
    model_url: str,
    proxy_url: str | None = None,
    path: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> OfflineEnv:
    """Create the private folders and config files of ``cli`` under ``root`` and return its env.

    ``model_url`` is the scripted model server (``http://127.0.0.1:<port>``; anything that is not
    loopback raises ``ValueError``). ``proxy_url`` points every proxy variable at a tripwire
    listener (``NO_PROXY`` always exempts 127.0.0.1 and localhost). ``path`` replaces the inherited
    ``PATH``; ``extra`` is merged last. Raises ``KeyError`` for an unknown CLI.
    """
    builder = OFFLINE_BUILDERS[cli]
    url = _check_loopback(model_url)
    root = Path(root).resolve()
    env = _base(root, path, proxy_url)
    files: list[str] = []
    model = builder(root, url, env, files)
    if extra:
        env.update(extra)
    return OfflineEnv(cli=cli, env=env, home=env["HOME"], files=tuple(files), model=model)
