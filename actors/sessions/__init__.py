"""Sessions: the one adapter (:class:`SessionAdapter`) over its three process models (a shared
process, a process per session, a server per instance), the :class:`SessionActor` base (pending
requests, the turn tracker, exits), the shared-process session base, and the control messages
the adapter asks session actors. Depends on :mod:`paddock.actors.execution`,
:mod:`~paddock.actors.events` and :mod:`~paddock.actors.transports`."""

from ._adapter import SessionAdapter as SessionAdapter, StoppedSnapshots as StoppedSnapshots
from ._control import (
    AnswerUserInput as AnswerUserInput,
    Compact as Compact,
    Fork as Fork,
    FailTurn as FailTurn,
    Interrupt as Interrupt,
    Open as Open,
    Respond as Respond,
    Rollback as Rollback,
    SendTurn as SendTurn,
    Steer as Steer,
    TransportWarning as TransportWarning,
    TurnTimerExpired as TurnTimerExpired,
)
from ._per_session import ProcessPerSessionAdapter as ProcessPerSessionAdapter
from ._requests import PendingRequests as PendingRequests
from ._server import ServerAdapter as ServerAdapter, ServerHandle as ServerHandle
from ._resume import SharedSessionActor as SharedSessionActor, SharedState as SharedState
from ._session import (
    Mailbox as Mailbox,
    ProcessGone as ProcessGone,
    ProcessRestarting as ProcessRestarting,
    SessionActor as SessionActor,
    SessionRecord as SessionRecord,
)
from ._shared import (
    Incoming as Incoming,
    Req as Req,
    Router as Router,
    SharedLink as SharedLink,
    SharedProcessAdapter as SharedProcessAdapter,
)
from ._turns import TurnTracker as TurnTracker

__all__ = [
    "AnswerUserInput",
    "Compact",
    "Fork",
    "Incoming",
    "FailTurn",
    "Interrupt",
    "Mailbox",
    "Open",
    "PendingRequests",
    "ProcessGone",
    "ProcessRestarting",
    "ProcessPerSessionAdapter",
    "Req",
    "Respond",
    "Rollback",
    "Router",
    "SendTurn",
    "ServerAdapter",
    "ServerHandle",
    "SessionActor",
    "SessionAdapter",
    "SessionRecord",
    "SharedLink",
    "SharedSessionActor",
    "SharedState",
    "SharedProcessAdapter",
    "Steer",
    "StoppedSnapshots",
    "TransportWarning",
    "TurnTimerExpired",
    "TurnTracker",
]
