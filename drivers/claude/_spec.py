"""The registry record of the ``claude`` driver."""

from __future__ import annotations

from typing import Any

from drivers._registry import DriverSpec, resolve_binary

from ._capabilities import CLAUDE_CAPABILITIES
from ._config import ClaudeConfig

__all__ = ["claude_driver_spec", "probe"]


def probe(ctx: Any) -> str | None:
    """``None`` when the configured binary resolves on the child's PATH (or as a path), else why
    not. Cheap: spawns nothing."""
    try:
        _, reason = resolve_binary(ctx.config.binary, ctx.env)
    except Exception as exc:  # a probe never raises
        return f"cannot resolve the Claude Code binary: {exc!r}"
    return reason


def _create(ctx: Any) -> Any:
    from ._adapter import ClaudeAdapter

    return ClaudeAdapter(ctx)


def claude_driver_spec() -> DriverSpec:
    """The ``claude`` driver: Claude Code in stream-json mode, one process per session."""
    return DriverSpec(kind="claude", config_type=ClaudeConfig, create=_create, probe=probe,
                      capabilities=CLAUDE_CAPABILITIES)
