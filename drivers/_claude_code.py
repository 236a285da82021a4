"""Claude Code's own variables for the common model keys and its quiet switches, shared by the
``claude`` driver (stream-json) and the ``claude-acp`` flavor (claude-agent-acp spawns the same
CLI through its SDK)."""

from __future__ import annotations

from ._access import ModelAccess

__all__ = ["CLAUDE_CODE_QUIET", "claude_code_env"]

CLAUDE_CODE_QUIET: dict[str, str] = {
    # claude-stream-json.md / README "Staying offline": without these it looks up
    # api.anthropic.com and queues telemetry files.
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def claude_code_env(access: ModelAccess) -> dict[str, str]:
    """``ANTHROPIC_BASE_URL`` (the Anthropic SDK appends ``/v1`` itself, so the URL goes without
    it), ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_MODEL`` for what is configured."""
    return access.variables(endpoint="ANTHROPIC_BASE_URL", api_key="ANTHROPIC_API_KEY", model="ANTHROPIC_MODEL")
