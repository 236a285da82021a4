"""A subscriber that stops reading costs bounded memory and, when it resumes, loses nothing."""

from __future__ import annotations

import gc

import psutil

from paddock.actors import EventHub

from .conftest import delta

TOTAL = 200_000
BATCH = 1_000


def test_stalled_subscriber_keeps_rss_bounded_then_receives_every_event_once(log_path):
    hub = EventHub.start(log_path)
    try:
        emitter = hub.emitter("local", "loc", "t1")
        stalled = hub.subscribe()
        text = "x" * 40
        # warm up SQLite's page cache and the allocator before measuring
        emitter.emit([delta("u1", "i1", text) for _ in range(BATCH)])
        hub.flush()
        gc.collect()
        me = psutil.Process()
        base = me.memory_info().rss
        peak = base
        for n in range(1, TOTAL // BATCH):
            emitter.emit([delta("u1", "i1", text) for _ in range(BATCH)])
            if n % 10 == 0:
                hub.flush()  # keeps the producer from racing ahead of the hub's mailbox
                peak = max(peak, me.memory_info().rss)
        hub.flush()
        peak = max(peak, me.memory_info().rss)
        assert hub.last_seq == TOTAL
        assert peak - base < 50 * 1024 * 1024, f"RSS grew by {(peak - base) / 2**20:.1f} MB"

        expected = 1
        while expected <= TOTAL:
            event = stalled.get(timeout=10)
            assert event is not None and event.seq == expected
            expected += 1
        # it rejoined the live stream
        emitter.emit([delta("u1", "i1", "live")])
        event = stalled.get(timeout=10)
        assert event is not None and (event.seq, event.delta) == (TOTAL + 1, "live")
        assert stalled.get(timeout=0) is None
        peak = max(peak, me.memory_info().rss)
        assert peak - base < 50 * 1024 * 1024, f"RSS grew by {(peak - base) / 2**20:.1f} MB"
    finally:
        hub.close()
