"""EventHub: stamping, filtered fan-out, replay across restarts, commit-before-publish."""

from __future__ import annotations

import sqlite3
import threading
from array import array

import pytest

import msgspec

from paddock.actors import BUFFERED_TEXT_LIMIT, EventHub, EventLog, LogReader, build_chunks
from paddock.actors.events._event_log import SPAN
from paddock.contract import (
    PaddockError,
    PersistenceError,
    RuntimeWarningEvent,
    TurnStarted,
    ValidationError,
    decode_event,
    encode_event,
)

from .conftest import (
    delta,
    drain,
    item_completed,
    item_started,
    request_opened,
    request_resolved,
    tag,
    turn_completed,
    turn_started,
)


def logged(log_path: str) -> list[tuple[int, str, str, str, bytes]]:
    """Every logged event as ``(seq, thread_id, instance_id, type, body)``, read from the chunk
    rows directly (not through LogReader)."""
    with sqlite3.connect(log_path) as conn:
        chunks = conn.execute(
            "SELECT first_seq, last_seq, thread_id, instance_id, seqs, types, bodies FROM event_chunks"
        ).fetchall()
    out = []
    for first, last, tid, iid, seqs, types, bodies in chunks:
        numbers = array("q")
        numbers.frombytes(seqs)
        assert (numbers[0], numbers[-1]) == (first, last) and list(numbers) == sorted(numbers)
        out += zip(numbers, [tid] * len(numbers), [iid] * len(numbers), types.split("\n"), bodies.split(b"\n"))
    return sorted(out)


def test_hub_stamps_identity_seq_event_id_and_time(hub):
    sub = hub.subscribe()
    lying = TurnStarted(driver="liar", instance_id="other", thread_id="elsewhere", turn_id="u1",
                        seq=99, event_id="mine", created_at=12.5)
    hub.emitter("codex", "codex-work", "t1").emit([lying, delta("u1", "i1", "hi")])
    assert hub.flush() == 2 == hub.last_seq
    first, second = drain(sub)
    assert (first.driver, first.instance_id, first.thread_id) == ("codex", "codex-work", "t1")
    assert (second.driver, second.instance_id, second.thread_id) == ("codex", "codex-work", "t1")
    assert [first.seq, second.seq] == [1, 2]
    assert first.event_id != second.event_id and "mine" not in (first.event_id, second.event_id)
    assert first.created_at == 12.5  # a driver's own timestamp is kept
    assert second.created_at > 1e9  # 0 is replaced by the hub's clock


def test_two_threads_three_filtered_subscribers_see_exactly_their_events(hub, log_path):
    by_thread = hub.subscribe(thread_id="t1")
    by_instance = hub.subscribe(instance_id="inst-b")
    by_type = hub.subscribe(types=["turn.started", "turn.completed"])
    everything = hub.subscribe()

    def produce(thread_id: str, instance_id: str) -> None:
        emitter = hub.emitter("local", instance_id, thread_id)
        for turn in range(20):
            tid = f"{thread_id}-u{turn}"
            emitter.emit([turn_started(tid)])
            for batch in range(5):
                emitter.emit([delta(tid, "i", f"{batch}.{n}") for n in range(10)])
            emitter.emit([turn_completed(tid)])

    producers = [threading.Thread(target=produce, args=args)
                 for args in (("t1", "inst-a"), ("t2", "inst-b"))]
    for p in producers:
        p.start()
    for p in producers:
        p.join()
    hub.flush()
    rows = logged(log_path)
    assert [r[0] for r in rows] == list(range(1, 2 * 20 * 52 + 1))

    def expect(keep) -> list[int]:
        return [seq for seq, thread_id, instance_id, type_, _ in rows if keep(thread_id, instance_id, type_)]

    cases = [
        (by_thread, expect(lambda t, i, y: t == "t1")),
        (by_instance, expect(lambda t, i, y: i == "inst-b")),
        (by_type, expect(lambda t, i, y: y in ("turn.started", "turn.completed"))),
        (everything, [r[0] for r in rows]),
    ]
    for sub, expected in cases:
        got = drain(sub)
        assert [e.seq for e in got] == expected, sub
    assert len(cases[0][1]) == len(cases[1][1]) == 20 * 52
    assert len(cases[2][1]) == 2 * 20 * 2
    # per thread, events keep the order each producer emitted them in
    t1_text = [e.delta for e in decode_all(rows) if e.thread_id == "t1" and tag(e) == "content.delta"]
    assert t1_text == [f"{b}.{n}" for _ in range(20) for b in range(5) for n in range(10)]


