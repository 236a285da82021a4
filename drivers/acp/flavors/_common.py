"""What several flavors share: capability edits and the settings overlay of the Gemini CLI
family (Qwen Code is a fork of it)."""

from __future__ import annotations

from collections.abc import Mapping

from paddock.contract import Capabilities, JsonObject, JsonValue
from paddock.drivers._capabilities import override

__all__ = ["gemini_family_settings", "loads_sessions", "reports_usage"]


def loads_sessions(caps: Capabilities) -> Capabilities:
    """``sessions.load``/``resume`` on before the first start (the agent answers ``initialize``
    with ``loadSession: true``), so the runtime can plan a resume in a fresh process."""
    return override(caps, sessions={"load": True, "resume": True})


def reports_usage(caps: Capabilities) -> Capabilities:
    """``streaming.token_usage`` on: the agent sends ``usage_update`` and ``PromptResponse.usage``
    (per turn: ``usage.source`` ``per_turn``)."""
    return override(caps, streaming={"token_usage": True}, usage={"source": "per_turn"})


def gemini_family_settings(selected_type: str | None, *, general: Mapping[str, JsonValue] = {}) -> JsonObject:
    """``settings.json`` switches: usage statistics, telemetry, auto-update (and its notice), IDE
    integration and folder trust off, plus the fork's own ``general`` keys; ``selectedType``
    only when Paddock supplies the key."""
    security: JsonObject = {"folderTrust": {"enabled": False}}
    if selected_type is not None:
        security["auth"] = {"selectedType": selected_type}
    return {
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False, **general},
        "security": security,
        "ide": {"enabled": False},
        # The bundled ripgrep download is a network fetch.
        "tools": {"useRipgrep": False},
    }
