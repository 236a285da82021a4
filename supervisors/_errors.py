"""The one place where pykka's failures of an ``ask`` become the PaddockError family.

httpcore's ``map_exceptions`` is the model: callers wrap the actor call in one context manager
instead of hand-writing ``except pykka.Timeout`` at every boundary::

    with map_exceptions("send_turn", limit, dead=SessionClosedError(thread_id, **where), where=where):
        return ref.ask(message, timeout=limit)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

import pykka

from paddock.contract import OperationTimeout

__all__ = ["map_exceptions"]


class map_exceptions:
    """Context manager: ``pykka.Timeout`` -> :class:`OperationTimeout` ``(operation, timeout,
    **where)`` (``where``: the ``driver``/``instance_id``/``thread_id`` the error names); ``pykka.ActorDeadError`` -> ``dead`` when given (say what a dead actor means
    there, e.g. :class:`SessionClosedError`), else it propagates unchanged (a caller that retries
    on a restarting actor catches it). Any other exception passes through. The original is
    suppressed (``from None``): it names pykka internals, never the caller's problem.

    Thread: any; holds no state beyond one call.
    """

    __slots__ = ("operation", "timeout", "dead", "where")

    def __init__(self, operation: str, timeout: float | None, *, dead: BaseException | None = None,
                 where: Mapping[str, str | None] | None = None) -> None:
        self.operation = operation
        self.timeout = timeout
        self.dead = dead
        self.where = where or {}

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            return
        if issubclass(exc_type, pykka.Timeout):
            raise OperationTimeout(self.operation, self.timeout or 0.0, **self.where) from None
        if issubclass(exc_type, pykka.ActorDeadError) and self.dead is not None:
            raise self.dead from None
