"""``copilot``: GitHub Copilot CLI (pinned 1.0.102) in ACP mode: ``<copilot> --acp`` (native).

Model keys (bring-your-own provider, OpenAI Chat Completions): ``endpoint`` ->
``COPILOT_PROVIDER_BASE_URL`` (with ``/v1``) plus ``COPILOT_PROVIDER_TYPE=openai`` and
``COPILOT_OFFLINE=true`` (no GitHub auth, telemetry, MCP registry or auto-update: a configured
endpoint replaces the GitHub service), ``api_key`` -> ``COPILOT_PROVIDER_API_KEY``, ``model`` ->
``COPILOT_MODEL``. Without an endpoint: the CLI's own GitHub login (no switch is set then: the
notes know no telemetry or update variable apart from ``COPILOT_OFFLINE``, which also turns
GitHub auth off). No ``authenticate`` call.

| runtime / interaction mode | native mode (``session/set_mode``) | answered without asking the host |
|---|---|---|
| approval-required | ``…/session-modes#agent`` (``allow_all`` stays off) | read, search, think |
| auto-accept-edits | ``…#agent`` | also edit, delete, move (at the client boundary) |
| full-access | ``…#agent`` | everything (the client answers every ask) |
| plan interaction | ``…#plan`` | as the runtime mode says |

Traps (acp.md): a model HTTP error ends the prompt ``end_turn`` with the error as assistant text
(``"Error: 400 mock bad request"``, or after 5 retries ``"Error: Failed to get response from the
AI model; …"``): :func:`failed_text` turns that into a ``failed`` turn; ``session_info_update``
carries the first prompt as title; ``config_option_update`` arrives at the first prompt; stdio
MCP servers from the client are rejected (only HTTP/SSE are taken), so the session hands each
server as an HTTP-serving MCP relay of its own.
"""

from __future__ import annotations

import re

from paddock.contract import Capabilities
from paddock.drivers._access import ModelAccess
from paddock.drivers._capabilities import override
from paddock.drivers.acp import AcpFlavor

from ._common import loads_sessions, reports_usage

__all__ = ["COPILOT_FLAVOR", "failed_text"]

_MODES = "https://agentclientprotocol.com/protocol/session-modes#"
# Copilot's own status lines inside the assistant text: "Info: …" while retrying, "Error: …" last.
_ERROR = re.compile(r"(?:\A|\n|(?<=\.\.\.))Error: (?P<detail>[^\n]+)\s*\Z")


def failed_text(text: str) -> str | None:
    """The model error in a turn's last assistant message, or ``None``: copilot reports a failed
    model call as text starting with ``Error: `` (after any ``Info: … Retrying...`` lines)."""
    if not text.startswith(("Error: ", "Info: ")):
        return None
    match = _ERROR.search(text)
    return None if match is None else match.group("detail").strip()


def _access_env(access: ModelAccess) -> dict[str, str]:
    env: dict[str, str] = {}
    base = access.base_url("/v1")
    if base is not None:
        env.update(COPILOT_PROVIDER_BASE_URL=base, COPILOT_PROVIDER_TYPE="openai", COPILOT_OFFLINE="true")
    if access.api_key:
        env["COPILOT_PROVIDER_API_KEY"] = access.api_key
    if access.model:
        env["COPILOT_MODEL"] = access.model
    return env


def _capabilities(caps: Capabilities) -> Capabilities:
    # loadSession: true at initialize; usage_update + PromptResponse.usage on every turn.
    caps = reports_usage(loads_sessions(caps))
    # Copilot rejects stdio MCP servers from the client (its log: "Rejecting non-http/sse MCP
    # server"): it takes only the HTTP and SSE it advertises in mcpCapabilities.
    transports = tuple(t for t in caps.tools.mcp_transports if t != "stdio")
    return override(caps, tools={"mcp_transports": transports, "mcp": caps.tools.mcp and bool(transports)})


COPILOT_FLAVOR = AcpFlavor(
    kind="copilot",
    peer="copilot",
    protocol_args=("--acp",),
    access_env=_access_env,
    quiet_env={"NO_BROWSER": "1"},
    capability_overrides=_capabilities,
    native_modes={"approval-required": _MODES + "agent", "auto-accept-edits": _MODES + "agent",
                  "full-access": _MODES + "agent", "plan": _MODES + "plan"},
    failed_text=failed_text,
    # stdio MCP servers are rejected: each reaches copilot as an HTTP-serving relay
    mcp_stdio=False,
)
