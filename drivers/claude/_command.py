"""How a ``claude`` instance runs the CLI: where the binary is (:func:`locate`), its command
line (:func:`build_argv`), its environment (:func:`child_env`) and a session's MCP server file
(:func:`write_mcp_config`). Spawns nothing."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from paddock.contract import JsonObject, McpServer, McpStdioServer
from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._claude_code import CLAUDE_CODE_QUIET, claude_code_env
from paddock.drivers._mcp_native import stdio_command, write_private_json
from paddock.drivers._registry import InstanceContext

from ._config import ClaudeConfig

__all__ = ["build_argv", "child_env", "locate", "mcp_config_path", "write_mcp_config"]


def locate(ctx: InstanceContext) -> BinaryLocation | str:
    """The configured ``binary``, else the pinned Claude Code in the peers dir, else ``claude``
    on the child's ``PATH``; or why none was found."""
    return find_binary(ctx.config.binary, peer="claude", env=ctx.env)


def build_argv(binary: str, config: ClaudeConfig, *, permission_mode: str, model: str | None,
               session_id: str, resume: bool, mcp_config: str | None = None,
               fork_of: str | None = None, max_budget_usd: float | None = None) -> list[str]:
    """The CLI command line (claude-stream-json.md section 1; ids as ``--flag=value``).
    ``mcp_config``: the session's MCP server file (:func:`write_mcp_config`), passed as
    ``--mcp-config <file> --strict-mcp-config`` (only those servers; never JSON on argv, which any
    user of the machine can read in ``/proc/<pid>/cmdline``). With ``fork_of`` the CLI copies that
    saved session into ``session_id``. ``max_budget_usd``: the CLI's own spending limit for this
    process (``--max-budget-usd``, print mode: ours), a second layer under Paddock's budget."""
    argv = [binary, *config.args, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
            "--include-partial-messages", "--permission-prompt-tool", "stdio", "--permission-mode", permission_mode]
    if permission_mode == "bypassPermissions":
        argv.append("--allow-dangerously-skip-permissions")
    if model:
        argv.append(f"--model={model}")
    if fork_of is not None:
        # Claude Code takes --session-id with --resume only together with --fork-session: the
        # copy gets the id we chose, so its cursor is known before the CLI answers.
        argv += [f"--resume={fork_of}", "--fork-session", f"--session-id={session_id}"]
    else:
        argv.append(f"--resume={session_id}" if resume else f"--session-id={session_id}")
    if config.max_turns is not None:
        argv += ["--max-turns", str(config.max_turns)]
    if config.system_prompt is not None:
        argv += ["--system-prompt", config.system_prompt]
    if config.append_system_prompt is not None:
        argv += ["--append-system-prompt", config.append_system_prompt]
    if mcp_config is not None:
        argv += ["--mcp-config", mcp_config, "--strict-mcp-config"]
    if max_budget_usd is not None:
        argv += ["--max-budget-usd", f"{max_budget_usd:g}"]
    return argv


def mcp_config_path(home: str, thread_id: str) -> Path:
    """The MCP server file of one thread in the instance home (one per thread, rewritten at each
    spawn, removed when the session ends)."""
    digest = hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:24]
    return Path(home) / "mcp" / f"claude-{digest}.json"


def write_mcp_config(path: Path, servers: Iterable[McpServer]) -> str:
    """Write ``servers`` in Claude Code's ``{"mcpServers": {...}}`` form to ``path`` (0600):
    stdio ``{type, command, args, env}`` (its config has no cwd field: a server with ``cwd`` runs
    through :func:`stdio_command`), HTTP ``{type: "http" | "sse", url, headers}``. Returns the
    path as text."""
    entries: dict[str, JsonObject] = {}
    for server in servers:
        if isinstance(server, McpStdioServer):
            command, args = stdio_command(server)
            entries[server.name] = {"type": "stdio", "command": command, "args": list(args), "env": dict(server.env)}
        else:
            entries[server.name] = {"type": server.transport, "url": server.url, "headers": dict(server.headers)}
    return str(write_private_json(path, {"mcpServers": entries}))


def child_env(ctx: InstanceContext) -> dict[str, str]:
    """The CLI's environment: the instance's, plus the model keys and quiet switches it does not
    set itself, and its own ``CLAUDE_CONFIG_DIR`` (created)."""
    env = dict(ctx.env)
    env.pop("CLAUDECODE", None)  # set inside a Claude Code shell; the child must not see it
    for key, value in {**CLAUDE_CODE_QUIET, **claude_code_env(ctx.access)}.items():
        env.setdefault(key, value)
    env.setdefault("CLAUDE_CONFIG_DIR", os.path.join(ctx.home, "claude"))
    os.makedirs(env["CLAUDE_CONFIG_DIR"], exist_ok=True)
    return env
