"""Execution: the :class:`Dispatcher` (many actors on a bounded, elastic pool of worker threads)
and the shared timer thread. Depends on nothing else in :mod:`paddock.actors`."""

from ._dispatch import (
    DispatchActor as DispatchActor,
    Dispatcher as Dispatcher,
    SupervisedDispatchActor as SupervisedDispatchActor,
    blocking as blocking,
    default_dispatcher as default_dispatcher,
)
from ._timers import TimerEntry as TimerEntry, timers as timers

__all__ = ["DispatchActor", "Dispatcher", "SupervisedDispatchActor", "TimerEntry", "blocking", "default_dispatcher", "timers"]
