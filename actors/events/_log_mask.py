"""Secret masking for the host's Python log: no secret reaches a ``paddock`` (or ``pykka``) record.

Events are masked by the hub's :class:`~paddock.actors.events.Redactor`; log records are not
events, yet they carry the same texts (a supervisor's ``child 'agent' failed: ProcessError(…)``
quotes the agent's stderr, which may hold the key it refused). :data:`LOG_MASK` is one
``logging.Filter`` for the whole process. It masks, in each record's message (formatted, then
put back with no args), its traceback text and its stack text, the union of every secret
registered by a live hub (:meth:`HubHandle.add_secrets` registers them, :meth:`HubHandle.close`
withdraws them) plus the common credential shapes.

A logger's filter sees only the records logged on that very logger, not its descendants'. So
the filter is attached to ``paddock`` and ``pykka`` (whose actor loop logs our actors' failures
with their tracebacks) and to every logger below them that exists when secrets are registered.
Paddock's modules create their loggers when imported, which is before a runtime registers an
instance's secrets.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from ._redact import Redactor

__all__ = ["LOG_MASK", "LogMask"]

MASKED_LOGGERS = ("paddock", "pykka")


class LogMask(logging.Filter):
    """A filter that masks secrets in log records and never drops one.

    :meth:`filter` runs in whatever thread logs; :meth:`add`, :meth:`discard` and
    :meth:`install` are safe from any thread.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._owners: dict[object, tuple[str, ...]] = {}
        self._redactor = Redactor()  # swapped whole on change: filter() reads it without the lock

    def add(self, owner: object, secrets: Iterable[str]) -> None:
        """Mask ``secrets`` from now on, on behalf of ``owner`` (added to what it registered),
        and attach the filter to every masked logger that exists now."""
        with self._lock:
            self._owners[owner] = (*self._owners.get(owner, ()), *secrets)
            self._rebuild()
        self.install()

    def discard(self, owner: object) -> None:
        """Stop masking what ``owner`` registered (other owners' equal values stay masked)."""
        with self._lock:
            if self._owners.pop(owner, None) is not None:
                self._rebuild()

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values masked now, besides the common shapes."""
        return self._redactor.secrets

    def _rebuild(self) -> None:
        self._redactor = Redactor(value for values in self._owners.values() for value in values)

    def install(self) -> None:
        """Attach the filter to ``paddock``, ``pykka`` and every existing logger below them."""
        names = [name for name in list(logging.Logger.manager.loggerDict)  # list(): one atomic copy
                 if any(name.startswith(top + ".") for top in MASKED_LOGGERS)]
        for name in {*MASKED_LOGGERS, *names}:
            logger = logging.getLogger(name)
            if self not in logger.filters:
                logger.addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        mask = self._redactor.mask
        try:
            message = record.getMessage()
        except Exception:
            return True  # a bad format string: the handler reports it as logging always does
        masked = mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            masked = mask(text)
            if masked != text:
                record.exc_text = masked  # formatters print exc_text when it is set
        elif record.exc_text:
            record.exc_text = mask(record.exc_text)
        if record.stack_info:
            record.stack_info = mask(record.stack_info)
        return True


LOG_MASK = LogMask()
"""The process's one log mask."""
