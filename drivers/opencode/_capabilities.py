"""What an ``opencode`` instance can do (``opencode serve`` 1.18.33 over HTTP + SSE)."""

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

__all__ = ["OPENCODE_CAPABILITIES"]

OPENCODE_CAPABILITIES = Capabilities(
    # Prompting a saved `ses_…` id continues it, also on a new server process with the same data
    # dir (there is no resume call); nothing replays the history as events, so no `load`. One
    # server per instance carries every session (events demultiplexed by sessionID).
    # /session/{id}/fork copies a session: OpencodeAdapter.fork_thread (the Runtime has no fork
    # call yet).
    sessions=SessionsCaps(resume=True, load=False, fork=True, list=False, shared_process=True),
    # The driver keeps the turn snapshot; titles are set at creation (thread.metadata.updated).
    # /session/{id}/revert exists but is not wired to rollback_thread.
    threads=ThreadsCaps(read=True, rollback=False, metadata=True),
    # POST /session/{id}/abort ends the turn (MessageAbortedError, then session.idle).
    turns=TurnsCaps(interrupt=True, steer=False, queue=False),
    # message.part.delta streams text and reasoning; message.updated carries tokens and cost.
    # Tool output arrives whole in the completed tool part, never streamed.
    streaming=StreamingCaps(assistant_text=True, reasoning=True, plan_text=False, command_output=False,
                            token_usage=True),
    # OpenCode runs bash, edit/write/patch and webfetch itself; MCP servers are not configured
    # by the driver; its websearch tool needs OpenCode's own hosted provider.
    tools=ToolsCaps(commands=True, file_changes=True, mcp=False, web_search=False, client_fs=False,
                    client_terminal=False),
    # permission.asked -> request.opened, answered with /permission/{id}/reply (once | always |
    # reject); question.asked -> user-input.requested, answered with /question/{id}/reply.
    approvals=ApprovalsCaps(commands=True, file_changes=True, accept_for_session=True, user_input=True),
    planning=PlanningCaps(plan_updates=False, plan_mode=False),
    subagents=SubagentsCaps(tasks=False),
    # /session/{id}/summarize compacts a session: OpencodeAdapter.compact_thread (the Runtime has
    # no compaction call yet).
    context=ContextCaps(compaction=True, context_window=False),
    checkpointing=CheckpointingCaps(diffs=False, restore=False),
    # ses_ (session), prt_ (part = item) and per_/que_ (request) ids come from the server; turns
    # are ours.
    identity=IdentityCaps(thread="strong", turn="none", item="strong", request="strong"),
    # Permission rules per session (POST /session {permission}) are enforced by the server.
    runtime_policy=RuntimePolicyCaps(enforcement="native",
                                     modes=("approval-required", "auto-accept-edits", "full-access")),
)
"""The capabilities of every ``opencode`` instance."""
