"""What an ``opencode`` instance can do (``opencode serve`` 1.18.33 over HTTP + SSE)."""

from __future__ import annotations

from .._capabilities import NATIVE_CAPABILITIES, override

__all__ = ["OPENCODE_CAPABILITIES"]

# Also true here: prompting a saved `ses_…` id continues it, also on a new server process with
# the same data dir (there is no resume call). One server per instance carries every session
# (events demultiplexed by sessionID). /session/{id}/fork copies a whole session (fork_kind
# native: the driver keeps no message id per turn to fork from). POST /session/{id}/abort ends
# the turn (MessageAbortedError, then session.idle). message.part.delta streams text and
# reasoning; message.updated carries tokens and cost; tool output arrives whole in the completed
# tool part, never streamed. permission.asked -> request.opened, answered with
# /permission/{id}/reply (once | always | reject); question.asked -> user-input.requested,
# answered with /question/{id}/reply. /session/{id}/summarize compacts a session
# (context.compaction). ses_ (session), prt_
# (part = item) and per_/que_ (request) ids come from the server; turns are ours. Permission rules
# per session (POST /session {permission}) are enforced by the server.
OPENCODE_CAPABILITIES = override(
    NATIVE_CAPABILITIES,
    # The driver keeps the turn snapshot; titles are set at creation (thread.metadata.updated).
    # /session/{id}/revert exists but is not wired to rollback_thread.
    threads={"metadata": True},
    # OpenCode runs bash, edit/write/patch and webfetch itself; its websearch tool needs
    # OpenCode's own hosted provider. POST /mcp adds local (stdio) and remote servers (streamable
    # HTTP, falling back to SSE); GET /mcp reads back what loaded. MCP servers belong to the
    # server process and directory, so every session of the instance in that directory shares
    # them (drivers/opencode/_mcp.py).
    tools={"web_search": False, "mcp": True, "mcp_transports": ("stdio", "http", "sse"), "mcp_scope": "instance"},
    # message.updated carries tokens and cost but no context window.
    context={"context_window": False},
    # A prompt's parts take `file` parts (mime + data: URL): images reach the model as image
    # parts, text files are inlined. No steering.
    turns={"attachments": ("image", "file")},
)
"""The capabilities of every ``opencode`` instance."""
