"""``qwen``: Qwen Code (pinned 0.15.10) in ACP mode: ``node <cli.js> --acp``.

Model keys (OpenAI Chat Completions): ``endpoint`` -> ``OPENAI_BASE_URL`` (with ``/v1``),
``api_key`` -> ``OPENAI_API_KEY`` plus ``authenticate{methodId:"openai"}`` and ``selectedType``
``openai`` in ``~/.qwen/settings.json``, ``model`` -> ``OPENAI_MODEL``; every model is marked
as taking images (``model.generationConfig.modalities``). Without a key or endpoint: the CLI's
own login. Switches: ``QWEN_TELEMETRY_ENABLED=false``, ``QWEN_CODE_NO_RELAUNCH=true``, settings
with telemetry and auto-update off.

| runtime / interaction mode | native mode (``session/set_mode``) | answered without asking the host |
|---|---|---|
| approval-required | ``default`` | read, search, think |
| auto-accept-edits | ``auto-edit`` | also edit, delete, move |
| full-access | ``yolo`` | everything |
| plan interaction | ``plan`` | as the runtime mode says |

Setting ``default`` explicitly matters: qwen 0.24 starts in ``auto`` (an LLM classifier that
auto-approves writes). Traps (acp.md): permission requests for calls never announced; option
ids differ by tool (``proceed_always_project``...), chosen by kind; it refuses to overwrite a
file it has not read in the session; extension traffic (``qwen/notify/...``,
``craft/drainMidTurnQueue``) is ignored or answered -32601; a cancel during 5xx backoff ends
the prompt ≈9 s later with an error (mapped to ``interrupted``).
"""

from __future__ import annotations

from pathlib import Path

from paddock.drivers._access import ModelAccess
from paddock.drivers._registry import InstanceContext
from paddock.drivers.acp import AcpFlavor
from paddock.drivers.acp._flavor import SettingsFiles

from ._common import gemini_family_settings, loads_sessions

__all__ = ["QWEN_FLAVOR"]


def _access_env(access: ModelAccess) -> dict[str, str]:
    return access.variables(endpoint="OPENAI_BASE_URL", version="/v1", api_key="OPENAI_API_KEY", model="OPENAI_MODEL")


def _settings(access: ModelAccess, home: Path) -> SettingsFiles:
    selected = "openai" if access.api_key or access.endpoint else None
    settings = gemini_family_settings(selected, general={"disableAutoUpdate": True})
    # Protocol fact (Qwen Code `resolveModelConfig`, `createMediaContentPart`): an image block
    # reaches the model only when the model's `modalities.image` is on, else qwen puts an
    # `[Unsupported image file: "image/png"...]` text part in its place. A model given by
    # OPENAI_MODEL gets its modalities from `model.generationConfig` alone (qwen guesses them
    # from the name only for a `modelProviders` entry). `turns.attachments` declares "image", so
    # every model is marked as taking images: one that does not answers with its own error,
    # never a silent drop. Trap: a `modelProviders` entry naming the model overrides this key.
    settings["model"] = {"generationConfig": {"modalities": {"image": True}}}
    return {".qwen/settings.json": settings}


def _auth(ctx: InstanceContext) -> str | None:
    return "openai" if ctx.access.api_key or ctx.access.endpoint or ctx.env.get("OPENAI_API_KEY") else None


QWEN_FLAVOR = AcpFlavor(
    kind="qwen",
    peer="qwen",
    protocol_args=("--acp",),
    access_env=_access_env,
    quiet_env={"QWEN_TELEMETRY_ENABLED": "false", "QWEN_CODE_NO_RELAUNCH": "true", "NO_BROWSER": "1"},
    settings=_settings,
    auth=_auth,
    # initialize answers loadSession: true (and sessionCapabilities resume). Usage comes only as
    # an empty agent_message_chunk with _meta.usage, so streaming.token_usage stays off.
    capability_overrides=loads_sessions,
    native_modes={"approval-required": "default", "auto-accept-edits": "auto-edit", "full-access": "yolo", "plan": "plan"},
)
