"""How a ``claude`` instance runs the CLI: where the binary is (:func:`locate`), its command
line (:func:`build_argv`) and its environment (:func:`child_env`). Spawns nothing."""

from __future__ import annotations

import os

from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._claude_code import CLAUDE_CODE_QUIET, claude_code_env
from paddock.drivers._registry import InstanceContext

from ._config import ClaudeConfig

__all__ = ["build_argv", "child_env", "locate"]


def locate(ctx: InstanceContext) -> BinaryLocation | str:
    """The configured ``binary``, else the pinned Claude Code in the peers dir, else ``claude``
    on the child's ``PATH``; or why none was found."""
    return find_binary(ctx.config.binary, peer="claude", env=ctx.env)


def build_argv(binary: str, config: ClaudeConfig, *, permission_mode: str, model: str | None,
               session_id: str, resume: bool, fork_of: str | None = None) -> list[str]:
    """The CLI command line (claude-stream-json.md section 1; ids as ``--flag=value``). With
    ``fork_of`` the CLI copies that saved session into ``session_id``."""
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
    return argv


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
