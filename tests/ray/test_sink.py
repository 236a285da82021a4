"""The node-side event sink (no cluster needed): secrets are masked on the node, the queue is
bounded (a full queue makes emitters wait, it never drops), and order is kept through the wire
encoding."""

from __future__ import annotations

import threading
import time

from paddock.contract import TO_BE_STAMPED, ContentDelta
from paddock.drivers.ray._sink import NodeSink, Pulled, decode_pulled, encode_pulled

SECRET = "node-side-secret-0123456789"


def _deltas(n, start=0, text="x"):
    return [ContentDelta(**TO_BE_STAMPED, stream="assistant_text", delta=f"{text}{start + i}") for i in range(n)]


def test_secrets_are_masked_on_the_node_before_anything_travels():
    sink = NodeSink("inst", [SECRET], max_events=1000)
    sink.emitter("local", "inst", "t1").emit(_deltas(1, text=f"key={SECRET} "))
    sink.instance_warning("local", "inst", "transport.garbage", f"saw {SECRET}")
    wire = encode_pulled(Pulled(batches=sink.drain(100, 0), sessions=[]))
    assert SECRET.encode() not in wire
    batches = decode_pulled(wire).batches
    assert [(b.driver, b.thread_id) for b in batches] == [("local", "t1"), ("local", "")]
    assert "[redacted]" in batches[0].events[0].delta and "[redacted]" in batches[1].events[0].message


def test_a_full_queue_makes_the_emitter_wait_and_loses_nothing():
    sink = NodeSink("inst", [], max_events=100)
    emitter = sink.emitter("local", "inst", "t1")
    done = threading.Event()

    def produce():
        for n in range(10):
            emitter.emit(_deltas(50, start=n * 50))
        done.set()

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    deadline = time.monotonic() + 10
    while sink.waits == 0:  # two batches fill the queue; the third waits for room
        assert time.monotonic() < deadline, "the emitter never waited"
        time.sleep(0.01)
    assert not done.is_set() and sink.buffered <= 100
    seen = []
    while not (done.is_set() and sink.buffered == 0):
        assert time.monotonic() < deadline, f"stalled after {len(seen)} events"
        for batch in decode_pulled(encode_pulled(Pulled(batches=sink.drain(60, 0.05), sessions=[]))).batches:
            seen += [e.delta for e in batch.events]
        assert sink.buffered <= 100
    producer.join(5)
    assert seen == [f"x{i}" for i in range(500)]
