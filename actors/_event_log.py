"""The append-only SQLite event log behind the EventHub.

One table, ``events``: ``seq`` (primary key), ``thread_id``, ``instance_id``, ``type``,
``created_at`` and ``body`` (the event's JSON bytes, encoded once by the hub). WAL mode, so readers
(subscribers catching up) never block the writer. ``runtime.store`` re-exports this module's names.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence

from runtime.contract import PersistenceError

__all__ = ["EventLog", "LogReader", "Row"]

Row = tuple[int, str, str, str, float, bytes]
"""One log row: ``(seq, thread_id, instance_id, type, created_at, body)``."""

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS events (
        seq INTEGER PRIMARY KEY,
        thread_id TEXT NOT NULL,
        instance_id TEXT NOT NULL,
        type TEXT NOT NULL,
        created_at REAL NOT NULL,
        body BLOB NOT NULL
    )""",
    # Replays by thread use this index; other filters scan the seq range, which is what a
    # catch-up reads anyway. Each index costs about a fifth of the append rate.
    "CREATE INDEX IF NOT EXISTS events_thread ON events(thread_id, seq)",
)
_INSERT = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)"
# Rows go in as multi-row INSERTs: every statement step releases and re-takes the GIL (and
# ``executemany`` steps once per row), so under load the writer thread queues for the GIL once
# per step. A batch of up to _SINGLE rows is ONE statement in autocommit mode (atomic on its own,
# so one step in all); a bigger one is BEGIN, chunks of power-of-two sizes, COMMIT.
_SINGLE = 256
_CHUNK_MAX = 1024  # 6 * 1024 parameters, well under SQLITE_MAX_VARIABLE_NUMBER (32766)
_ROW = "(?,?,?,?,?,?)"
_INLINE_ROWS = 262_144  # rows between the writer's own checkpoints (see _Checkpointer)
_multi: dict[int, str] = {}


def _multi_insert(n: int) -> str:
    sql = _multi.get(n)
    if sql is None:
        sql = _multi[n] = "INSERT INTO events VALUES " + ",".join([_ROW] * n)
    return sql


def _connect(path: str) -> sqlite3.Connection:
    # room for the _SINGLE exact-size INSERTs plus the chunk sizes and the readers' queries
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, cached_statements=_SINGLE + 64)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def _insert(conn: sqlite3.Connection, rows: Sequence[Row]) -> None:
    """Insert ``rows`` with as few statement steps as possible (inside the caller's transaction)."""
    start, total = 0, len(rows)
    while start < total:
        size = _CHUNK_MAX
        left = total - start
        while size > left:
            size >>= 1
        part = rows[start:start + size]
        conn.execute(_multi_insert(size), [value for row in part for value in row])
        start += size


class _Checkpointer:
    """Copies the WAL back into the database on its own thread (``paddock-log-checkpoint``) and
    connection, so that the writer's commits never carry a checkpoint and its fsync (tens of
    milliseconds here, which every event queued behind that commit would wait for).

    The writer disables SQLite's automatic checkpoint and calls :meth:`wrote` after each commit;
    every ``every_rows`` rows (or ``every_seconds`` after the first uncheckpointed row) a
    ``PASSIVE`` checkpoint runs, which never blocks the writer. A checkpoint running beside a busy
    writer never catches up with it, and the WAL restarts from its beginning only after a
    complete one, so the writer itself also checkpoints every ``_INLINE_ROWS`` rows: by then
    almost everything is copied already, and that checkpoint is short.
    """

    def __init__(self, path: str, every_rows: int = 4_096, every_seconds: float = 1.0) -> None:
        self._path = path
        self._every_rows = every_rows
        self._every_seconds = every_seconds
        self._rows = 0
        self.busy = False
        """True while a checkpoint runs (the writer then skips its own)."""
        self._cond = threading.Condition(threading.Lock())
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="paddock-log-checkpoint", daemon=True)
        self._thread.start()

    def wrote(self, rows: int) -> None:
        """Writer thread, after a commit."""
        with self._cond:
            first = self._rows == 0
            self._rows += rows
            if first or self._rows >= self._every_rows:
                self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(10.0)

    def _run(self) -> None:
        conn = None
        try:
            conn = _connect(self._path)
            while True:
                with self._cond:
                    while not self._closing and not self._rows:
                        self._cond.wait()
                    if not self._closing and self._rows < self._every_rows:
                        self._cond.wait(self._every_seconds)
                    if self._closing:
                        return
                    self._rows = 0
                    self.busy = True
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    pass  # busy or gone: the next round (or the last connection's close) does it
                finally:
                    self.busy = False
        except sqlite3.Error:
            return
        finally:
            if conn is not None:
                conn.close()


