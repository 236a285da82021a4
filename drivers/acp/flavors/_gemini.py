"""``gemini``: Gemini CLI (pinned 0.61.0) in ACP mode: ``node <gemini.js> --acp``.

Model keys: ``endpoint`` -> ``GOOGLE_GEMINI_BASE_URL`` (without ``/v1beta``: the SDK appends
it; plain http is accepted only for localhost/127.0.0.1), ``api_key`` -> ``GEMINI_API_KEY``
plus ``authenticate{methodId:"gemini-api-key"}`` and ``selectedType`` in
``~/.gemini/settings.json``, ``model`` -> ``GEMINI_MODEL``. Without a key: the CLI's own login,
no ``authenticate`` call. Switches: ``GEMINI_TELEMETRY_ENABLED=false``,
``GEMINI_CLI_NO_RELAUNCH=true`` (no self-relaunch with a bigger heap), settings with usage
statistics, telemetry and auto-update off.

| runtime / interaction mode | native mode (``session/set_mode``) | answered without asking the host |
|---|---|---|
| approval-required | ``default`` | read, search, think |
| auto-accept-edits | ``autoEdit`` | also edit, delete, move |
| full-access | ``yolo`` | everything |
| plan interaction | ``plan`` | as the runtime mode says |

Traps (acp.md): ``request_permission`` names tool calls never announced (the item is created on
first sight, generically); gemini with ``fs.readTextFile`` advertised cannot create a NEW file
(it reads first and maps the client's -32002 to "Error checking existing file"), so this flavor
advertises no fs by default; it skips permission for safe-list commands (``echo``, ``ls``);
HTTP 5xx means ≈70 s of silent retries (cancel ends it); a session cannot be loaded in a fresh
process in its first minute (:func:`resume_hint` says so instead of a bare "Internal error").
"""

from __future__ import annotations

from pathlib import Path

from paddock.drivers._access import ModelAccess
from paddock.drivers._registry import InstanceContext
from paddock.drivers.acp import AcpFlavor
from paddock.drivers.acp._flavor import SettingsFiles

from ._common import gemini_family_settings, loads_sessions

__all__ = ["GEMINI_FLAVOR", "resume_hint"]

# Observed with 0.61.0: `session/load` in a fresh process fails with -32603 "Internal error" for a
# session created less than a minute before; after 60 s the same load replays the history.
_SAVE_DELAY = 60.0


def _access_env(access: ModelAccess) -> dict[str, str]:
    return access.variables(endpoint="GOOGLE_GEMINI_BASE_URL", api_key="GEMINI_API_KEY", model="GEMINI_MODEL")


def _settings(access: ModelAccess, home: Path) -> SettingsFiles:
    return {".gemini/settings.json": gemini_family_settings("gemini-api-key" if access.api_key else None)}


def _auth(ctx: InstanceContext) -> str | None:
    return "gemini-api-key" if ctx.access.api_key or ctx.env.get("GEMINI_API_KEY") else None


def resume_hint(error: str, age: float | None) -> str | None:
    """Explain a failed ``session/load`` of a session younger than a minute."""
    if "-32603" not in error or (age is not None and age >= _SAVE_DELAY):
        return None
    when = f" (it was created {age:.0f} s ago)" if age is not None else ""
    return (f"Gemini CLI 0.61 cannot load a session in the first minute after it was created{when}; "
            "resume it after that minute to keep its history")


GEMINI_FLAVOR = AcpFlavor(
    kind="gemini",
    peer="gemini",
    protocol_args=("--acp",),
    access_env=_access_env,
    quiet_env={"GEMINI_TELEMETRY_ENABLED": "false", "GEMINI_CLI_NO_RELAUNCH": "true", "NO_BROWSER": "1"},
    settings=_settings,
    auth=_auth,
    resume_hint=resume_hint,
    # initialize answers loadSession: true. Usage arrives only as PromptResponse._meta.quota, so
    # streaming.token_usage stays off.
    capability_overrides=loads_sessions,
    native_modes={"approval-required": "default", "auto-accept-edits": "autoEdit", "full-access": "yolo", "plan": "plan"},
    # acp.md pitfall 1: with fs advertised, creating a new file fails.
    client_fs=False,
    # 0.61.0's run_shell_command permission has no rawInput; its title is the command and its
    # content "[current working directory <dir>] (<description>)" (acp-gemini-transcript).
    title_is_command=True,
)
