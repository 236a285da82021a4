"""The binding store: single-statement updates and the one-transaction status change."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from paddock.contract import PersistenceError
from paddock._state._store import Binding, BindingStore


def binding(thread_id: str, status: str = "ready") -> Binding:
    return Binding(thread_id=thread_id, instance_id="i", driver="local", status=status, cwd="/")


def test_update_returns_the_changed_binding_or_none(tmp_path):
    store = BindingStore(tmp_path / "paddock.db")
    try:
        created = store.put(binding("t1"))
        changed = store.update("t1", status="running", last_error="x")
        assert changed is not None and changed.status == "running" and changed.last_error == "x"
        assert changed.created_at == created.created_at and changed.updated_at >= created.updated_at
        assert store.update("t1", only_if={"ready"}, status="idle") is None
        assert store.get("t1").status == "running"
        assert store.update("nobody", status="idle") is None
    finally:
        store.close()


def test_set_status_changes_many_bindings_at_once(tmp_path):
    store = BindingStore(tmp_path / "paddock.db")
    try:
        for n in range(50):
            store.put(binding(f"t{n}"))
        store.set_status([f"t{n}" for n in range(0, 50, 2)] + ["unknown"], "closed")
        statuses = {b.thread_id: b.status for b in store.list()}
        assert statuses == {f"t{n}": "closed" if n % 2 == 0 else "ready" for n in range(50)}
    finally:
        store.close()
    reopened = BindingStore(tmp_path / "paddock.db")
    try:
        assert reopened.get("t0").status == "closed"
    finally:
        reopened.close()


def test_changes_from_many_threads_are_read_at_once_and_all_committed(tmp_path):
    # 16 threads x 50 bindings, each put then updated twice: every read sees the caller's own
    # last change (memory), and a fresh store opened on the file sees every one (committed).
    store = BindingStore(tmp_path / "paddock.db")
    seen: list[str] = []

    def work(n: int) -> None:
        for i in range(50):
            tid = f"t{n}-{i}"
            store.put(binding(tid))
            store.update(tid, status="running")
            store.update(tid, only_if={"running"}, status="ready", last_error=f"e{n}-{i}")
            seen.append(store.get(tid).last_error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(seen) == sorted(f"e{n}-{i}" for n in range(16) for i in range(50))
    finally:
        store.close()
    reopened = BindingStore(tmp_path / "paddock.db")
    try:
        rows = {b.thread_id: b for b in reopened.list()}
        assert len(rows) == 800
        assert all(b.status == "ready" and b.last_error == f"e{b.thread_id[1:]}" for b in rows.values())
    finally:
        reopened.close()


def test_a_change_the_database_refuses_is_undone_or_kept_and_retried(tmp_path):
    store = BindingStore(tmp_path / "paddock.db")
    try:
        store.put(binding("t1"))
        with sqlite3.connect(tmp_path / "paddock.db") as other:  # the table goes away under it
            other.execute("ALTER TABLE bindings RENAME TO gone")
        # a durable change (a new binding) fails and is undone
        with pytest.raises(PersistenceError, match="write a binding"):
            store.put(binding("t2"))
        assert store.get("t2") is None and [b.thread_id for b in store.list()] == ["t1"]
        # an update returns at once; it stays in memory, and flush() says it is not written
        assert store.update("t1", status="running").status == "running"
        with pytest.raises(PersistenceError, match="1 binding change"):
            store.flush()
        assert store.get("t1").status == "running"
        with sqlite3.connect(tmp_path / "paddock.db") as other:
            other.execute("ALTER TABLE gone RENAME TO bindings")
        store.flush()  # the retry went through
    finally:
        store.close()
    reopened = BindingStore(tmp_path / "paddock.db")
    try:
        assert reopened.get("t1").status == "running" and reopened.get("t2") is None
    finally:
        reopened.close()
    with pytest.raises(PersistenceError, match="closed"):
        store.update("t1", status="ready")


_KILLED_WRITER = """
import os, signal, sys
from paddock.contract import ResumeCursor
from paddock._state._store import Binding, BindingStore
store = BindingStore(sys.argv[1])
for n in range(3):
    store.put(Binding(thread_id=f"t{n}", instance_id="i", driver="local", status="ready", cwd="/"))
store.update("t0", resume_cursor=ResumeCursor(driver="local", version=1, payload='"s0"'))
store.update("t1", status="stopped")
os.kill(os.getpid(), signal.SIGKILL)  # no close(), no flush()
"""


def test_what_a_crash_must_not_lose_is_on_disk_when_the_call_returns(tmp_path):
    import subprocess
    import sys

    db = tmp_path / "paddock.db"
    done = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(db)], capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr.decode()
    store = BindingStore(db)
    try:
        assert [b.thread_id for b in store.list()] == ["t0", "t1", "t2"]  # new bindings
        assert store.get("t0").resume_cursor.payload == '"s0"'  # a cursor
        assert store.get("t1").status == "stopped"  # a stop
    finally:
        store.close()
