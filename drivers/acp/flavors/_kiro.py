"""``kiro``: Kiro's CLI in ACP mode: ``kiro-cli acp``. Replay only: the CLI cannot be installed
here.

Facts (T3 Code's Kiro support): Kiro owns its login (``kiro-cli login``), advertises no auth
methods and answers ``authenticate`` with "Method not found": no ``authenticate`` call. Its own
tool trust stays in place and every remaining permission request goes to the client (T3 Code
passes ``--trust-all-tools`` for full access; one agent process serves every session of an
instance here, so full access is enforced at the client boundary instead). The model is the
session's ``models.currentModelId``; a session's or turn's ``model`` is applied with
``session/set_model``.

Traps:
- Kiro drops a ``session/cancel`` that arrives before its prompt is under way, and emits no
  update while its model reasons (so start evidence may never come): the cancel guard waits
  up to 2 s for evidence, then sends the cancel and re-sends it every 0.25 s within that bound
  until the prompt ends;
- tool inputs carry a ``__tool_use_purpose`` annotation that changes between identical calls.

| runtime / interaction mode | native mode | answered without asking the host |
|---|---|---|
| approval-required | the agent's default | read, search, think |
| auto-accept-edits | same | also edit, delete, move (client boundary) |
| full-access | same | everything (client boundary) |
| plan interaction | a mode named ``plan`` when offered | as the runtime mode says |
"""

from __future__ import annotations

from paddock.contract import Capabilities
from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._capabilities import override
from paddock.drivers._registry import InstanceContext
from paddock.drivers.acp import AcpFlavor

__all__ = ["KIRO_FLAVOR"]


def _locate(ctx: InstanceContext) -> BinaryLocation | str:
    where = find_binary(ctx.config.binary, peer=None, command="kiro-cli", env=ctx.env)
    return f"{where}; install Kiro's CLI and set `binary`" if isinstance(where, str) else where


def _capabilities(caps: Capabilities) -> Capabilities:
    # Kiro ignores `mcpServers` on session/new (it loads only its own MCP config): the servers
    # are still handed over, and their relays, never started, end not_connected with a warning.
    return override(caps, tools={"mcp": False, "mcp_transports": ()})


KIRO_FLAVOR = AcpFlavor(
    kind="kiro",
    locator=_locate,
    protocol_args=("acp",),
    # T3 Code switches Kiro's model with session/set_model when it differs from the session's
    # models.currentModelId.
    set_model=True,
    cancel_guard=2.0,
    cancel_retry=0.25,
    native_modes={"plan": "plan"},
    capability_overrides=_capabilities,
)
