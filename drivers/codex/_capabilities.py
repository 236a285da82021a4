"""What a ``codex`` instance can do (``@openai/codex`` 0.171.0 app-server)."""

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

__all__ = ["CODEX_CAPABILITIES"]

CODEX_CAPABILITIES = Capabilities(
    # thread/resume continues a persisted thread in a fresh process (the model request replays
    # the history); one app-server serves every thread of the instance. thread/fork copies a
    # persisted thread: CodexAdapter.fork_thread (driver-level; not on the Runtime yet).
    sessions=SessionsCaps(resume=True, load=False, fork=True, list=False, shared_process=True),
    # thread/revert {beforeTurnId} (0.171.0 has no thread/rollback) replaces the persisted history
    # with the prefix before a turn: rollback_thread. It does not revert file changes.
    threads=ThreadsCaps(read=True, rollback=True, metadata=False),
    # turn/interrupt ends the turn `interrupted`; turn/steer adds input to the running turn.
    turns=TurnsCaps(interrupt=True, steer=True, queue=False),
    # item/agentMessage/delta, item/reasoning/*Delta, item/plan/delta, item/commandExecution/
    # outputDelta and thread/tokenUsage/updated.
    streaming=StreamingCaps(assistant_text=True, reasoning=True, plan_text=True, command_output=True, token_usage=True),
    # Codex runs commands and apply_patch itself; MCP servers are not configured by the driver.
    tools=ToolsCaps(commands=True, file_changes=True, mcp=False, web_search=True, client_fs=False,
                    client_terminal=False),
    # item/commandExecution|fileChange/requestApproval take acceptForSession;
    # item/tool/requestUserInput becomes user-input.requested.
    approvals=ApprovalsCaps(commands=True, file_changes=True, accept_for_session=True, user_input=True),
    # turn/plan/updated; plan (collaboration) mode needs the experimental collaborationMode field.
    planning=PlanningCaps(plan_updates=True, plan_mode=False),
    subagents=SubagentsCaps(tasks=False),
    # thread/compact/start: CodexAdapter.compact_thread (driver-level; not on the Runtime yet);
    # thread/tokenUsage/updated carries modelContextWindow.
    context=ContextCaps(compaction=True, context_window=True),
    # turn/diff/updated carries the turn's aggregated git diff.
    checkpointing=CheckpointingCaps(diffs=True, restore=False),
    # Thread, turn and item ids are Codex's (UUIDv7 / the model's call and message ids); a
    # request's native id is its approvalId, else its itemId (T3 Code correlates the same way),
    # not the JSON-RPC id, which Codex reuses per process (0, 1, ...).
    identity=IdentityCaps(thread="strong", turn="strong", item="strong", request="strong"),
    # approvalPolicy and the sandbox are enforced by Codex itself.
    runtime_policy=RuntimePolicyCaps(enforcement="native",
                                     modes=("approval-required", "auto-accept-edits", "full-access")),
)
"""The capabilities of every ``codex`` instance."""