class EventLog:
    """The writer side of the log.

    Every method runs in the one thread that owns the log (the EventHub's actor thread); the
    object is not thread-safe. Readers open their own :class:`LogReader`. Checkpoints run on a
    helper thread of their own (:class:`_Checkpointer`).

    ``max_bytes`` (config ``[store] event_log_max_bytes``; ``None`` keeps everything) is the
    size-based retention policy: :meth:`enforce_size` deletes the oldest events once the log's
    pages exceed it, down to about three quarters of it.
    """

    def __init__(self, path: str, *, max_bytes: int | None = None) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.fail_after_rows: int | None = None
        """Test hook: the next :meth:`append` inserts this many rows, then fails as if the
        writer were killed mid-batch (nothing of that batch is committed)."""
        try:
            self._conn = _connect(path)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                self._conn.execute(statement)
            (last,) = self._conn.execute("SELECT max(seq) FROM events").fetchone()
            self._conn.execute("PRAGMA wal_autocheckpoint = 0")
            self._conn.execute("PRAGMA journal_size_limit = 67108864")  # truncate a grown WAL
        except sqlite3.Error as exc:
            raise PersistenceError("open the event log", f"{path}: {exc}") from None
        self._checkpointer = _Checkpointer(path)
        self._uncheckpointed = 0
        self.last_seq: int = last or 0
        """The highest committed ``seq``; a new hub on the same log continues after it."""

    def append(self, rows: Sequence[Row]) -> None:
        """Insert ``rows`` in one transaction, then commit.

        Raises :class:`PersistenceError` when nothing was committed (the transaction is rolled
        back), so the caller must not publish the batch.
        """
        conn = self._conn
        if len(rows) <= _SINGLE and self.fail_after_rows is None:
            try:
                # one statement in autocommit mode: its own transaction, all or nothing
                conn.execute(_multi_insert(len(rows)), [value for row in rows for value in row])
            except sqlite3.Error as exc:
                raise PersistenceError("append events to the log", f"{self.path}: {exc}") from None
            self._committed(rows)
            return
        try:
            conn.execute("BEGIN")
            try:
                fail_after = self.fail_after_rows
                if fail_after is not None:
                    self.fail_after_rows = None
                    conn.executemany(_INSERT, rows[:fail_after])
                    raise PersistenceError("append events", "writer killed mid-batch (test hook)")
                _insert(conn, rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise PersistenceError("append events to the log", f"{self.path}: {exc}") from None
        self._committed(rows)

    def _committed(self, rows: Sequence[Row]) -> None:
        self.last_seq = rows[-1][0]
        self._checkpointer.wrote(len(rows))
        self._uncheckpointed += len(rows)
        if self._uncheckpointed >= _INLINE_ROWS and not self._checkpointer.busy:
            self._uncheckpointed = 0
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                pass  # the checkpointer holds it: next time

    def compact(self, before_seq: int) -> int:
        """Delete events with ``seq < before_seq``; return how many were deleted.

        The newest event is always kept: it anchors ``seq`` for a hub that reopens the log.
        """
        before_seq = min(before_seq, self.last_seq)
        try:
            cur = self._conn.execute("DELETE FROM events WHERE seq < ?", (before_seq,))
        except sqlite3.Error as exc:
            raise PersistenceError("compact the event log", f"{self.path}: {exc}") from None
        return cur.rowcount

    def size_bytes(self) -> int:
        """Bytes used by live pages of the main database file (free pages excluded)."""
        conn = self._conn
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        (free,) = conn.execute("PRAGMA freelist_count").fetchone()
        (size,) = conn.execute("PRAGMA page_size").fetchone()
        return (pages - free) * size

    def enforce_size(self) -> int:
        """Apply ``max_bytes``: delete the oldest events until about 75 % of it is used.

        Returns how many events were deleted (0 when under the limit or unlimited). Freed pages
        are reused by later appends, so the file stops growing.
        """
        if self.max_bytes is None:
            return 0
        used = self.size_bytes()
        if used <= self.max_bytes:
            return 0
        lo, hi = self._conn.execute("SELECT min(seq), max(seq) FROM events").fetchone()
        if lo is None:
            return 0
        keep_fraction = 0.75 * self.max_bytes / used
        cut = hi - int((hi - lo + 1) * keep_fraction) + 1
        return self.compact(cut)

    def close(self) -> None:
        """Stop the checkpointer and close the connection (the last connection to close
        checkpoints what is left); later calls fail with :class:`PersistenceError`."""
        self._checkpointer.close()
        try:
            self._conn.close()
        except sqlite3.Error:
            pass


class LogReader:
    """A read connection for one consumer, with fixed filters.

    Thread-safe (one lock): a subscriber may read from whichever thread calls ``get``.
    """

    def __init__(
        self,
        path: str,
        *,
        thread_id: str | None = None,
        instance_id: str | None = None,
        types: Iterable[str] | None = None,
    ) -> None:
        where = ["seq >= ?", "seq <= ?"]
        params: list[object] = []
        if thread_id is not None:
            where.append("thread_id = ?")
            params.append(thread_id)
        if instance_id is not None:
            where.append("instance_id = ?")
            params.append(instance_id)
        if types is not None:
            names = sorted(types)
            where.append(f"type IN ({', '.join('?' * len(names))})")
            params.extend(names)
        self._sql = f"SELECT seq, body FROM events WHERE {' AND '.join(where)} ORDER BY seq LIMIT ?"
        self._params = params
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def read(self, from_seq: int, to_seq: int, limit: int) -> list[tuple[int, bytes]]:
        """Return up to ``limit`` ``(seq, body)`` rows with ``from_seq <= seq <= to_seq`` that
        match the filters, in ``seq`` order. Raises :class:`PersistenceError`."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = _connect(self._path)
                return self._conn.execute(
                    self._sql, (from_seq, to_seq, *self._params, limit)
                ).fetchall()
            except sqlite3.Error as exc:
                raise PersistenceError("read the event log", f"{self._path}: {exc}") from None

    def first_seq(self) -> int | None:
        """The lowest ``seq`` still in the log (older ones were compacted), or ``None``."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = _connect(self._path)
                return self._conn.execute("SELECT min(seq) FROM events").fetchone()[0]
            except sqlite3.Error as exc:
                raise PersistenceError("read the event log", f"{self._path}: {exc}") from None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
