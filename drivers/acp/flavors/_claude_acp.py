"""``claude-acp``: claude-agent-acp (pinned 0.49.0): ``node <dist/index.js>``, which drives its
bundled Claude Code through the Claude Agent SDK.

Model keys: Claude Code's own (shared with the ``claude`` driver): ``endpoint`` ->
``ANTHROPIC_BASE_URL`` (without ``/v1``), ``api_key`` -> ``ANTHROPIC_API_KEY``, ``model`` ->
``ANTHROPIC_MODEL``. No ``authenticate`` call (``authMethods: []``). Switches: non-essential
traffic, telemetry, auto-updater and error reporting off; ``IS_SANDBOX=1`` when running as root
(acp.md pitfall 6: else ``session/new`` fails with -32603 "Claude Code process exited with code 1").

| runtime / interaction mode | native mode (``session/set_mode``) | answered without asking the host |
|---|---|---|
| approval-required | ``default`` | read, search, think |
| auto-accept-edits | ``acceptEdits`` | also edit, delete, move |
| full-access | ``bypassPermissions`` | everything |
| plan interaction | ``plan`` | as the runtime mode says |

Traps (acp.md): ``tool_call`` is announced pending with empty input, then updated; option ids
changed between versions (``allow``/``reject`` in 0.49, ``allow-once``/``reject`` in 0.101), so
options are chosen by kind; a ``usage_update`` arrives AFTER the cancelled prompt's result (late
updates are accepted and attached, never a new item); 0.101 sends ``_auth/status_update``
(ignored). ``session/close`` tears the session down asynchronously (it interrupts its Claude Code
first): a ``session/load`` of the same id sent before the close's answer is answered from the
closing session, in its old mode (``bypassPermissions`` after full-access), and a ``set_mode`` is
acknowledged by it; the session then vanishes ("Session not found"). The driver loads only after
the close's answer (``_session._load``), when the load starts a fresh Claude Code in ``default``.
"""

from __future__ import annotations

from paddock.contract import Capabilities
from paddock.drivers._claude_code import CLAUDE_CODE_QUIET, claude_code_env
from paddock.drivers.acp import AcpFlavor

from ._common import loads_sessions, reports_usage

__all__ = ["CLAUDE_ACP_FLAVOR"]


def _capabilities(caps: Capabilities) -> Capabilities:
    # loadSession: true at initialize; usage_update + PromptResponse.usage on every turn.
    return reports_usage(loads_sessions(caps))


CLAUDE_ACP_FLAVOR = AcpFlavor(
    kind="claude-acp",
    peer="claude-acp",
    access_env=claude_code_env,
    # Claude Code connects the session's MCP servers in the background when the SDK asks for
    # non-blocking connection, so the first model request could go out before their tools exist;
    # MCP_CONNECTION_NONBLOCKING=false makes it wait for them (its own variable).
    quiet_env={**CLAUDE_CODE_QUIET, "MCP_CONNECTION_NONBLOCKING": "false"},
    root_env={"IS_SANDBOX": "1"},
    capability_overrides=_capabilities,
    native_modes={"approval-required": "default", "auto-accept-edits": "acceptEdits", "full-access": "bypassPermissions",
                  "plan": "plan"},
)
