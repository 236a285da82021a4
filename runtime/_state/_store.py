"""The runtime's SQLite store: thread bindings in ``state_dir/paddock.db``.

The append-only event log is owned by the EventHub (``actors``), because the hub writes it before
it publishes; it is re-exported here as part of the store.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable
from typing import Any
from pathlib import Path

import msgspec

from paddock.actors import EventLog, LogReader
from paddock.contract import PersistenceError, ResumeCursor

__all__ = ["RESUMABLE", "Binding", "BindingStore", "EventLog", "LogReader"]

log = logging.getLogger("paddock._state._store")

RESUMABLE = frozenset({"starting", "ready", "running", "idle", "closed", "exited", "error"})
"""Binding statuses from which ``send_turn`` resumes the thread on demand (not ``stopped``)."""


class Binding(msgspec.Struct, frozen=True, kw_only=True):
    """One thread's persisted binding to an instance.

    ``status``: ``starting | ready | running`` while live; ``idle`` (reaped), ``closed`` (the
    runtime closed), ``exited`` (the agent died) and ``error`` resume on demand; ``stopped``
    (stopped on purpose) resumes only through ``start_session``.
    """

    thread_id: str
    instance_id: str
    driver: str
    status: str
    cwd: str
    runtime_mode: str = "full-access"
    interaction_mode: str = "default"
    model: str | None = None
    resume_cursor: ResumeCursor | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    last_error: str | None = None


_COLUMNS = (
    "thread_id", "instance_id", "driver", "status", "cwd", "runtime_mode", "interaction_mode",
    "model", "resume_cursor", "created_at", "updated_at", "last_error",
)  # fmt: skip


_Undo = tuple[str, "Binding | None", "Binding | None"]
"""(thread_id, the value before the change, the value the change set; None: no row)."""


class _Write:
    """One caller's change, queued for the writer thread: the bindings it changed, with the
    values before and after (the before is put back if the commit fails)."""

    __slots__ = ("undo", "done", "error")

    def __init__(self, undo: list[_Undo], wait: bool) -> None:
        self.undo = undo
        # None: nobody waits (an update on the turn path: no Event to build or set); a refused
        # write is then retried, not undone.
        self.done = threading.Event() if wait else None
        self.error: Exception | None = None


_UndoList = list[_Undo]  # aliases: inside BindingStore, "list" is its method
_WriteList = list[_Write]
_Statements = list[tuple[str, tuple]]


class BindingStore:
    """The thread bindings of one state dir: an in-memory table, written to SQLite by one
    writer thread.

    The owner of the state dir is the only writer (the state-dir lock), so the table loaded at
    open is authoritative: ``get`` and ``list`` read memory and never wait for SQLite. Every
    change applies to memory at once, in call order; the writer thread then writes, in one
    statement or transaction per batch, the current row of every binding changed since its last
    batch (group commit).

    - ``put``, ``set_status`` and ``delete`` return once their change is committed (durable as
      WAL + ``synchronous=NORMAL`` makes it: a host crash keeps it), or raise
      :class:`PersistenceError` with the memory change undone. A new binding is on disk before
      ``start_session`` returns.
    - ``update`` of a ``resume_cursor``, or to status ``stopped``, is durable the same way. Any
      other ``update`` (a status change, an error text) returns at once, and is committed within
      :data:`_WINDOW` (20 ms) with whatever else changed meanwhile: a host crash may lose the last
      ~20 ms of them, which the next ``Runtime.open`` reconciles (every live status becomes
      ``exited``). A change the database refuses stays in memory and is retried with every
      batch; ``flush()`` waits for all of them and raises while any is still refused.
      ``close()`` flushes.

    Why: 20 threads reading and writing bindings through one SQLite connection waited ~10 ms
    per statement at 10,000 sessions (a thread that gave the GIL up inside SQLite held the
    connection while it waited up to the 5 ms switch interval to get it back), and with the
    connection on its own thread, each caller still waited ~10 ms for its commit. That capped
    ``send_turn`` at 20 callers / 20 ms. Thread-safe; every method may be called from any thread.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._mem = threading.Lock()
        self._cond = threading.Condition(self._mem)
        self._queue: _WriteList = []
        self._writer: threading.Thread | None = None
        self._closed = False
        self._failed: dict[str, None] = {}  # bindings whose last write the database refused
        self._urgent = False  # a caller waits for the queued changes
        self._failure: Exception | None = None
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a commit is durable once the WAL is written, without an fsync each
            # (the WAL is synced at checkpoints). A crash of the host keeps every commit; a power
            # loss may lose the last ones, never the file's consistency.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS bindings ("
                " thread_id TEXT PRIMARY KEY, instance_id TEXT NOT NULL, driver TEXT NOT NULL,"
                " status TEXT NOT NULL, cwd TEXT NOT NULL, runtime_mode TEXT, interaction_mode TEXT,"
                " model TEXT, resume_cursor BLOB, created_at REAL, updated_at REAL, last_error TEXT)"
            )
            rows = self._db.execute(
                f"SELECT {','.join(_COLUMNS)} FROM bindings ORDER BY created_at"
            ).fetchall()
        except sqlite3.Error as exc:
            raise PersistenceError("open the binding store", f"{self.path}: {exc}") from None
        self._rows: dict[str, Binding] = {}
        for row in rows:
            binding = self._row(row)
            self._rows[binding.thread_id] = binding

    @staticmethod
    def _row(row: tuple) -> Binding:
        data = dict(zip(_COLUMNS, row))
        cursor = data.pop("resume_cursor")
        return Binding(**data, resume_cursor=ResumeCursor.decode(cursor) if cursor else None)

    @staticmethod
    def _values(binding: Binding) -> tuple:
        values = [getattr(binding, c) for c in _COLUMNS]
        values[_COLUMNS.index("resume_cursor")] = (
            binding.resume_cursor.encode() if binding.resume_cursor else None
        )
        return tuple(values)

    # -- reads (memory) ------------------------------------------------------------------------

    def get(self, thread_id: str) -> Binding | None:
        return self._rows.get(thread_id)

    def list(self) -> list[Binding]:
        """Every binding, oldest first."""
        with self._mem:
            rows = list(self._rows.values())
        return sorted(rows, key=lambda b: b.created_at or 0.0)

    # -- writes (memory now, SQLite by the writer) ---------------------------------------------

    def put(self, binding: Binding) -> Binding:
        """Insert or replace the binding; ``created_at`` is kept from an existing row."""
        now = time.time()
        with self._mem:
            existing = self._rows.get(binding.thread_id)
            binding = msgspec.structs.replace(
                binding,
                created_at=existing.created_at if existing else (binding.created_at or now),
                updated_at=now,
            )
            self._rows[binding.thread_id] = binding
            write = self._enqueue([(binding.thread_id, existing, binding)], "write a binding")
        self._wait(write, "write a binding")
        return binding

    def update(self, thread_id: str, *, only_if: Collection[str] | None = None, **fields: Any) -> Binding | None:
        """Change some fields of an existing binding; with ``only_if``, only when its status is
        one of those. Returns the binding after the change, or ``None`` when there is no binding
        (or its status did not match)."""
        unknown = set(fields) - set(_COLUMNS[1:])
        if unknown:
            raise ValueError(f"unknown binding fields {sorted(unknown)}")
        fields["updated_at"] = time.time()
        with self._mem:
            before = self._rows.get(thread_id)
            if before is None or (only_if is not None and before.status not in only_if):
                return None
            after = msgspec.structs.replace(before, **fields)
            self._rows[thread_id] = after
            # What a crash must not lose: the cursor a resume needs, and a stop (a thread the
            # user stopped must not come back on demand). The rest the next open reconciles.
            durable = "resume_cursor" in fields or fields.get("status") == "stopped"
            write = self._enqueue([(thread_id, before, after)], "update a binding", wait=durable)
        if durable:
            self._wait(write, "update a binding")
        return after

    def set_status(self, thread_ids: Collection[str], status: str) -> None:
        """Set the status of many bindings in one transaction (one commit, not one per row)."""
        now = time.time()
        with self._mem:
            undo: _UndoList = []
            for thread_id in dict.fromkeys(thread_ids):
                before = self._rows.get(thread_id)
                if before is not None:
                    after = self._rows[thread_id] = msgspec.structs.replace(before, status=status, updated_at=now)
                    undo.append((thread_id, before, after))
            write = self._enqueue(undo, "update bindings")
        self._wait(write, "update bindings")

    def delete(self, thread_id: str) -> None:
        with self._mem:
            before = self._rows.pop(thread_id, None)
            write = self._enqueue([(thread_id, before, None)], "delete a binding")
        self._wait(write, "delete a binding")

    def flush(self) -> None:
        """Wait until every change made so far is committed; raise :class:`PersistenceError`
        while the database refuses some (they stay queued for the next batch)."""
        with self._mem:
            write = self._enqueue([], "write the bindings")
        self._wait(write, "write the bindings")
        with self._mem:
            failed, failure = len(self._failed), self._failure
        if failed:
            raise PersistenceError(
                "write the bindings", f"{self.path}: {failed} binding change(s) not written: {failure}"
            )

    def close(self, timeout: float | None = None) -> None:
        """Commit what is queued, stop the writer thread and close the database (idempotent).
        Changes the database still refuses are logged, not raised (``flush`` raises). With
        ``timeout``, a writer still busy after it (a locked or stalled database) is interrupted
        and the database closed regardless: its last changes are then lost."""
        with self._mem:
            self._closed = True
            writer = self._writer
            self._cond.notify_all()
        if writer is not None:
            writer.join(timeout)
            if writer.is_alive():
                self._db.interrupt()  # thread-safe: its statement fails at once
                writer.join(0.25)
        if self._failed:
            log.error("%s: %d binding change(s) were never written: %s", self.path, len(self._failed), self._failure)
        self._db.close()

    # -- the writer ----------------------------------------------------------------------------

    def _enqueue(self, undo: _UndoList, operation: str, *, wait: bool = True) -> _Write:
        # Holding self._mem: the queue's order is the order of the memory changes.
        if self._closed:
            self._undo(undo)
            raise PersistenceError(operation, f"{self.path}: the binding store is closed")
        write = _Write(undo, wait)
        idle = not self._queue
        self._queue.append(write)
        if wait:
            self._urgent = True
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_loop, name="paddock-store", daemon=True)
            self._writer.start()
        elif idle or wait:
            self._cond.notify()
        return write

    def _wait(self, write: _Write, operation: str) -> None:
        assert write.done is not None
        write.done.wait()
        if write.error is not None:
            raise PersistenceError(operation, f"{self.path}: {write.error}") from None

    def _undo(self, undo: _UndoList) -> None:
        """Put back what a failed change replaced, unless a later change replaced it again
        (holding self._mem)."""
        for thread_id, before, after in reversed(undo):
            if self._rows.get(thread_id) is not after:
                continue
            if before is None:
                self._rows.pop(thread_id, None)
            else:
                self._rows[thread_id] = before

    def _write_loop(self) -> None:
        """Writer thread: commit each batch of queued changes in one transaction."""
        while True:
            with self._mem:
                while not self._queue and not self._closed:
                    self._cond.wait()
                # Nobody waits for these: gather what arrives within the window into the same
                # commit (a turn's running -> ready is then often one row write, not two).
                deadline = time.monotonic() + _WINDOW
                while not self._urgent and not self._closed:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch, self._queue = self._queue, []
                self._urgent = False
                if not batch:
                    return
            with self._mem:
                retry, self._failed = list(self._failed), {}
            try:
                self._commit(batch, retry)
            except Exception:
                # Something in the batch failed: commit each change alone so that only the
                # failing ones fail.
                for write in batch:
                    try:
                        self._commit([write], ())
                    except Exception as exc:  # sqlite3.Error, or anything else: never kill the writer
                        self._refused(write, exc)
                for thread_id in retry:
                    try:
                        self._commit([], (thread_id,))
                    except Exception as exc:
                        with self._mem:
                            self._failed[thread_id] = None
                            self._failure = exc
            finally:
                for write in batch:
                    if write.done is not None:
                        write.done.set()

    def _refused(self, write: _Write, exc: Exception) -> None:
        with self._mem:
            if write.done is not None:
                write.error = exc
                self._undo(write.undo)
                return
            if not self._failed:
                log.error("%s: could not write a binding change (kept, retried): %s", self.path, exc)
            self._failure = exc
            for thread_id, _, _ in write.undo:
                self._failed[thread_id] = None

    def _commit(self, batch: _WriteList, retry: Iterable[str]) -> None:
        """Write the current in-memory row of every binding the batch touched (a later change to
        one of them is written early, which the next batch repeats): one multi-row statement
        per 2,000 rows, inside a transaction only when there are several. Each SQLite call
        gives the GIL up and may wait up to the switch interval (5 ms) to get it back while
        other threads run, so the batch makes as few calls as it can."""
        # No lock: each dict.get is atomic, and a row changed meanwhile is written again by the
        # next batch. Holding the lock here made every update wait whenever this thread lost
        # the GIL in the middle of a big batch.
        touched = dict.fromkeys(thread_id for write in batch for thread_id, _, _ in write.undo)
        touched.update(dict.fromkeys(retry))
        rows_now = self._rows
        current = [(thread_id, rows_now.get(thread_id)) for thread_id in touched]
        rows = [self._values(b) for _, b in current if b is not None]
        gone = [thread_id for thread_id, b in current if b is None]
        statements: _Statements = []
        for start in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[start : start + _ROWS_PER_STATEMENT]
            statements.append((_upsert(len(chunk)), tuple(v for row in chunk for v in row)))
        for start in range(0, len(gone), _ROWS_PER_STATEMENT):
            ids = gone[start : start + _ROWS_PER_STATEMENT]
            statements.append((f"DELETE FROM bindings WHERE thread_id IN ({','.join('?' * len(ids))})", tuple(ids)))
        db = self._db
        if not statements:
            return
        if len(statements) == 1:
            db.execute(*statements[0])  # autocommit: one statement, one transaction
            return
        db.execute("BEGIN")
        try:
            for sql, args in statements:
                db.execute(sql, args)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise


_WINDOW = 0.02
"""Seconds the writer gathers changes nobody waits for before it commits them."""

_ROWS_PER_STATEMENT = 2000  # x 12 columns: under SQLite's 32,766 bound parameters


def _upsert(rows: int) -> str:
    one = "(" + ",".join("?" * len(_COLUMNS)) + ")"
    return f"INSERT OR REPLACE INTO bindings ({','.join(_COLUMNS)}) VALUES {','.join([one] * rows)}"
