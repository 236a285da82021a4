"""What ``rt.queue()`` returns: the turns admission holds back (``paddock._threads._admission``)."""

from __future__ import annotations

import msgspec

__all__ = ["QueuedTurn"]


class QueuedTurn(msgspec.Struct, frozen=True, kw_only=True):
    """One turn waiting for a running-turn slot: ``position`` in its instance's queue (1: next),
    ``queued_at`` when it was queued (Unix time) and ``waited`` the seconds it has waited so far."""

    thread_id: str
    instance_id: str
    turn_id: str
    position: int
    queued_at: float
    waited: float
