"""``paddock bench floor``: the per-event cost of Paddock's log-off hot path run in ONE thread.

The same kind of bytes ``throughput`` streams (N sessions x C ``agent_message_chunk`` lines, read
in 64 KiB chunks) go through the runtime's own pieces, called directly in one thread with no
actor hand-off: the line splitter, the JSON-RPC envelope decode, the ACP router's decode and
grouping, the ACP translator, the EventHub's grammar guard, stamping and publish, and one
subscriber's ``get`` + ``.type``. No process, no pipe, no threads: what is left is the work per
event, the floor under ``throughput``'s end-to-end figure (which adds the thread hand-offs).
Interleaved rounds, medians. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, median  # noqa: E402

_READ = 65_536


class _Session:
    """Stands in for an ACP session actor: translates a routed batch and hands it to the hub in
    the caller's thread (where the real one would be told)."""

    def __init__(self, hub, thread_id: str) -> None:
        from paddock.drivers.acp._translate import Translator

        self.hub = hub
        self.key = ("local", "local0", thread_id)
        self.tr = Translator("local", "local0", thread_id)
        hub._process([(self.key, tuple(self.tr.start_turn("u-" + thread_id, model=None, interaction_mode=None)))])

    def tell(self, message) -> None:
        out: list = []
        update = self.tr.update
        for item in message.items:
            update(item, out)
        self.hub._process([(self.key, tuple(out))])


def _lines(sessions: int, chunks: int) -> bytes:
    """What the local agent writes for ``@chunks C`` with an empty prompt (its answer "You said: "
    cut into C one-character pieces), for sessions with UUID-shaped ids ``sess-<n>``."""
    import msgspec

    from paddock.drivers.local.agent._agent import split_answer

    encode = msgspec.json.encode
    pieces = [encode(p) for p in split_answer("You said: ", chunks)]
    prefixes = [
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + _sid(n).encode()
        + b'","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":'
        for n in range(sessions)
    ]
    return b"".join(prefix + piece + b"}}}}\n" for piece in pieces for prefix in prefixes)


def _sid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


def one_round(data: bytes, sessions: int) -> dict:
    from paddock.actors import JsonRpcConnection, Subscription
    from paddock.actors.transports._lines import LineSplitter
    from paddock.actors.events._hub import EventHub, _State
    from paddock.drivers.acp._agent import Router

    hub = EventHub(_State(None), log=None, max_batch_events=8192)  # constructed, never started
    sub = Subscription._create(thread_id=None, instance_id=None, types=None, assistant_delivery="streaming",
                       log_path=None, max_buffered=1 << 30, on_close=lambda s: None)
    hub._publisher.subs.append(sub)
    router = Router(lambda request: None)
    for n in range(sessions):
        router.register(_sid(n), _Session(hub, f"t{n}"))
    while sub.get(timeout=0) is not None:
        pass
    conn = JsonRpcConnection(handler=router.on_batch)
    splitter = LineSplitter(1 << 24, lambda size: None)
    split = pipeline = consume = 0.0
    events = deltas = 0
    clock = time.perf_counter
    cpu0 = time.thread_time()
    for offset in range(0, len(data), _READ):
        t0 = clock()
        lines = splitter.feed(data[offset:offset + _READ])
        t1 = clock()
        conn._on_lines(lines)
        t2 = clock()
        while True:
            ev = sub.get(timeout=0)
            if ev is None:
                break
            events += 1
            if ev.type == "content.delta":
                deltas += 1
        t3 = clock()
        split += t1 - t0
        pipeline += t2 - t1
        consume += t3 - t2
    cpu = time.thread_time() - cpu0
    total = split + pipeline + consume
    return {
        "events": events,
        "content_deltas": deltas,
        "us_per_event": round(total / events * 1e6, 3),
        "events_per_s": round(events / total),
        "cpu_us_per_event": round(cpu / events * 1e6, 3),
        "stages_us_per_event": {
            "split": round(split / events * 1e6, 3),
            "decode_route_translate_hub": round(pipeline / events * 1e6, 3),
            "subscriber": round(consume / events * 1e6, 3),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench floor", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=20_000, help="chunks per session")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    args = parser.parse_args(argv)
    data = _lines(args.sessions, args.chunks)
    rounds = [one_round(data, args.sessions) for _ in range(args.rounds)]
    emit({
        "benchmark": "floor",
        "sessions": args.sessions,
        "chunks": args.chunks,
        "rounds": args.rounds,
        "events_per_s_median": median(r["events_per_s"] for r in rounds),
        "us_per_event_median": median(r["us_per_event"] for r in rounds),
        "per_round": rounds,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
