"""What a ``claude`` instance can do (Claude Code 2.1.197 in stream-json mode)."""

from __future__ import annotations

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
)

__all__ = ["CLAUDE_CAPABILITIES"]

CLAUDE_CAPABILITIES = Capabilities(
    # `--resume=<session_id>` continues a saved session in a fresh process (same cwd and
    # CLAUDE_CONFIG_DIR); nothing replays the history as events, so no `load`. One process per
    # session: stream-json carries exactly one session.
    sessions=SessionsCaps(resume=True, load=False, fork=False, list=False, shared_process=False),
    # The driver keeps the turn snapshot; stream-json has no rollback request.
    threads=ThreadsCaps(read=True, rollback=False, metadata=False),
    # control_request `interrupt` ends the turn with result `error_during_execution`.
    turns=TurnsCaps(interrupt=True, steer=False, queue=False),
    # `--include-partial-messages` streams text_delta and thinking_delta; `result.usage` gives
    # per-turn tokens. Tool output arrives whole in the tool_result, never streamed.
    streaming=StreamingCaps(assistant_text=True, reasoning=True, plan_text=False, command_output=False,
                            token_usage=True),
    # The CLI runs Bash, Write/Edit and WebSearch itself; MCP servers are not configured by the driver.
    tools=ToolsCaps(commands=True, file_changes=True, mcp=False, web_search=True, client_fs=False,
                    client_terminal=False),
    # `--permission-prompt-tool stdio` turns every ask into control_request `can_use_tool`;
    # accept_for_session answers allow + `updatedPermissions` from its `permission_suggestions`.
    approvals=ApprovalsCaps(commands=True, file_changes=True, accept_for_session=True, user_input=False),
    planning=PlanningCaps(plan_updates=False, plan_mode=False),
    subagents=SubagentsCaps(tasks=False),
    # `result.modelUsage.<model>.contextWindow`.
    context=ContextCaps(compaction=False, context_window=True),
    checkpointing=CheckpointingCaps(diffs=False, restore=False),
    # session_id (we choose it with --session-id, the CLI keeps it), tool_use ids and message ids
    # come from the CLI, and so do can_use_tool request ids (UUIDs); turns are ours.
    identity=IdentityCaps(thread="strong", turn="none", item="strong", request="strong"),
    # `--permission-mode` is enforced by the CLI; asks come to the host as can_use_tool.
    runtime_policy=RuntimePolicyCaps(enforcement="native",
                                     modes=("approval-required", "auto-accept-edits", "full-access")),
)
"""The capabilities of every ``claude`` instance."""
