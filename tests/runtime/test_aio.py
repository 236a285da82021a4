"""AsyncRuntime never blocks the event loop, even while 20 sessions stream."""

from __future__ import annotations

import asyncio
import bisect
import os
import sys
import time

from paddock.aio import AsyncRuntime


async def _ticker(ticks: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        ticks.append(time.monotonic())
        await asyncio.sleep(0.005)


def test_loop_stays_responsive_while_20_sessions_stream(tmp_path):
    calls: list[tuple[str, float, float]] = []

    async def timed(name, coro):
        start = time.monotonic()
        try:
            return await coro
        finally:
            calls.append((name, start, time.monotonic()))

    # Every agent process takes a second to start, so start_session is a call long enough that a
    # loop blocked inside it would visibly miss ticks, however loaded the machine is.
    slow_python = tmp_path / "slow-python"
    slow_python.write_text(f"#!/bin/sh\nsleep 1\nexec {sys.executable} \"$@\"\n")
    os.chmod(slow_python, 0o700)
    instance = {"driver": "local", "binary": str(slow_python)}

    async def main():
        ticks: list[float] = []
        stop = asyncio.Event()
        async with await AsyncRuntime.open({"instances": {"a": instance, "b": instance}},
                                           state_dir=tmp_path / "s") as rt:
            ticker = asyncio.create_task(_ticker(ticks, stop))

            async def session(i: int) -> tuple[str, int]:
                thread = f"t{i}"
                await timed("start_session", rt.start_session(thread, instance="ab"[i % 2], cwd=tmp_path))
                events = rt.subscribe(thread_id=thread)
                turn = await timed("send_turn", rt.send_turn(thread, "@chunks 200\n@delay 0.002\n@reply streaming along"))
                deltas = 0
                async for event in events:
                    if event.type == "content.delta":
                        deltas += 1
                    elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                        await events.aclose()
                        return event.state, deltas
                raise AssertionError("subscription ended before the turn completed")

            results = await asyncio.wait_for(asyncio.gather(*(session(i) for i in range(20))), 60)
            stop.set()
            await ticker
        return ticks, results

    ticks, results = asyncio.run(main())
    assert results == [("completed", 200)] * 20
    # A call that blocked the loop would leave no tick inside its own interval: the loop could not
    # run the ticker while it was busy in the call. Only calls of a second or more are judged (each
    # start_session waits for its slow agent): a shorter one could miss the 5 ms ticker on a loaded
    # machine without blocking anything.
    long_calls = [(name, a, b) for name, a, b in calls if b - a >= 1.0]
    assert any(name == "start_session" for name, _, _ in long_calls), calls
    for name, a, b in long_calls:
        inside = bisect.bisect_left(ticks, b) - bisect.bisect_right(ticks, a)
        assert inside > 0, f"{name} blocked the event loop for {b - a:.3f} s"
