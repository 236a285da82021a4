"""``codex-acp``: Codex through ACP, Zed's adapter ``@zed-industries/codex-acp`` (pinned 0.16.0,
a native binary run directly), beside the native ``codex`` app-server driver.

Model keys: Codex's own ``$CODEX_HOME/config.toml`` (``CODEX_HOME=$HOME/.codex``), written by
Paddock as a managed file (a file the user wrote without Paddock's marker line is left alone):
``endpoint`` -> a ``responses`` provider ``paddock`` at ``<endpoint>/v1`` whose key is read from
``PADDOCK_CODEX_API_KEY`` (= ``api_key``); ``model`` -> ``model``. With ``api_key`` but no
endpoint: ``OPENAI_API_KEY``. Switches (in the file): update check, analytics, feedback, OTEL
and the plugin/app sync features off (without them Codex contacts github.com and chatgpt.com
at start). Policy (``-c`` overrides in argv, so a user's own config file cannot loosen it):
``approval_policy = "untrusted"`` with ``sandbox_mode = "read-only"``, the session's default.

| runtime / interaction mode | native mode (``session/set_mode``) | answered without asking the host |
|---|---|---|
| approval-required | none: the configured default | nothing |
| auto-accept-edits | none: the configured default | edit, delete, move (its patches) |
| full-access | ``full-access`` | everything |
| plan interaction | none (it offers no plan mode) | as the runtime mode says |

Why not its own modes (checked with 0.16.0 against the scripted model server): its presets
``read-only`` (on-request approval, read-only sandbox) and ``auto`` (on-request, workspace-write)
run shell commands in Codex's sandbox without ``session/request_permission`` (a ``touch`` in
``read-only`` ran unasked and failed in the sandbox). Under ``untrusted`` + ``read-only`` it asks
before every command not on Codex's known-safe read-only list (the request's ``rawInput``
carries ``command: ["/bin/bash", "-lc", <cmd>]`` and ``cwd``) and before every ``apply_patch``
(a ``diff`` content with ``path`` and ``newText``); a declined ``touch hello.txt`` left no file.
A command the model marks ``require_escalated`` is rejected by Codex itself under ``untrusted``
(no request, nothing runs). That policy matches none of its presets, so ``session/new`` and
``session/load`` list no modes (``modes: null``, no ``mode`` config option), yet
``session/set_mode`` still takes ``full-access`` (``unlisted_modes``). A session loaded into a
new process is back in the configured default whatever mode it was set to before.

Trap: it names a command's tool kind from Codex's parse of it, so a command can ask as ``read``
or ``search`` (``find . -name x -delete`` asks as ``search`` "Search x in ."; a known-safe
``ls`` that failed in the sandbox asks as ``search`` to rerun outside it). Codex asks only for
what is not known-safe, so no kind is answered without the host but its patches'.

Traps (acp.md §9): its bundled Codex core is older than the app-server pin (no
``model_catalog_json``); for a model it has no metadata for, the first assistant text of a turn
begins with the warning "Model metadata for `<model>` not found. …" as ordinary text (its
bundled catalog knows gpt-5.2 … gpt-5.5); it offers ``apply_patch``, not a write-file tool; its
reject option is ``abort`` ("No, provide feedback"): a declined edit ends the turn with
``stopReason: cancelled`` (state ``cancelled``, the agent's own), not a model follow-up.
"""

from __future__ import annotations

import json
from pathlib import Path

from paddock.contract import Capabilities
from paddock.drivers._capabilities import override
from paddock.drivers._access import ModelAccess
from paddock.drivers.acp import AcpFlavor
from paddock.drivers.acp._flavor import SettingsFiles

from ._common import loads_sessions

__all__ = ["CODEX_ACP_FLAVOR"]

_KEY_VAR = "PADDOCK_CODEX_API_KEY"


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def config_toml(access: ModelAccess) -> str:
    """Codex's ``config.toml`` for ``access``: the quiet switches, and the provider and model
    when configured."""
    lines: list[str] = []
    if access.model:
        lines.append(f"model = {_toml(access.model)}")
    base = access.base_url("/v1")
    if base is not None:
        lines.append('model_provider = "paddock"')
    lines.append("check_for_update_on_startup = false")
    if base is not None:
        lines += ["", "[model_providers.paddock]", 'name = "paddock"', f"base_url = {_toml(base)}",
                  'wire_api = "responses"', f'env_key = "{_KEY_VAR}"', "requires_openai_auth = false"]
    lines += ["", "[features]", "plugins = false", "remote_plugin = false", "apps = false",
              "shell_snapshot = false", "", "[analytics]", "enabled = false", "", "[feedback]", "enabled = false",
              "", "[otel]", 'exporter = "none"', 'trace_exporter = "none"', 'metrics_exporter = "none"']
    return "\n".join(lines) + "\n"


def _access_env(access: ModelAccess) -> dict[str, str]:
    if not access.api_key:
        return {}
    return {_KEY_VAR: access.api_key} if access.endpoint else {"OPENAI_API_KEY": access.api_key}


def _settings(access: ModelAccess, home: Path) -> SettingsFiles:
    return {".codex/config.toml": config_toml(access)}


def _home_env(home: Path) -> dict[str, str]:
    return {"CODEX_HOME": str(home / ".codex")}


def _capabilities(caps: Capabilities) -> Capabilities:
    # initialize answers loadSession: true. codex-acp 0.16.0's usage_update carries the context
    # window only ({used, size}) and its PromptResponse no usage: no token counts reach the
    # ledger, so usage.source stays "none" (a token budget cannot bind it).
    return override(loads_sessions(caps), streaming={"token_usage": True})


CODEX_ACP_FLAVOR = AcpFlavor(
    kind="codex-acp",
    peer="codex-acp",
    # Asks before every command outside Codex's known-safe read-only list, and before every patch.
    protocol_args=("-c", 'approval_policy="untrusted"', "-c", 'sandbox_mode="read-only"'),
    access_env=_access_env,
    quiet_env={"RUST_LOG": "warn", "NO_BROWSER": "1"},
    settings=_settings,
    home_env=_home_env,
    capability_overrides=_capabilities,
    auto_allow={"full-access": frozenset({"*"}), "auto-accept-edits": frozenset({"edit", "delete", "move"}),
                "approval-required": frozenset()},
    native_modes={"full-access": "full-access"},
    unlisted_modes=("read-only", "auto", "full-access"),
)
