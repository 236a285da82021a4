"""The runtime's SQLite store: thread bindings in ``state_dir/paddock.db``.

The append-only event log is owned by the EventHub (``actors``), because the hub writes it before
it publishes; it is re-exported here as part of the store.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Collection
from typing import Any
from pathlib import Path

import msgspec

from paddock.actors import EventLog, LogReader
from paddock.contract import PersistenceError, ResumeCursor

__all__ = ["RESUMABLE", "Binding", "BindingStore", "EventLog", "LogReader"]

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


_RETURNING = sqlite3.sqlite_version_info >= (3, 35)  # UPDATE ... RETURNING


class BindingStore:
    """Thread bindings, safe to use from any thread. Raises :class:`PersistenceError`."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a commit is durable once the WAL is written, without an fsync each
            # (the WAL is synced at checkpoints). A crash of the host keeps every commit; a power
            # loss may lose the last ones, never the file's consistency. One fsync per binding
            # change made every start_session and send_turn wait for the disk.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS bindings ("
                " thread_id TEXT PRIMARY KEY, instance_id TEXT NOT NULL, driver TEXT NOT NULL,"
                " status TEXT NOT NULL, cwd TEXT NOT NULL, runtime_mode TEXT, interaction_mode TEXT,"
                " model TEXT, resume_cursor BLOB, created_at REAL, updated_at REAL, last_error TEXT)"
            )
        except sqlite3.Error as exc:
            raise PersistenceError("open the binding store", f"{self.path}: {exc}") from None

    def _run(self, operation: str, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            with self._lock:
                return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise PersistenceError(operation, f"{self.path}: {exc}") from None

    @staticmethod
    def _row(row: tuple) -> Binding:
        data = dict(zip(_COLUMNS, row))
        cursor = data.pop("resume_cursor")
        return Binding(**data, resume_cursor=ResumeCursor.decode(cursor) if cursor else None)

    def get(self, thread_id: str) -> Binding | None:
        rows = self._run(
            "read a binding", f"SELECT {','.join(_COLUMNS)} FROM bindings WHERE thread_id=?", (thread_id,)
        )
        return self._row(rows[0]) if rows else None

    def list(self) -> list[Binding]:
        rows = self._run("list bindings", f"SELECT {','.join(_COLUMNS)} FROM bindings ORDER BY created_at")
        return [self._row(r) for r in rows]

    def put(self, binding: Binding) -> Binding:
        """Insert or replace the binding; ``created_at`` is kept from an existing row."""
        now = time.time()
        existing = self.get(binding.thread_id)
        binding = msgspec.structs.replace(
            binding,
            created_at=existing.created_at if existing else (binding.created_at or now),
            updated_at=now,
        )
        values = [getattr(binding, c) for c in _COLUMNS]
        values[_COLUMNS.index("resume_cursor")] = (
            binding.resume_cursor.encode() if binding.resume_cursor else None
        )
        self._run(
            "write a binding",
            f"INSERT OR REPLACE INTO bindings ({','.join(_COLUMNS)}) VALUES ({','.join('?' * len(_COLUMNS))})",
            tuple(values),
        )
        return binding

    def update(self, thread_id: str, *, only_if: Collection[str] | None = None, **fields: Any) -> Binding | None:
        """Change some fields of an existing binding in one statement; with ``only_if``, only when
        its status is one of those. Returns the binding after the change, or ``None`` when there
        is no binding (or its status did not match)."""
        unknown = set(fields) - set(_COLUMNS[1:])
        if unknown:
            raise ValueError(f"unknown binding fields {sorted(unknown)}")
        if "resume_cursor" in fields:
            cursor = fields["resume_cursor"]
            fields["resume_cursor"] = cursor.encode() if cursor is not None else None
        fields["updated_at"] = time.time()
        sql = f"UPDATE bindings SET {', '.join(f'{k}=?' for k in fields)} WHERE thread_id=?"
        args: list[Any] = [*fields.values(), thread_id]
        if only_if is not None:
            sql += f" AND status IN ({','.join('?' * len(only_if))})"
            args.extend(only_if)
        if _RETURNING:
            sql += f" RETURNING {','.join(_COLUMNS)}"
        try:
            with self._lock:
                cursor = self._db.execute(sql, args)
                rows: list[tuple] = cursor.fetchall() if _RETURNING else []
                changed = bool(rows) if _RETURNING else cursor.rowcount > 0
        except sqlite3.Error as exc:
            raise PersistenceError("update a binding", f"{self.path}: {exc}") from None
        if not changed:
            return None
        return self._row(rows[0]) if rows else self.get(thread_id)

    def set_status(self, thread_ids: Collection[str], status: str) -> None:
        """Set the status of many bindings in one transaction (one commit, not one per row)."""
        now = time.time()
        try:
            with self._lock:
                self._db.execute("BEGIN")
                try:
                    self._db.executemany(
                        "UPDATE bindings SET status=?, updated_at=? WHERE thread_id=?",
                        ((status, now, thread_id) for thread_id in thread_ids),
                    )
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise PersistenceError("update bindings", f"{self.path}: {exc}") from None

    def delete(self, thread_id: str) -> None:
        self._run("delete a binding", "DELETE FROM bindings WHERE thread_id=?", (thread_id,))

    def close(self) -> None:
        with self._lock:
            self._db.close()
