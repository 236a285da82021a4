"""paddock.aio: async iteration over a subscription without blocking the event loop."""

from __future__ import annotations

import asyncio

from paddock.aio import AsyncSubscription, aiter_subscription

from .conftest import delta


def test_waiting_for_events_leaves_the_loop_free(hub):
    emitter = hub.emitter("local", "loc", "t1")
    sub = AsyncSubscription(hub.subscribe())

    async def main():
        loop = asyncio.get_running_loop()
        ran = asyncio.Event()

        async def producer():
            ran.set()  # runs only if get() below yields the loop while it waits
            await loop.run_in_executor(None, emitter.emit, [delta(None, None, "hello")])

        task = asyncio.create_task(producer())
        event = await sub.get(timeout=5)
        await task
        assert ran.is_set()
        assert event is not None and event.delta == "hello"
        assert await sub.get(timeout=0.01) is None  # a timeout, not the end
        await sub.aclose()
        assert await sub.get() is None  # ended

    asyncio.run(main())


def test_async_iteration_replays_from_the_log_then_follows_live_until_close(hub):
    emitter = hub.emitter("local", "loc", "t1")
    for n in range(50):
        emitter.emit([delta(None, None, f"{n}.{k}") for k in range(100)])
    hub.flush()

    async def main():
        loop = asyncio.get_running_loop()
        sub = hub.subscribe(from_seq=1, max_buffered=500)
        seqs = []
        async for event in aiter_subscription(sub):
            seqs.append(event.seq)
            if event.seq == 5000:
                # live events follow; then closing the hub ends the iteration
                await loop.run_in_executor(None, lambda: (
                    emitter.emit([delta(None, None, "live")]), hub.close()))
        return seqs

    assert asyncio.run(main()) == list(range(1, 5002))
