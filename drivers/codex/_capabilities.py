"""What a ``codex`` instance can do (``@openai/codex`` 0.171.0 app-server)."""

from __future__ import annotations

from .._capabilities import NATIVE_CAPABILITIES, override

__all__ = ["CODEX_CAPABILITIES"]

# Also true here: thread/resume continues a persisted thread in a fresh process (the model
# request replays the history); one app-server serves every thread of the instance.
# turn/interrupt ends the turn `interrupted`. item/tool/requestUserInput becomes
# user-input.requested; item/commandExecution|fileChange/requestApproval take acceptForSession.
# thread/compact/start runs a compaction turn (context.compaction); thread/tokenUsage/updated carries modelContextWindow. approvalPolicy and the sandbox are
# enforced by Codex itself.
CODEX_CAPABILITIES = override(
    NATIVE_CAPABILITIES,
    # thread/tokenUsage/updated carries the thread's running total (after each model response,
    # also mid-turn) and no cost.
    usage={"source": "cumulative", "cost": False},
    # thread/fork copies a persisted thread; its `lastTurnId` (inclusive) leaves later turns out.
    sessions={"fork_kind": "from_turn"},
    # thread/revert {beforeTurnId} (0.171.0 has no thread/rollback) replaces the persisted history
    # with the prefix before a turn: rollback_thread. It does not revert file changes.
    threads={"rollback": True},
    # turn/steer adds input to the running turn. UserInput takes `localImage` (a path) and
    # `image` (a URL); both turn/start and turn/steer take the same input list.
    turns={"steer": True, "attachments": ("image",), "steer_attachments": True},
    # item/plan/delta and item/commandExecution/outputDelta, besides item/agentMessage/delta,
    # item/reasoning/*Delta and thread/tokenUsage/updated.
    streaming={"plan_text": True, "command_output": True},
    # turn/plan/updated; plan (collaboration) mode needs the experimental collaborationMode field.
    planning={"plan_updates": True},
    # turn/diff/updated carries the turn's aggregated git diff.
    checkpointing={"diffs": True},
    # Thread, turn and item ids are Codex's (UUIDv7 / the model's call and message ids); a
    # request's native id is its approvalId, else its itemId (T3 Code correlates the same way),
    # not the JSON-RPC id, which Codex reuses per process (0, 1, ...).
    identity={"turn": "strong"},
    # Per-thread config.mcp_servers on thread/start and thread/resume (stdio and streamable
    # HTTP; Codex has no legacy SSE client), read back with mcpServerStatus/list {threadId} and
    # mcpServer/startupStatus/updated: the servers are the thread's own.
    tools={"mcp": True, "mcp_transports": ("stdio", "http"), "mcp_scope": "session"},
    # auto-accept-edits maps to approvalPolicy `on-request`, under which Codex runs a sandboxed
    # command without asking (a prompt comes only when the model asks for escalation): it cannot
    # ask before every command, so the runtime refuses that mode (never fail open).
    runtime_policy={"modes": ("approval-required", "full-access")},
)
"""The capabilities of every ``codex`` instance."""
