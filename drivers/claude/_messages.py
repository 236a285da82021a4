"""Messages to a ClaudeSessionActor (from the adapter and its own timer) and its settings."""

from __future__ import annotations

from dataclasses import dataclass

from paddock.contract import SendTurnInput

__all__ = ["Interrupt", "InterruptExpired", "Open", "Respond", "SendTurn", "SessionSettings"]


@dataclass(frozen=True, kw_only=True)
class SessionSettings:
    """What every session of an instance shares (immutable)."""

    driver: str
    instance_id: str
    interrupt_timeout: float
    permission_modes: dict[str, str]


class Open:
    pass


@dataclass(frozen=True)
class SendTurn:
    input: SendTurnInput


@dataclass(frozen=True)
class Interrupt:
    turn_id: str | None


@dataclass(frozen=True)
class Respond:
    request_id: str
    decision: str


@dataclass(frozen=True)
class InterruptExpired:
    turn_id: str
