"""Runtime.pending_requests and Runtime.list_threads (what `paddock requests` and `paddock
sessions` show): a request is listed while open, across threads, and gone once answered, once its
turn ends, or once its session exits."""

from __future__ import annotations

import time

from tests.runtime.conftest import run_turn


def _open_request(rt, thread_id, ws, name):
    sub = rt.subscribe(thread_id=thread_id, types=["request.opened"])
    turn = rt.send_turn(thread_id, f"@write {ws}/{name} x")
    opened = sub.get(timeout=10)
    sub.close()
    assert opened is not None and opened.turn_id == turn.turn_id
    return turn, opened


def test_pending_requests_across_threads(rt, workspace):
    for t, inst in (("a", "local-a"), ("b", "local-b"), ("c", "local-a")):
        rt.start_session(t, instance=inst, cwd=workspace, runtime_mode="approval-required")
    assert rt.pending_requests() == []
    _, ra = _open_request(rt, "a", workspace, "a.txt")
    turn_b, rb = _open_request(rt, "b", workspace, "b.txt")
    _, rc = _open_request(rt, "c", workspace, "c.txt")
    assert [(r.thread_id, r.request_id) for r in rt.pending_requests()] == [
        ("a", ra.request_id), ("b", rb.request_id), ("c", rc.request_id)]
    assert [r.request_id for r in rt.pending_requests("b")] == [rb.request_id]
    with rt.subscribe(thread_id="a", types=["turn.completed"]) as sub:
        rt.respond_to_request("a", ra.request_id, "accept")
        assert sub.get(timeout=10).state == "completed"
    assert [r.thread_id for r in rt.pending_requests()] == ["b", "c"]
    with rt.subscribe(thread_id="b", types=["turn.completed"]) as sub:
        rt.interrupt_turn("b", turn_b.turn_id)
        assert sub.get(timeout=10) is not None
    assert [r.thread_id for r in rt.pending_requests()] == ["c"]
    rt.stop_session("c")
    assert rt.pending_requests() == []
    want = {"a": "ready", "b": "ready", "c": "stopped"}
    deadline = time.monotonic() + 10  # the tracker follows each turn.completed
    while (got := {b.thread_id: b.status for b in rt.list_threads()}) != want and time.monotonic() < deadline:
        time.sleep(0.02)
    assert got == want
    run_turn(rt, "a", "@reply still fine")


def test_the_pending_fold_drains_between_calls(rt, workspace):
    # A host that never calls pending_requests must not keep every turn end buffered.
    rt.start_session("d", instance="local-a", cwd=workspace)
    for n in range(5):
        run_turn(rt, "d", f"@reply turn {n}")
    sub = rt._pending._sub
    deadline = time.monotonic() + 10
    while sub._buffered and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sub._buffered == 0
