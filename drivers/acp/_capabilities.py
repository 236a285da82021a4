"""Capability negotiation: ACP defaults, refined by the agent's ``initialize`` answer and the
modes it reports for its sessions."""

from __future__ import annotations

from collections.abc import Iterable

from paddock.contract import ACP_DEFAULT_CAPABILITIES, Capabilities

from .._capabilities import override
from . import _wire as w

__all__ = ["base_capabilities", "negotiate", "plan_mode_id", "with_modes"]


def base_capabilities(*, client_fs: bool, client_terminal: bool) -> Capabilities:
    """What an instance can do before its agent answered ``initialize``."""
    return override(ACP_DEFAULT_CAPABILITIES, tools={"client_fs": client_fs, "client_terminal": client_terminal})


def negotiate(caps: Capabilities, init: w.InitializeResult) -> Capabilities:
    """Fold the ``initialize`` result in: ``loadSession`` turns on ``sessions.load`` and
    ``sessions.resume`` (a loaded session continues in a fresh process); ``sessionCapabilities``
    ``resume`` / ``list`` / ``fork`` turn on their flags (``fork``: the session's ``session/fork``
    hook, unstable in ACP; ``fork_kind`` ``native``, else ``handoff``). ``promptCapabilities``
    says which attachments a turn takes (``image``; ``embeddedContext``: files). ``tools.mcp`` is
    on: every server reaches the agent as a stdio MCP relay (which the base protocol obliges every
    agent to take) and the relay verifies it; ``mcp_transports`` are what the agent takes natively
    (``mcpCapabilities``), for hosts that want to know."""
    agent = init.agentCapabilities
    sc = agent.sessionCapabilities
    mcp = agent.mcpCapabilities
    transports = ("stdio", *(("http",) if mcp.http else ()), *(("sse",) if mcp.sse else ()))
    prompt = agent.promptCapabilities
    # promptCapabilities.image: image content blocks; embeddedContext: resource blocks (a file's
    # text embedded). Text (and resource_link) blocks are baseline.
    kinds = (*(("image",) if prompt.image else ()), *(("file",) if prompt.embeddedContext else ()))
    return override(caps, sessions={
        "load": agent.loadSession,
        "resume": agent.loadSession or sc.resume is not None,
        "list": sc.list is not None,
        "fork": sc.fork is not None,
        "fork_kind": "native" if sc.fork is not None else "handoff",
    }, tools={"mcp": True, "mcp_transports": transports}, turns={"attachments": kinds})


def plan_mode_id(mode_ids: Iterable[str], configured: str | None) -> str | None:
    """The agent's mode implementing the ``plan`` interaction: the configured one when the agent
    offers it, else a mode named ``plan`` (gemini, qwen, claude-agent-acp) or ending in
    ``#plan`` (copilot's session-mode URLs)."""
    ids = list(mode_ids)
    if configured is not None:
        return configured if configured in ids else None
    return next((m for m in ids if m == "plan" or m.endswith("#plan")), None)


def with_modes(caps: Capabilities, mode_ids: Iterable[str], configured_plan: str | None) -> Capabilities:
    """A session reported its modes: ``planning.plan_mode`` is on when one implements ``plan``."""
    has_plan = plan_mode_id(mode_ids, configured_plan) is not None
    if has_plan == caps.planning.plan_mode:
        return caps
    return override(caps, planning={"plan_mode": has_plan})
