"""Capability negotiation: ACP defaults, refined by the agent's ``initialize`` answer and the
modes it reports for its sessions."""

from __future__ import annotations

from collections.abc import Iterable

from paddock.contract import ACP_DEFAULT_CAPABILITIES, Capabilities

from .._capabilities import override
from . import _wire as w

__all__ = ["KNOWN_DEFECTS", "base_capabilities", "negotiate", "plan_mode_id", "with_modes"]

KNOWN_DEFECTS: dict[tuple[str, str], dict[str, str]] = {
    # claude-code-acp 0.16.0 (the ACP registry's snapshot; renamed claude-agent-acp since):
    # session/fork answers a new id whose Claude Code session file is written only once a turn
    # ran in the copy, and session/load checks that file first ("Session not found"), while
    # session/resume of it hangs. Conformance 16b failed on every run.
    ("@zed-industries/claude-code-acp", "0.16.0"): {
        "sessions.fork": "its session/fork copy cannot be loaded (Session not found) until a turn ran in it",
    },
}
"""Flags an agent advertises but does not honour, by ``agentInfo`` (name, version): they are
turned off after negotiation, so the runtime refuses or hands off instead of failing later."""


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
    (``mcpCapabilities``), for hosts that want to know. A flag :data:`KNOWN_DEFECTS` lists for
    the agent's name and version stays off."""
    agent = init.agentCapabilities
    sc = agent.sessionCapabilities
    mcp = agent.mcpCapabilities
    transports = ("stdio", *(("http",) if mcp.http else ()), *(("sse",) if mcp.sse else ()))
    prompt = agent.promptCapabilities
    # promptCapabilities.image: image content blocks; embeddedContext: resource blocks (a file's
    # text embedded). Text (and resource_link) blocks are baseline.
    kinds = (*(("image",) if prompt.image else ()), *(("file",) if prompt.embeddedContext else ()))
    info = init.agentInfo
    defects = KNOWN_DEFECTS.get((info.name or "", info.version or ""), {}) if info is not None else {}
    fork = sc.fork is not None and "sessions.fork" not in defects
    caps = override(caps, sessions={
        "load": agent.loadSession,
        "resume": agent.loadSession or sc.resume is not None,
        "list": sc.list is not None,
        "fork": fork,
        "fork_kind": "native" if fork else "handoff",
    }, tools={"mcp": True, "mcp_transports": transports}, turns={"attachments": kinds})
    for path in defects:
        section, flag = path.split(".")
        caps = override(caps, **{section: {flag: False}})
    return caps


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
