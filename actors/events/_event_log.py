"""The append-only SQLite event log behind the EventHub.

Events are stored in **chunks**: one row holds a run of events of ONE thread from one hub batch
(``first_seq``, ``last_seq``, ``thread_id``, ``instance_id``, the events' ``seq`` numbers, their
type tags and their JSON bodies, encoded once by the hub). A row costs SQLite about 5 us of CPU
whatever its size, so a row per event capped the logged rate; a chunk per thread and batch does
not. Chunks of different threads interleave in ``seq``; the widest chunk's span is recorded
(``event_log_meta.max_span``, at most :data:`SPAN`), so a range query needs only the primary key
and looks back no further than that. WAL mode, so readers (subscribers catching up) never block
the writer. The binding store (``paddock._state._store``) re-exports this module's names.
"""

from __future__ import annotations

import sqlite3
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from paddock.contract import PersistenceError

__all__ = ["Chunk", "EventLog", "LogReader", "LogRefused", "build_chunks", "chunks_of_groups"]


class LogRefused(PersistenceError):
    """An append the disk refused (full, read-only, an I/O error: SQLite's ``OperationalError``):
    nothing of it was committed, and the same append may succeed once the disk allows."""

Chunk = tuple[int, int, str, str, bytes, str, bytes]
"""One log row: ``(first_seq, last_seq, thread_id, instance_id, seqs, types, bodies)``; ``seqs`` is
the events' ``seq`` numbers as native 64-bit integers, ``types`` their type tags joined by
``\\n``, ``bodies`` their JSON joined by ``\\n`` (JSON text never holds a raw newline)."""

SPAN = 1 << 13
"""Every chunk satisfies ``last_seq - first_seq < SPAN`` (wider runs are split)."""

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS event_chunks (
        first_seq INTEGER PRIMARY KEY,
        last_seq INTEGER NOT NULL,
        thread_id TEXT NOT NULL,
        instance_id TEXT NOT NULL,
        seqs BLOB NOT NULL,
        types TEXT NOT NULL,
        bodies BLOB NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS event_chunks_thread ON event_chunks(thread_id, first_seq)",
    "CREATE TABLE IF NOT EXISTS event_log_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)
_SET_MAX_SPAN = "INSERT OR REPLACE INTO event_log_meta VALUES ('max_span', ?)"
# A chunk holding seq >= X starts at or after X - max_span: the look-back of every range query.
_MAX_SPAN = "coalesce((SELECT value FROM event_log_meta WHERE key = 'max_span'), 0)"
_INSERT = "INSERT INTO event_chunks VALUES (?, ?, ?, ?, ?, ?, ?)"
# Chunks go in as ONE multi-row INSERT in autocommit mode (atomic on its own): each statement
# step releases and re-takes the GIL, and under load re-taking it is what a commit waits for.
# More chunks than _SINGLE go in as _SINGLE-row INSERTs (and one for the rest) in a transaction.
# Trap: each distinct row count is one prepared statement in the connection's cache (128), and a
# statement's compiled program grows with its rows: batches of every size up to 512 rows kept
# ~40 MB of native memory in that cache; up to 64 rows, ~4 MB.
_SINGLE = 64  # 7 * 64 parameters, well under SQLITE_MAX_VARIABLE_NUMBER (32766)
_multi: dict[int, str] = {}


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN``; ``COMMIT`` when the block ends, ``ROLLBACK`` when it (or the commit) raises."""
    conn.execute("BEGIN")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        # SQLite rolls a transaction back itself on some errors (SQLITE_FULL, SQLITE_IOERR): a
        # second ROLLBACK would raise and hide the error that matters
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _multi_insert(n: int) -> str:
    sql = _multi.get(n)
    if sql is None:
        sql = _multi[n] = "INSERT INTO event_chunks VALUES " + ",".join(["(?,?,?,?,?,?,?)"] * n)
    return sql


_INLINE_ROWS = 262_144  # events between the writer's own checkpoints (see _Checkpointer)


def build_chunks(events: Sequence[Any], encode_lines: Any) -> list[Chunk]:
    """Group stamped events (in ``seq`` order) by thread and instance, then
    :func:`chunks_of_groups`. Runs in the caller's thread."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for ev in events:
        key = (ev.thread_id, ev.instance_id)
        group = groups.get(key)
        if group is None:
            groups[key] = [ev]
        else:
            group.append(ev)
    return chunks_of_groups(groups, encode_lines)


def chunks_of_groups(groups: Mapping[tuple[str, str], Sequence[Any]], encode_lines: Any) -> list[Chunk]:
    """The chunks of stamped events already grouped by ``(thread_id, instance_id)``, each group in
    ``seq`` order: one per group (split where a chunk would span :data:`SPAN` or more seq
    numbers), in ``first_seq`` order. ``encode_lines`` is a msgspec JSON encoder's
    ``encode_lines``. Runs in the caller's thread."""
    chunks: list[Chunk] = []
    parts: list[Sequence[Any]]
    for (thread_id, instance_id), group in groups.items():
        if group[-1].seq - group[0].seq >= SPAN:
            parts, part = [], [group[0]]
            for ev in group[1:]:
                if ev.seq - part[0].seq >= SPAN:
                    parts.append(part)
                    part = []
                part.append(ev)
            parts.append(part)
        else:
            parts = [group]
        for run in parts:
            seqs = [ev.seq for ev in run]
            chunks.append((
                seqs[0],
                seqs[-1],
                thread_id,
                instance_id,
                array("q", seqs).tobytes(),
                "\n".join([ev.type for ev in run]),
                encode_lines(run)[:-1],
            ))
    chunks.sort()
    return chunks


def _unpack(seqs: bytes, types: str, bodies: bytes) -> tuple[array, list[str], list[bytes]]:
    """A chunk's columns as parallel lists; a chunk whose columns disagree (a damaged file)
    raises ``sqlite3.DatabaseError``, which the callers report as :class:`PersistenceError`."""
    numbers = array("q")
    try:
        numbers.frombytes(seqs)
    except ValueError:
        raise sqlite3.DatabaseError(f"chunk seqs of {len(seqs)} bytes") from None
    names, texts = types.split("\n"), bodies.split(b"\n")
    if not len(numbers) == len(names) == len(texts):
        raise sqlite3.DatabaseError(
            f"chunk with {len(numbers)} seqs, {len(names)} types and {len(texts)} bodies"
        )
    return numbers, names, texts


def _connect(path: str) -> sqlite3.Connection:
    # room for the exact-size INSERTs of the common batch sizes and the readers' queries
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, cached_statements=128)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


