"""The ``[instances.<id>]`` table of a ``claude`` instance and the runtime-mode mapping."""

from __future__ import annotations

from paddock.drivers._registry import TimedDriverConfig

__all__ = ["DEFAULT_PERMISSION_MODES", "ClaudeConfig"]

DEFAULT_PERMISSION_MODES: dict[str, str] = {
    # claude-stream-json.md section 8 (the T3 Code mapping).
    "approval-required": "default",
    "auto-accept-edits": "acceptEdits",
    "full-access": "bypassPermissions",
    "plan": "plan",
}
"""Runtime mode (and the ``plan`` interaction) -> the CLI's ``--permission-mode``."""


class ClaudeConfig(TimedDriverConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The common keys (``driver``, ``binary``, ``home``, ``env``, ``args``, ``pass_env``; with no
    ``binary`` the pinned Claude Code in the peers dir, else ``claude`` on the child's ``PATH``;
    ``args`` go right after the binary; ``endpoint``/``api_key``/``model`` become
    ``ANTHROPIC_BASE_URL`` (without ``/v1``), ``ANTHROPIC_API_KEY`` and the default ``--model``)
    plus:

    - ``model``: the default ``--model`` (a session's or turn's own model wins);
    - ``permission_modes``: runtime mode or ``plan`` -> ``--permission-mode`` value, on top of
      :data:`DEFAULT_PERMISSION_MODES`;
    - ``max_turns``: ``--max-turns`` (model calls per turn), ``None``: the CLI's default;
    - ``system_prompt`` / ``append_system_prompt``: ``--system-prompt`` / ``--append-system-prompt``
      (``None``: the CLI's own prompt);
    - ``start_timeout``: seconds for the CLI to start and answer ``initialize``;
    - ``request_timeout``: seconds a host operation waits for the session when it names no timeout;
    - ``interrupt_timeout``: seconds after an ``interrupt`` before a turn the CLI never ends is
      completed ``interrupted`` by the driver;
    - ``shutdown_timeout``: seconds between closing stdin and SIGKILL when a session stops.
    """

    binary: str | None = None
    permission_modes: dict[str, str] = {}
    max_turns: int | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
