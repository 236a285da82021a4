"""Read a state directory that another process owns: :class:`StateReader`.

A state directory has one owner (the open :class:`~paddock.Runtime`, which holds its lock). Any
number of readers, in this process or others, read its event log and bindings at the same time
without the lock: SQLite's WAL mode lets them read committed events while the owner appends.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from paddock.actors import LogReader, type_filter
from paddock.contract import (
    Event,
    PersistenceError,
    SessionNotFoundError,
    ThreadSnapshot,
    ValidationError,
    decode_event,
    fold_thread,
)
from paddock._state._store import Binding, BindingStore

__all__ = ["LogFollower", "StateReader"]

_BATCH = 5_000


class LogFollower:
    """Events of the log from ``from_seq`` on, in ``seq`` order, each once; then new ones as the
    owner commits them (polled every ``poll`` seconds: SQLite has no cross-process wake-up).

    :meth:`get` returns the next event or ``None`` after ``timeout``; iteration blocks until
    :meth:`close`. One consumer thread at a time; :meth:`close` from any thread.
    """

    def __init__(self, log_path: str, *, from_seq: int, thread_id: str | None, instance_id: str | None,
                 types: frozenset[str] | None, poll: float) -> None:
        self._reader = LogReader(log_path, thread_id=thread_id, instance_id=instance_id, types=types)
        self._next = max(1, from_seq)
        self._poll = poll
        self._pending: list[tuple[int, bytes]] = []
        self._closed = threading.Event()

    def get(self, timeout: float | None = None) -> Event | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._pending:
            if self._closed.is_set():
                return None
            self._pending = self._reader.read(self._next, 2**62, _BATCH)
            self._pending.reverse()
            if self._pending:
                break
            wait = self._poll if deadline is None else min(self._poll, deadline - time.monotonic())
            if wait <= 0:
                return None
            self._closed.wait(wait)
        seq, body = self._pending.pop()
        self._next = seq + 1
        return decode_event(body)

    def __iter__(self) -> Iterator[Event]:
        while not self._closed.is_set():
            event = self.get(timeout=None)
            if event is not None:
                yield event

    def close(self) -> None:
        self._closed.set()
        self._reader.close()

    def __enter__(self) -> LogFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StateReader:
    """A reader of one state directory; needs no ownership (thread-safe).

    ``read_thread`` and ``subscribe(from_seq=...)`` mirror the :class:`~paddock.Runtime` methods
    of the same names, from the committed log. Raises :class:`PersistenceError` when the state
    directory has no event log.
    """

    def __init__(self, state_dir: str | os.PathLike[str] | None = None) -> None:
        self.state_dir = Path(state_dir or os.environ.get("PADDOCK_STATE_DIR") or ".paddock").resolve()
        self._log = self.state_dir / "events.db"
        if not self._log.is_file():
            raise PersistenceError("read the event log", f"{self._log} does not exist")

    def bindings(self) -> list[Binding]:
        """Every thread binding (empty when the directory has no binding store)."""
        db = self.state_dir / "paddock.db"
        if not db.is_file():
            return []
        store = BindingStore(db)
        try:
            return store.list()
        finally:
            store.close()

    def read_thread(self, thread_id: str) -> ThreadSnapshot:
        """The thread's turns and items as committed so far; :class:`SessionNotFoundError` for a
        thread the log never saw."""
        reader = LogReader(str(self._log), thread_id=thread_id)
        try:
            rows = reader.read(0, 2**62, 10_000_000)
        finally:
            reader.close()
        if not rows:
            raise SessionNotFoundError(thread_id)
        return fold_thread(thread_id, (decode_event(body) for _, body in rows))

    def subscribe(self, thread_id: str | None = None, instance_id: str | None = None,
                  types: Iterable[str] | None = None, from_seq: int = 1, *, poll: float = 0.05) -> LogFollower:
        """Follow the log from ``from_seq`` (default: its start), filtered like
        ``Runtime.subscribe``. Close the follower when done."""
        if not isinstance(from_seq, int) or isinstance(from_seq, bool) or from_seq < 0:
            raise ValidationError("subscribe", f"from_seq must be an integer >= 0, not {from_seq!r}")
        return LogFollower(str(self._log), from_seq=max(from_seq, 1), thread_id=thread_id, instance_id=instance_id,
                           types=type_filter(types), poll=poll)