class _Checkpointer:
    """Copies the WAL back into the database on its own thread (``paddock-log-checkpoint``) and
    connection, so that the writer's commits never carry a checkpoint and its fsync (tens of
    milliseconds here, which every event queued behind that commit would wait for).

    The writer disables SQLite's automatic checkpoint and calls :meth:`wrote` after each commit;
    every ``every_rows`` events (or ``every_seconds`` after the first uncheckpointed one) a
    ``PASSIVE`` checkpoint runs, which never blocks the writer on a lock. Its I/O still slows the
    writer's next commits on a slow disk, less when checkpoints are small: at 10k events/s, p99
    commit-to-delivery was 5-6 ms with 1k / 0.25 s, 9-13 ms with 4k / 1 s, 26 ms with 64k / 5 s.
    A checkpoint running beside a busy writer never catches up with it, and the WAL restarts from
    its beginning only after a complete one, so the writer itself also checkpoints every
    ``_INLINE_ROWS`` events: by then almost everything is copied already, and that checkpoint is
    short.
    """

    def __init__(self, path: str, every_rows: int = 1_024, every_seconds: float = 0.25) -> None:
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

    Every method runs in the one thread that owns the log (the EventHub's writer thread); the
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
        """Test hook: the next :meth:`append` inserts this many chunks, then fails as if the
        writer were killed mid-batch (nothing of that batch is committed)."""
        try:
            self._conn = _connect(path)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                self._conn.execute(statement)
            self._convert_per_event_table()
            self._max_span = self._read_max_span()
            last = _last_seq(self._conn)
            self._conn.execute("PRAGMA wal_autocheckpoint = 0")
            self._conn.execute("PRAGMA journal_size_limit = 67108864")  # truncate a grown WAL
        except sqlite3.Error as exc:
            raise PersistenceError("open the event log", f"{path}: {exc}") from None
        self._checkpointer = _Checkpointer(path)
        self._uncheckpointed = 0
        self.last_seq: int = last
        """The highest committed ``seq``; a new hub on the same log continues after it."""

    def _convert_per_event_table(self) -> None:
        """Logs written before chunks had one ``events`` row per event: move them, once."""
        conn = self._conn
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'events' AND type = 'table'").fetchone() is None:
            return
        with _transaction(conn):
            rows = conn.execute("SELECT seq, thread_id, instance_id, type, body FROM events ORDER BY seq")
            conn.executemany(
                _INSERT,
                ((seq, seq, tid, iid, array("q", [seq]).tobytes(), kind, body) for seq, tid, iid, kind, body in rows),
            )
            conn.execute("DROP TABLE events")

    def _read_max_span(self) -> int:
        conn = self._conn
        row = conn.execute("SELECT value FROM event_log_meta WHERE key = 'max_span'").fetchone()
        if row is not None:
            return row[0]
        (span,) = conn.execute("SELECT max(last_seq - first_seq) FROM event_chunks").fetchone()
        conn.execute(_SET_MAX_SPAN, (span or 0,))
        return span or 0

    def append(self, chunks: Sequence[Chunk]) -> None:
        """Insert ``chunks`` (ascending ``first_seq``) in one transaction, then commit.

        Raises :class:`PersistenceError` when nothing was committed (the transaction is rolled
        back), so the caller must not publish the batch.
        """
        conn = self._conn
        span = max([chunk[1] - chunk[0] for chunk in chunks])
        try:
            if len(chunks) <= _SINGLE and self.fail_after_rows is None and span <= self._max_span:
                conn.execute(_multi_insert(len(chunks)), [value for chunk in chunks for value in chunk])
            else:
                with _transaction(conn):
                    fail_after = self.fail_after_rows
                    if fail_after is not None:
                        self.fail_after_rows = None
                        conn.executemany(_INSERT, chunks[:fail_after])
                        raise PersistenceError("append events", "writer killed mid-batch (test hook)")
                    for at in range(0, len(chunks), _SINGLE):
                        part = chunks[at:at + _SINGLE]
                        conn.execute(_multi_insert(len(part)), [value for chunk in part for value in chunk])
                    if span > self._max_span:
                        # in the same transaction: no reader sees a chunk wider than recorded
                        conn.execute(_SET_MAX_SPAN, (span,))
        except sqlite3.OperationalError as exc:
            raise LogRefused("append events to the log", f"{self.path}: {exc}") from None
        except sqlite3.Error as exc:
            raise PersistenceError("append events to the log", f"{self.path}: {exc}") from None
        self._max_span = max(self._max_span, span)
        self.last_seq = max(self.last_seq, max(chunk[1] for chunk in chunks))
        events = sum(len(chunk[4]) for chunk in chunks) // 8
        self._checkpointer.wrote(events)
        self._uncheckpointed += events
        if self._uncheckpointed >= _INLINE_ROWS and not self._checkpointer.busy:
            self._uncheckpointed = 0
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                pass  # the checkpointer holds it: next time

    def limit_pages(self, pages: int | None) -> None:
        """Test hook: the database may not grow beyond ``pages`` pages (at least its current
        size; ``None`` lifts the limit), SQLite's ``max_page_count``: an append that needs more
        fails with SQLITE_FULL, "database or disk is full", exactly as on a full disk."""
        conn = self._conn
        if pages is None:
            pages = 1 << 30
        else:
            pages = max(pages, conn.execute("PRAGMA page_count").fetchone()[0])
        conn.execute(f"PRAGMA max_page_count = {int(pages)}")

    def compact(self, before_seq: int) -> int:
        """Delete events with ``seq < before_seq``; return how many were deleted.

        The newest event is always kept: it anchors ``seq`` for a hub that reopens the log.
        """
        before_seq = min(before_seq, self.last_seq)
        conn = self._conn
        try:
            with _transaction(conn):
                deleted = 0
                straddling = conn.execute(
                    "SELECT first_seq, thread_id, instance_id, seqs, types, bodies FROM event_chunks "
                    "WHERE first_seq < ? AND first_seq >= ? AND last_seq >= ?",
                    (before_seq, before_seq - self._max_span, before_seq),
                ).fetchall()
                for first, tid, iid, seqs, types, bodies in straddling:
                    numbers, kinds, texts = _unpack(seqs, types, bodies)
                    keep = [i for i, seq in enumerate(numbers) if seq >= before_seq]
                    deleted += len(numbers) - len(keep)
                    conn.execute("DELETE FROM event_chunks WHERE first_seq = ?", (first,))
                    kept = array("q", [numbers[i] for i in keep])
                    conn.execute(_INSERT, (kept[0], kept[-1], tid, iid, kept.tobytes(),
                                           "\n".join([kinds[i] for i in keep]), b"\n".join([texts[i] for i in keep])))
                (below,) = conn.execute(
                    "SELECT coalesce(sum(length(seqs)), 0) / 8 FROM event_chunks WHERE first_seq < ? AND last_seq < ?",
                    (before_seq, before_seq),
                ).fetchone()
                conn.execute("DELETE FROM event_chunks WHERE first_seq < ? AND last_seq < ?", (before_seq, before_seq))
        except sqlite3.Error as exc:
            raise PersistenceError("compact the event log", f"{self.path}: {exc}") from None
        return deleted + below

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
        (lo,) = self._conn.execute("SELECT min(first_seq) FROM event_chunks").fetchone()
        if lo is None:
            return 0
        hi = self.last_seq
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


def _last_seq(conn: sqlite3.Connection) -> int:
    (last,) = conn.execute(
        f"SELECT max(last_seq) FROM event_chunks WHERE first_seq >= (SELECT max(first_seq) FROM event_chunks) - {_MAX_SPAN}",
    ).fetchone()
    return last or 0


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
        where = [f"first_seq >= ? - {_MAX_SPAN}", "first_seq <= ?", "last_seq >= ?"]
        params: list[object] = []
        if thread_id is not None:
            where.append("thread_id = ?")
            params.append(thread_id)
        if instance_id is not None:
            where.append("instance_id = ?")
            params.append(instance_id)
        self._types = None if types is None else frozenset(types)
        if self._types is not None:
            # A chunk's types column names each of its events: chunks of other types (runs of
            # deltas, mostly) are skipped without reading their bodies.
            where.append("(" + " OR ".join("instr(types, ?) > 0" for _ in self._types) + ")")
            params.extend(sorted(self._types))
        self._sql = f"SELECT first_seq, seqs, types, bodies FROM event_chunks WHERE {' AND '.join(where)} ORDER BY first_seq"
        self._params = params
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def read(self, from_seq: int, to_seq: int, limit: int) -> list[tuple[int, bytes]]:
        """Return up to ``limit`` ``(seq, body)`` rows with ``from_seq <= seq <= to_seq`` that
        match the filters, in ``seq`` order. Raises :class:`PersistenceError`."""
        types = self._types
        out: list[tuple[int, bytes]] = []
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = _connect(self._path)
                cursor = self._conn.execute(self._sql, (from_seq, to_seq, from_seq, *self._params))
                try:
                    for first, seqs, kinds, bodies in cursor:
                        if len(out) >= limit:
                            # chunks come in first_seq order: once one starts past the limit-th
                            # event found so far, no later chunk holds an earlier event
                            out.sort()
                            del out[limit:]
                            if first > out[-1][0]:
                                break
                        if len(seqs) == 8:  # one event (low-rate threads): nothing to split
                            if from_seq <= first <= to_seq and (types is None or kinds in types):
                                out.append((first, bodies))
                            continue
                        numbers, names, texts = _unpack(seqs, kinds, bodies)
                        for i, seq in enumerate(numbers):
                            if from_seq <= seq <= to_seq and (types is None or names[i] in types):
                                out.append((seq, texts[i]))
                finally:
                    cursor.close()
            except sqlite3.Error as exc:
                raise PersistenceError("read the event log", f"{self._path}: {exc}") from None
        out.sort()
        del out[limit:]
        return out

    def first_seq(self) -> int | None:
        """The lowest ``seq`` still in the log (older ones were compacted), or ``None``."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = _connect(self._path)
                return self._conn.execute("SELECT min(first_seq) FROM event_chunks").fetchone()[0]
            except sqlite3.Error as exc:
                raise PersistenceError("read the event log", f"{self._path}: {exc}") from None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
