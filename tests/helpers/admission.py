"""The admission check shared by the in-process and the ``paddock serve`` tests: ten threads of
one instance with ``max_running_turns = 2`` each send one turn."""

from __future__ import annotations

from paddock.contract import Event

ADMITTED = {"instances": {"gated": {"driver": "local", "max_running_turns": 2}}}
ADMITTED_TOML = """
[instances.gated]
driver = "local"
max_running_turns = 2
"""
SLOW = "@chunks 3\n@delay 0.05\nthree slow chunks please"


def ten_turns_two_at_a_time(rt, cwd, *, timeout: float = 60.0) -> list[Event]:
    """Send one turn to each of ten threads at once; check that at most two run at a time,
    that they start in the order sent (the first two at once, the rest from the queue, each
    announced by ``turn.queued`` with its position) and that each ends exactly once. Returns
    the events seen."""
    threads = [f"q{i}" for i in range(10)]
    for t in threads:
        rt.start_session(t, instance="gated", cwd=cwd)
    seen: list[Event] = []
    with rt.subscribe(instance_id="gated", types=["turn.queued", "turn.started", "turn.completed"]) as sub:
        results = [rt.send_turn(t, SLOW) for t in threads]
        assert [r.queued for r in results] == [None, None, 1, 2, 3, 4, 5, 6, 7, 8]
        queued = rt.queue()
        assert [q.thread_id for q in queued] == threads[len(threads) - len(queued):]  # the rest, in order
        assert [q.position for q in queued] == list(range(1, len(queued) + 1))
        ours = {r.turn_id for r in results}
        ended: dict[str, int] = {}
        running = peak = 0
        while len(ended) < 10:
            event = sub.get(timeout=timeout)
            assert event is not None, f"no event within {timeout} s; ended {sorted(ended)}"
            assert event.turn_id in ours
            seen.append(event)
            if event.type == "turn.started":
                running += 1
                peak = max(peak, running)
            elif event.type == "turn.completed":
                running -= 1
                ended[event.turn_id] = ended.get(event.turn_id, 0) + 1
                assert event.state == "completed", event
        late = sub.get(timeout=0.3)  # a second turn.completed of any of them would come now
        assert late is None, f"an event after every turn ended: {late}"
    assert peak == 2
    started = [e.thread_id for e in seen if e.type == "turn.started"]
    assert started == threads
    assert [(e.thread_id, e.position) for e in seen if e.type == "turn.queued"] == \
        [(t, i) for i, t in enumerate(threads[2:], 1)]
    assert set(ended.values()) == {1}
    assert rt.queue() == []
    return seen