def decode_all(rows):
    return [decode_event(r[4]) for r in rows]


def test_a_closed_or_abandoned_subscriber_never_affects_the_others(hub):
    closed = hub.subscribe()
    abandoned = hub.subscribe(max_buffered=10)
    healthy = hub.subscribe()
    failures: list[BaseException] = []

    def bad_consumer() -> None:
        abandoned.get(timeout=5)
        raise RuntimeError("host callback blew up")

    t = threading.Thread(target=bad_consumer)
    t.run = _capture(t.run, failures)  # keep pytest's thread-exception warning out of the report
    t.start()
    emitter = hub.emitter("local", "loc", "t1")
    emitter.emit([delta(None, None, "first")])
    t.join(5)
    assert failures and isinstance(failures[0], RuntimeError)
    closed.close()
    for n in range(100):
        emitter.emit([delta(None, None, f"{n}.{k}") for k in range(10)])
    hub.flush()
    assert closed.get(timeout=0) is None and closed.ended
    assert len(drain(healthy)) == 1001
    # the abandoned one fell far past its bound, went to the log and still has everything
    assert [e.seq for e in drain(abandoned)] == list(range(2, 1002))


def _capture(run, failures):
    def wrapped():
        try:
            run()
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)
    return wrapped


def test_from_seq_after_restart_replays_then_joins_live_without_gap(log_path):
    with EventHub.start(log_path) as first:
        emitter = first.emitter("local", "loc", "t1")
        for n in range(10):
            emitter.emit([delta(None, None, f"old {n}.{k}") for k in range(10)])
        assert first.flush() == 100

    second = EventHub.start(log_path)
    try:
        assert second.last_seq == 100
        replay = second.subscribe(from_seq=1)
        middle = second.subscribe(from_seq=60, thread_id="t1")
        emitter = second.emitter("local", "loc", "t1")
        producer = threading.Thread(
            target=lambda: [emitter.emit([delta(None, None, f"new {n}")]) for n in range(300)]
        )
        producer.start()
        got = [replay.get(timeout=10) for _ in range(400)]
        producer.join()
        second.flush()
        assert [e.seq for e in got] == list(range(1, 401))
        assert got[0].delta == "old 0.0" and got[100].delta == "new 0"
        assert [e.seq for e in drain(middle)] == list(range(60, 401))
        assert replay.get(timeout=0) is None
        future = second.subscribe(from_seq=403)
        emitter.emit([delta(None, None, "401"), delta(None, None, "402"), delta(None, None, "403")])
        second.flush()
        assert [e.seq for e in drain(future)] == [403]
    finally:
        second.close()


def test_killing_the_writer_mid_batch_loses_nothing_that_was_shown(log_path):
    hub = EventHub.start(log_path)
    sub = hub.subscribe()
    emitter = hub.emitter("local", "loc", "t1")
    emitter.emit([delta(None, None, f"kept {n}") for n in range(10)])
    hub.flush()
    hub.kill_writer_mid_batch(after_rows=3)
    emitter.emit([delta(None, None, f"lost {n}") for n in range(10)])
    shown = list(sub)  # ends when the hub dies; shows only what was committed
    assert hub.join(timeout=10) and not hub.alive
    emitter.emit([delta(None, None, "after death")])  # never raises into the driver
    assert hub.dropped_batches == 1
    with pytest.raises(PaddockError):
        hub.flush()

    rows = logged(log_path)
    assert [e.delta for e in shown] == [f"kept {n}" for n in range(10)]
    assert [r[0] for r in rows] == [e.seq for e in shown] == list(range(1, 11))
    assert [r[4] for r in rows] == [encode_event(e) for e in shown]

    with EventHub.start(log_path) as again:
        again.emitter("local", "loc", "t1").emit([delta(None, None, "next")])
        assert again.flush() == 11
        assert [e.seq for e in drain(again.subscribe(from_seq=1))] == list(range(1, 12))


def test_compact_keeps_the_newest_event_and_seq_continues(log_path):
    with EventHub.start(log_path) as hub:
        hub.emitter("local", "loc", "t1").emit([delta(None, None, str(n)) for n in range(100)])
        hub.flush()
        assert hub.compact(51) == 50
        gap, *rest = drain(hub.subscribe(from_seq=1))
        assert [e.seq for e in rest] == list(range(51, 101))
        assert isinstance(gap, RuntimeWarningEvent) and gap.code == "subscription.gap"
        assert gap.detail == {"first_seq": 1, "last_seq": 50, "count": None, "cause": "compacted"}
        assert hub.compact(10_000) == 49  # the newest event stays
    with EventHub.start(log_path) as hub:
        hub.emitter("local", "loc", "t1").emit([delta(None, None, "x")])
        assert hub.flush() == 101


