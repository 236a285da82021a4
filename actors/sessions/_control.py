"""The control messages every session actor understands (see :class:`SessionActor`).

The adapter ``ask``\\ s :class:`Open`, :class:`SendTurn`, :class:`Interrupt`, :class:`Respond` and
the optional thread operations (:class:`Steer`, :class:`AnswerUserInput`, :class:`Rollback`,
:class:`Fork`, :class:`Compact`; refused by the adapter unless the driver's capabilities have
them) with the caller's timeout; :class:`TurnTimerExpired` is
told by the timer thread (:meth:`SessionActor.schedule_turn_timer`), :class:`TransportWarning` by
the transport's reader thread. Frozen slotted dataclasses:
they never leave the process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paddock.contract import SendTurnInput

__all__ = [
    "AnswerUserInput", "Compact", "FailTurn", "Fork", "Interrupt", "Open", "Respond", "Rollback", "SendTurn", "Steer",
    "TransportWarning", "TurnTimerExpired",
]


@dataclass(frozen=True, slots=True)
class Open:
    """Open (or resume) the native session; answers the public :class:`Session`."""


@dataclass(frozen=True, slots=True)
class SendTurn:
    """Start a turn; answers a :class:`TurnStartResult`."""

    input: SendTurnInput


@dataclass(frozen=True, slots=True)
class Interrupt:
    """Interrupt the running turn (``turn_id`` ``None``: whichever runs); answers ``None``."""

    turn_id: str | None


@dataclass(frozen=True, slots=True)
class FailTurn:
    """End the running turn ``turn_id`` failed, for a cause the runtime found outside the agent
    (a model endpoint that takes no connection): one ``runtime.error`` (``code``, ``message``,
    ``detail``), the agent is asked to stop as for :class:`Interrupt`, and the turn's one
    ``turn.completed`` is ``failed`` with ``message`` unless the agent completed it first;
    answers ``None``. A no-op when ``turn_id`` is not running or is failing already."""

    turn_id: str
    code: str
    message: str
    detail: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Respond:
    """Answer the open request ``request_id`` with ``decision``; answers ``None``. ``decided_by``
    and ``surface`` go into its ``request.resolved`` (the audit)."""

    request_id: str
    decision: str
    decided_by: str = "person"
    surface: str | None = None


@dataclass(frozen=True, slots=True)
class Steer:
    """Add ``input`` to the running turn (``turns.steer``); answers that turn's
    :class:`TurnStartResult`."""

    input: SendTurnInput


@dataclass(frozen=True, slots=True)
class AnswerUserInput:
    """Answer the open user-input request ``request_id`` (``approvals.user_input``; question id
    or text -> answer text or list of texts); answers ``None``."""

    request_id: str
    answers: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rollback:
    """Drop the last ``num_turns`` turns (``threads.rollback``); answers the new
    :class:`ThreadSnapshot`."""

    num_turns: int


@dataclass(frozen=True, slots=True)
class Fork:
    """Copy the native session (``sessions.fork``), through turn ``at_turn`` (1-based, the turns
    the copy keeps; ``None``: all, and only a ``from_turn`` driver is sent one); answers the
    copy's :class:`ResumeCursor`."""

    at_turn: int | None = None


@dataclass(frozen=True, slots=True)
class Compact:
    """Summarize the native history to free context (``context.compaction``); answers what the
    driver's compaction returns (a :class:`TurnStartResult` when it runs as a turn, else
    ``None``)."""


@dataclass(frozen=True, slots=True)
class TransportWarning:
    """The transport under the session skipped something (a malformed or over-long line): told
    from the reader thread; the session emits it as ``runtime.warning`` ``transport.<code>``."""

    code: str
    message: str
    detail: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TurnTimerExpired:
    """The turn timer ``name`` of turn ``turn_id`` fired (told from the timer thread)."""

    name: str
    turn_id: str
