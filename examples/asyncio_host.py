"""An asyncio host: several sessions stream concurrently while the event loop stays free.

Run: python examples/asyncio_host.py
"""

import asyncio
import tempfile

from paddock.aio import AsyncRuntime


async def one_turn(rt: AsyncRuntime, thread: str, cwd: str) -> str:
    await rt.start_session(thread, instance="local", cwd=cwd)
    events = rt.subscribe(thread_id=thread)
    turn = await rt.send_turn(thread, f"@chunks 20\n@reply {thread} finished")
    text = []
    async for event in events:
        if event.type == "content.delta":
            text.append(event.delta)
        elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
            break
    await events.aclose()
    return "".join(text)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with await AsyncRuntime.open(state_dir=f"{tmp}/state") as rt:
            results = await asyncio.gather(*(one_turn(rt, f"t{i}", tmp) for i in range(5)))
            for line in results:
                print(line)


asyncio.run(main())