def test_size_policy_deletes_the_oldest_events(tmp_path):
    log = EventLog(str(tmp_path / "log.sqlite"), max_bytes=256 * 1024)
    encode_lines = msgspec.json.Encoder().encode_lines
    for start in range(0, 20_000, 1000):
        # two threads interleaved, so that compaction cuts through chunks
        batch = [msgspec.structs.replace(delta(None, None, "x" * 200), thread_id=f"t{s % 2}", instance_id="i", seq=s)
                 for s in range(start + 1, start + 1001)]
        log.append(build_chunks(batch, encode_lines))
        log.enforce_size()
    assert log.size_bytes() <= 256 * 1024
    seqs = [row[0] for row in logged(log.path)]
    assert seqs[-1] == 20_000 and seqs[0] > 15_000
    assert seqs == list(range(seqs[0], 20_001))  # deletion cut exactly below one seq
    log.close()


def test_log_reader_merges_interleaved_chunks_in_seq_order_with_a_limit(tmp_path):
    log = EventLog(str(tmp_path / "log.sqlite"))
    encode_lines = msgspec.json.Encoder().encode_lines
    kinds = [delta(None, None, "d"), turn_started("u")]
    for start in range(0, 3000, 500):
        batch = [msgspec.structs.replace(kinds[s % 5 == 0], thread_id=f"t{s % 3}", instance_id=f"i{s % 2}", seq=s)
                 for s in range(start + 1, start + 501)]
        log.append(build_chunks(batch, encode_lines))
    log.close()
    every = LogReader(log.path)
    assert [seq for seq, _ in every.read(1, 3000, 10_000)] == list(range(1, 3001))
    assert [seq for seq, _ in every.read(777, 2000, 100)] == list(range(777, 877))
    page = LogReader(log.path, thread_id="t1", instance_id="i0", types=["turn.started"]).read(1, 3000, 50)
    expected = [s for s in range(1, 3001) if s % 3 == 1 and s % 2 == 0 and s % 5 == 0][:50]
    assert [seq for seq, _ in page] == expected
    assert all(decode_event(body).seq == seq for seq, body in page)
    assert every.first_seq() == 1
    every.close()


def test_buffered_delivery_coalesces_assistant_text_up_to_boundaries(hub):
    buffered = hub.subscribe(assistant_delivery="buffered")
    streaming = hub.subscribe()
    big = "y" * 10_000
    hub.emitter("local", "loc", "t1").emit([
        turn_started("u1"),
        item_started("u1", "i1"),
        *[delta("u1", "i1", c) for c in "hello"],
        delta("u1", "i1", "r", stream="reasoning_text"),
        *[delta("u1", "i1", c) for c in "world"],
        request_opened("u1", "r1"),
        request_resolved("u1", "r1"),
        delta("u1", "i1", "!"),
        item_completed("u1", "i1"),
        item_started("u1", "i2"),
        *[delta("u1", "i2", big) for _ in range(5)],
        delta("u1", "i3", "other item"),
        delta("u1", "i3", " continues"),
        turn_completed("u1"),
    ])
    hub.flush()
    got = [(tag(e), getattr(e, "delta", None)) for e in drain(buffered)]
    assert got == [
        ("turn.started", None),
        ("item.started", None),
        ("content.delta", "hello"),
        ("content.delta", "r"),
        ("content.delta", "world"),
        ("request.opened", None),
        ("request.resolved", None),
        ("content.delta", "!"),
        ("item.completed", None),
        ("item.started", None),
        ("content.delta", big * 2),
        ("content.delta", big * 2),
        ("content.delta", big),
        ("content.delta", "other item continues"),
        ("turn.completed", None),
    ]
    assert all(len(text or "") <= BUFFERED_TEXT_LIMIT for _, text in got)
    streamed = drain(streaming)
    assert len(streamed) == 26
    # a coalesced delta carries the seq of the last delta it holds, so from_seq=seq+1 resumes
    hello = drain(hub.subscribe(from_seq=1, assistant_delivery="buffered"))[2]
    assert hello.seq == streamed[6].seq and hello.delta == "hello"


