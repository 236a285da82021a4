"""What a ``claude`` instance can do (Claude Code 2.1.197 in stream-json mode)."""

from __future__ import annotations

from .._capabilities import NATIVE_CAPABILITIES, override

__all__ = ["CLAUDE_CAPABILITIES"]

# Also true here: `--include-partial-messages` streams text_delta and thinking_delta and
# `result.usage` gives per-turn tokens; tool output arrives whole in the tool_result, never
# streamed. The CLI runs Bash, Write/Edit and WebSearch itself. The driver keeps the turn
# snapshot; stream-json has no rollback request. control_request `interrupt` ends the turn with
# result `error_during_execution`. `result.modelUsage.<model>.contextWindow`. session_id (we
# choose it with --session-id, the CLI keeps it), tool_use ids and message ids come from the CLI,
# and so do can_use_tool request ids (UUIDs); turns are ours. `--permission-mode` is enforced by
# the CLI; asks come to the host as can_use_tool.
CLAUDE_CAPABILITIES = override(
    NATIVE_CAPABILITIES,
    # `--resume=<session_id>` continues a saved session in a fresh process (same cwd and
    # CLAUDE_CONFIG_DIR); with `--fork-session --session-id=<new>` it copies it whole (no flag
    # forks from a past turn). One process per session: stream-json carries exactly one session.
    sessions={"fork_kind": "native", "shared_process": False},
    # `--permission-prompt-tool stdio` turns every ask into control_request `can_use_tool`;
    # accept_for_session answers allow + `updatedPermissions` from its `permission_suggestions`.
    # AskUserQuestion arrives as a can_use_tool ask too, not as user-input.requested.
    approvals={"user_input": False},
    # `/compact` sent as a stream-json user message runs Claude Code's own compaction.
    context={"compaction": True},
    # A stream-json user message's content takes Messages API image blocks (base64 source). No
    # file kind: the CLI has no embedded-document block; steering has no user message of its own.
    turns={"attachments": ("image",)},
    # --mcp-config <0600 file> --strict-mcp-config takes stdio, http and sse servers; what loaded
    # is read back (mcp_status control request, system/init mcp_servers). One process per
    # session, so the servers are the session's own.
    tools={"mcp": True, "mcp_transports": ("stdio", "http", "sse"), "mcp_scope": "session"},
)
"""The capabilities of every ``claude`` instance."""
