"""Sessions: the adapter plumbing every driver shares, the :class:`SessionActor` base (pending
requests, the turn tracker, exits), and the control messages the adapter asks session actors.
Depends on :mod:`paddock.actors.execution`, :mod:`~paddock.actors.events` and
:mod:`~paddock.actors.transports`."""

from ._control import (
    Interrupt as Interrupt,
    Open as Open,
    Respond as Respond,
    SendTurn as SendTurn,
    TransportWarning as TransportWarning,
    TurnTimerExpired as TurnTimerExpired,
)
from ._instance import SharedProcessAdapter as SharedProcessAdapter
from ._requests import PendingRequests as PendingRequests
from ._session import (
    SessionActor as SessionActor,
    SessionRecord as SessionRecord,
    SessionTable as SessionTable,
    StoppedSnapshots as StoppedSnapshots,
)
from ._turns import TurnTracker as TurnTracker

__all__ = [
    "Interrupt", "Open", "PendingRequests", "Respond", "SendTurn", "SessionActor", "SessionRecord", "SessionTable",
    "SharedProcessAdapter", "StoppedSnapshots", "TransportWarning", "TurnTimerExpired", "TurnTracker",
]