def test_without_log_a_slow_subscriber_gets_a_gap_warning_and_bounded_memory():
    hub = EventHub.start(None, max_buffered=100)
    try:
        sub = hub.subscribe()
        emitter = hub.emitter("local", "loc", "t1")
        for n in range(20):
            emitter.emit([delta(None, None, f"{n}.{k}") for k in range(50)])
        hub.flush()
        got = drain(sub)
        assert [e.seq for e in got[:100]] == list(range(1, 101))
        gap = got[100]
        assert isinstance(gap, RuntimeWarningEvent) and gap.code == "subscription.gap"
        assert gap.detail == {"first_seq": 101, "last_seq": 1000, "count": 900, "cause": "slow"}
        assert len(got) == 101
        emitter.emit([delta(None, None, "live again")])
        hub.flush()
        assert [e.seq for e in drain(sub)] == [1001]
    finally:
        hub.close()


def test_subscribe_rejects_bad_filters(hub):
    with pytest.raises(ValidationError, match="unknown event types"):
        hub.subscribe(types=["turn.finished"])
    with pytest.raises(ValidationError, match="assistant_delivery"):
        hub.subscribe(assistant_delivery="chunky")
    no_log = EventHub.start(None)
    try:
        with pytest.raises(ValidationError, match="from_seq needs the event log"):
            no_log.subscribe(from_seq=1)
    finally:
        no_log.close()


def test_close_ends_subscriptions_after_delivering_what_was_published(hub):
    sub = hub.subscribe()
    hub.emitter("local", "loc", "t1").emit([delta(None, None, str(n)) for n in range(5)])
    hub.close()
    assert [e.delta for e in sub] == ["0", "1", "2", "3", "4"]
    assert sub.ended
    hub.close()  # idempotent


def test_a_log_with_one_row_per_event_is_converted_once(tmp_path):
    path = str(tmp_path / "old.sqlite")
    old = [turn_started("u1"), delta("u1", None, "hi")]
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, instance_id TEXT NOT NULL,"
                     " type TEXT NOT NULL, created_at REAL NOT NULL, body BLOB NOT NULL)")
        for seq, ev in enumerate(old, 1):
            ev = msgspec.structs.replace(ev, seq=seq, thread_id="t1", instance_id="loc")
            conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", (seq, "t1", "loc", ev.type, 0.0, encode_event(ev)))
    with EventHub.start(path) as hub:
        hub.emitter("local", "loc", "t1").emit([delta("u1", None, " there")])
        assert hub.flush() == 3
        assert [(e.type, e.seq) for e in drain(hub.subscribe(from_seq=1))] == [
            ("turn.started", 1), ("content.delta", 2), ("content.delta", 3)]
    assert [row[:4] for row in logged(path)] == [
        (1, "t1", "loc", "turn.started"), (2, "t1", "loc", "content.delta"), (3, "t1", "loc", "content.delta")]


def test_a_run_wider_than_the_span_limit_is_split_and_read_back_whole(tmp_path):
    log = EventLog(str(tmp_path / "log.sqlite"))
    encode_lines = msgspec.json.Encoder().encode_lines
    batch = [msgspec.structs.replace(delta(None, None, "x"), thread_id="t1", instance_id="i", seq=s)
             for s in range(1, SPAN + 2001)]
    chunks = build_chunks(batch, encode_lines)
    assert len(chunks) == 2 and all(last - first < SPAN for first, last, *_ in chunks)
    log.append(chunks)
    log.append(build_chunks([msgspec.structs.replace(batch[0], seq=SPAN + 2001)], encode_lines))
    log.close()
    reader = LogReader(log.path, thread_id="t1")
    assert [seq for seq, _ in reader.read(SPAN - 5, SPAN + 5000, 10)] == list(range(SPAN - 5, SPAN + 5))
    assert [seq for seq, _ in reader.read(SPAN + 1990, SPAN + 5000, 100)] == list(range(SPAN + 1990, SPAN + 2002))
    reader.close()


def test_a_damaged_chunk_is_a_persistence_error_not_a_crash(tmp_path):
    log = EventLog(str(tmp_path / "log.sqlite"))
    encode_lines = msgspec.json.Encoder().encode_lines
    log.append(build_chunks([msgspec.structs.replace(delta(None, None, "x"), thread_id="t1", instance_id="i", seq=s)
                             for s in (1, 2)], encode_lines))
    log.close()
    with sqlite3.connect(log.path) as conn:  # two seqs, one body
        conn.execute("UPDATE event_chunks SET bodies = ? WHERE first_seq = 1", (b'{"type":"content.delta"}',))
    reader = LogReader(log.path)
    with pytest.raises(PersistenceError, match="2 seqs, 2 types and 1 bodies"):
        reader.read(1, 2, 10)
    reader.close()
