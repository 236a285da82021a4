"""``on_usage_limit = "failover"``: hand a thread whose turn met a usage limit over to another
instance, through the hand-off ``fork_thread`` does across instances and drivers.

:class:`~paddock._threads._waits.UsageLimitWaits` decides when (the failed turn's
``turn.completed``) and where (the first instance of the ``failover`` list that is not the
thread's own, not limited itself and available); :func:`hand_over` makes the copy. The copy is a
new thread, ``<thread>@<instance>`` (``-2``, ``-3``, ... when that id is taken), whose first turn
carries the source's transcript up to the turn before the failed one; the source thread stays
bound where it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paddock._operations._table import ForkThreadBody, ReadThreadBody

if TYPE_CHECKING:
    from paddock._threads._directory import ThreadDirectory

__all__ = ["hand_over"]

_START_TIMEOUT = 120.0


def hand_over(threads: ThreadDirectory, thread_id: str, turn_id: str | None, target: str) -> str:
    """Copy ``thread_id`` onto instance ``target`` (a hand-off; the transcript leaves out the turn
    ``turn_id`` that met the limit, unless it is the thread's first) and return the new thread's
    id. Blocks while the new session starts (thread: the caller's, never an actor's). Raises the
    ``PaddockError`` of ``fork_thread``: :class:`InstanceNotFoundError` for an unavailable
    instance, a start failure, ..."""
    turns = threads.read_thread(ReadThreadBody(thread_id=thread_id, timeout=_START_TIMEOUT)).turns
    index = next((i for i, t in enumerate(turns) if t.turn_id == turn_id), None)
    bound = {b.thread_id for b in threads.list_threads()}
    new_id = f"{thread_id}@{target}"
    n = 1
    while new_id in bound or threads.has_session(new_id):
        n += 1
        new_id = f"{thread_id}@{target}-{n}"
    threads.fork_thread(ForkThreadBody(thread_id=thread_id, new_thread_id=new_id, at_turn=index or None,
                                       instance=target, timeout=_START_TIMEOUT))
    return new_id
