"""``paddock bench hub``: events/s through the EventHub and latency from ``tell`` to delivery.

Scenarios: event log on (SQLite in a temporary directory) and off, with 1 and with 10
subscribers. One producer thread emits ``content.delta`` batches through one Emitter (one ``tell``
per batch); each subscriber is read by its own thread.

- ``saturated``: the producer emits as fast as it can; ``events_per_s`` is events / time until
  every subscriber has received the last one. Latency there is mostly mailbox queueing.
- Without the log each subscriber may buffer the whole run (``max_buffered=events``); with it,
  the default bound applies and a subscriber that falls behind catches up from the log.
- ``paced``: the producer emits at ``--paced-rate`` events/s; latency is measured from just
  before the batch's ``tell`` to the moment a subscriber holds the batch's last event.

Prints one JSON document.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from paddock.actors import EventHub
from paddock.contract import ContentDelta

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit  # noqa: E402


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 3)


def _scenario(log: bool, subscribers: int, total: int, batch: int, rate: float | None,
              tmp: str) -> dict:
    path = os.path.join(tmp, f"events-{log}-{subscribers}-{rate}.sqlite") if log else None
    hub = EventHub.start(path)
    try:
        emitter = hub.emitter("local", "bench", "t1")
        template = tuple(
            ContentDelta(driver="", instance_id="", thread_id="", turn_id="u1", item_id="i1",
                         stream="assistant_text", delta=f"token {n} ")
            for n in range(batch)
        )
        batches = total // batch
        told = [0.0] * batches
        delivered = [[0.0] * batches for _ in range(subscribers)]
        # without the log a subscriber that falls behind its bound would skip events (it gets a
        # subscription.gap warning instead); give it room for the whole run
        subs = [hub.subscribe(max_buffered=None if log else total) for _ in range(subscribers)]
        done = threading.Barrier(subscribers + 1)

        def consume(index: int) -> None:
            sub, marks = subs[index], delivered[index]
            get = sub.get
            for b in range(batches):
                for _ in range(batch - 1):
                    get()
                get()
                marks[b] = time.perf_counter()
            done.wait()

        readers = [threading.Thread(target=consume, args=(i,), daemon=True) for i in range(subscribers)]
        for r in readers:
            r.start()
        interval = None if rate is None else batch / rate
        start = time.perf_counter()
        for b in range(batches):
            if interval is not None:
                wait = start + b * interval - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
            told[b] = time.perf_counter()
            emitter.emit(template)
        done.wait(timeout=300)
        elapsed = max(max(marks) for marks in delivered) - start
        latencies = [marks[b] - told[b] for marks in delivered for b in range(batches)]
        hub.flush()
        for sub in subs:
            sub.close()
        return {
            "log": log,
            "subscribers": subscribers,
            "events": batches * batch,
            "batch": batch,
            "mode": "saturated" if rate is None else "paced",
            "target_rate": rate,
            "events_per_s": round(batches * batch / elapsed),
            "latency_p50_ms": _ms(_percentile(latencies, 0.50)),
            "latency_p99_ms": _ms(_percentile(latencies, 0.99)),
            "log_bytes": os.path.getsize(path) if path else None,
        }
    finally:
        hub.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench hub", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events per saturated run")
    parser.add_argument("--batch", type=int, default=100, help="events per emit (one tell)")
    parser.add_argument("--paced-rate", type=float, default=20_000, help="events/s in paced runs")
    parser.add_argument("--paced-seconds", type=float, default=2.0, help="length of a paced run")
    parser.add_argument("--json", action="store_true", help="accepted for `paddock bench --json`")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="paddock-bench-hub-") as tmp:
        for log in (True, False):
            for subscribers in (1, 10):
                results.append(_scenario(log, subscribers, args.events, args.batch, None, tmp))
                paced_total = int(args.paced_rate * args.paced_seconds)
                results.append(_scenario(log, subscribers, paced_total, args.batch,
                                         args.paced_rate, tmp))
    emit({"benchmark": "hub", "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
