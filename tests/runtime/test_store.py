"""The binding store: single-statement updates and the one-transaction status change."""

from __future__ import annotations

from paddock.store import Binding, BindingStore


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
