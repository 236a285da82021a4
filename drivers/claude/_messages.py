"""The settings every ClaudeSessionActor of an instance shares (its messages are the shared control
messages of :mod:`paddock.actors` and the process link's, :mod:`._link`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SessionSettings"]


@dataclass(frozen=True, kw_only=True)
class SessionSettings:
    """What every session of an instance shares (immutable)."""

    driver: str
    instance_id: str
    interrupt_timeout: float
    permission_modes: dict[str, str]
