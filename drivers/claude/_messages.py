"""The settings every ClaudeSessionActor of an instance shares, and what one session keeps
(:class:`ClaudeState`); its messages are the shared control messages of :mod:`paddock.actors`
and the process link's (:mod:`._link`)."""

from __future__ import annotations

from dataclasses import dataclass

from paddock.contract import TokenUsage

from ._link import ProcessLink

__all__ = ["ClaudeState", "SessionSettings"]


@dataclass(frozen=True, kw_only=True)
class SessionSettings:
    """What every session of an instance shares (immutable)."""

    driver: str
    instance_id: str
    interrupt_timeout: float
    permission_modes: dict[str, str]


@dataclass(slots=True, kw_only=True)
class ClaudeState:
    """One Claude Code session's state: set at start by the adapter, then written by its actor."""

    link: ProcessLink
    """The session's CLI process."""
    session_id: str
    """The CLI's session id (``--session-id``/``--resume``)."""
    resumed: bool = False
    resume_failed: bool = False
    resume_detail: str | None = None
    """Why the resume failed and a new session started instead."""
    permission_mode: str
    """The native permission mode at start."""
    runtime_permission_mode: str
    """The native mode of the runtime mode, outside plan."""
    auto_allow: bool = False
    """Answer every ask with allow (full-access, where the CLI's bypass mode is refused)."""
    usage: TokenUsage | None = None
    """The thread's cumulative token usage."""
    mcp_config: str | None = None
    """The session's MCP server file (0600; removed when the session ends), ``None`` without servers."""
