"""What the native CLI drivers (claude, codex, opencode) can do in common, and how a driver
states only where its agent differs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import msgspec

from paddock.contract import (
    ApprovalsCaps,
    Capabilities,
    CheckpointingCaps,
    ContextCaps,
    IdentityCaps,
    PlanningCaps,
    RuntimePolicyCaps,
    SessionsCaps,
    StreamingCaps,
    SubagentsCaps,
    ThreadsCaps,
    ToolsCaps,
    TurnsCaps,
    UsageCaps,
)

__all__ = ["NATIVE_CAPABILITIES", "override"]

G = TypeVar("G", bound=msgspec.Struct)

Flags = Mapping[str, bool | str | tuple[str, ...]]
"""Flags of one capability group, by name."""

NATIVE_CAPABILITIES = Capabilities(
    # A saved native session continues in a fresh process; nothing replays it as events.
    sessions=SessionsCaps(resume=True, load=False, fork=True, fork_kind="native", list=False, shared_process=True),
    threads=ThreadsCaps(read=True, rollback=False, metadata=False),
    # Attachments: each driver states the kinds its prompt building maps natively.
    turns=TurnsCaps(interrupt=True, steer=False, queue=False, attachments=(), steer_attachments=False),
    streaming=StreamingCaps(assistant_text=True, reasoning=True, plan_text=False, command_output=False,
                            token_usage=True),
    # The CLI runs commands and file edits itself; MCP servers are not configured by the driver.
    tools=ToolsCaps(commands=True, file_changes=True, mcp=False, web_search=True, client_fs=False,
                    client_terminal=False, mcp_transports=(), mcp_scope="session"),
    approvals=ApprovalsCaps(commands=True, file_changes=True, accept_for_session=True, user_input=True),
    planning=PlanningCaps(plan_updates=False, plan_mode=False),
    subagents=SubagentsCaps(tasks=False),
    context=ContextCaps(compaction=True, context_window=True),
    checkpointing=CheckpointingCaps(diffs=False, restore=False),
    # Sessions, items and requests are named by the CLI; turns are ours.
    identity=IdentityCaps(thread="strong", turn="none", item="strong", request="strong"),
    # The CLI enforces the runtime mode itself.
    runtime_policy=RuntimePolicyCaps(enforcement="native",
                                     modes=("approval-required", "auto-accept-edits", "full-access")),
    # Claude's result.usage and OpenCode's message tokens are per turn, each with a cost.
    usage=UsageCaps(source="per_turn", cost=True),
)
"""The common ground of the native CLI drivers; each states its differences with :func:`override`."""


def override(base: Capabilities, **groups: Flags) -> Capabilities:
    """``base`` with the named flags of the named groups replaced, e.g.
    ``override(caps, sessions={"fork": False, "fork_kind": "handoff"})``. Raises ``TypeError``
    naming a group or flag that does not exist, ``ValueError`` for flags that contradict each
    other (``sessions.fork`` and ``sessions.fork_kind``)."""
    changes = {name: _rebuilt(msgspec.structs.replace(getattr(base, name), **flags)) for name, flags in groups.items()}
    return msgspec.structs.replace(base, **changes)


def _rebuilt(group: G) -> G:
    """``group`` built again, so its ``__post_init__`` checks hold (``replace`` skips them)."""
    return type(group)(**msgspec.structs.asdict(group))
