"""The asyncio faces: AsyncRuntime in-process and AsyncRemoteRuntime over ``paddock serve`` run the
same scenario."""

from __future__ import annotations

import asyncio

import pytest

from paddock.aio import AsyncRuntime
from paddock.client import AsyncRemoteRuntime
from paddock.contract import SessionNotFoundError
from tests.runtime.conftest import TWO_LOCAL


async def _scenario(rt, ws) -> None:
    assert [i.id for i in await rt.instances()] == ["local-a", "local-b"]
    await rt.start_session("t1", instance="local-a", cwd=ws, runtime_mode="approval-required")
    async with rt.subscribe(thread_id="t1") as events:
        turn = await rt.send_turn("t1", f"@write {ws}/a.txt async\n@reply written")
        text = ""
        async for event in events:
            if event.type == "request.opened":
                assert [r.request_id for r in await rt.pending_requests()] == [event.request_id]
                await rt.respond_to_request("t1", event.request_id, "accept")
            elif event.type == "content.delta":
                text += event.delta
            elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                break
    assert text == "written" and (ws / "a.txt").read_text() == "async"
    assert [t.state for t in (await rt.read_thread("t1")).turns] == ["completed"]
    with pytest.raises(SessionNotFoundError):
        await rt.send_turn("ghost", "hi")
    # many tasks at once on one loop
    await asyncio.gather(*(rt.start_session(f"g{i}", instance="local-b", cwd=ws) for i in range(5)))
    assert len(await rt.list_sessions()) == 6
    await rt.stop_all()


@pytest.mark.parametrize("where", ["in-process", "remote-unix", "remote-tcp"])
def test_async_scenario(where, short_root, make_server):
    if where == "in-process":
        ws = short_root / "ws"
        ws.mkdir()

        async def main() -> None:
            async with await AsyncRuntime.open(TWO_LOCAL, state_dir=short_root / "state") as rt:
                await _scenario(rt, ws)
    else:
        served = make_server(where.split("-")[1])

        async def main() -> None:
            async with await AsyncRemoteRuntime.connect(served.state) as rt:
                await _scenario(rt, served.workspace)

    asyncio.run(main())
