"""``AsyncSubscription``: a :class:`~paddock.actors.Subscription` as an async iterator.

Nothing here blocks the event loop: events already in the subscription's memory are taken
directly; reading the event log (catch-up) runs in the loop's default executor; waiting is an
``asyncio`` future that the hub's thread completes with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from paddock.actors import Subscription
from paddock.actors.events import END, NEEDS_IO
from paddock.contract import Event

__all__ = ["AsyncSubscription", "aiter_subscription"]


class AsyncSubscription:
    """``async for event in AsyncSubscription(sub)``; also an async context manager that closes
    the subscription. Iteration ends when the subscription ends. Use it from one event loop."""

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription

    def __aiter__(self) -> AsyncSubscription:
        return self

    async def __anext__(self) -> Event:
        event = await self.get()
        if event is None:
            raise StopAsyncIteration
        return event

    async def get(self, timeout: float | None = None) -> Event | None:
        """The next event, or ``None`` when ``timeout`` passed or the subscription ended."""
        sub = self.subscription
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            event = sub._poll()
            if event is NEEDS_IO:
                event = await loop.run_in_executor(None, sub._get, 0.0, True)
            if event is END:
                return None
            if event is not None and event is not NEEDS_IO:
                return event
            if event is NEEDS_IO:
                continue
            woken: asyncio.Future[None] = loop.create_future()

            def wake(fut: asyncio.Future[None] = woken) -> None:
                # runs in the hub's thread (or here, when data is already waiting)
                try:
                    loop.call_soon_threadsafe(_resolve, fut)
                except RuntimeError:  # the loop is closed; nobody waits any more
                    pass

            sub._set_waker(wake)
            try:
                if deadline is None:
                    await woken
                else:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        return None
                    try:
                        await asyncio.wait_for(woken, remaining)
                    except asyncio.TimeoutError:
                        return None
            finally:
                sub._set_waker(None)

    async def aclose(self) -> None:
        self.subscription.close()

    async def __aenter__(self) -> AsyncSubscription:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.subscription.close()


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def aiter_subscription(subscription: Subscription) -> AsyncIterator[Event]:
    """``async for event in aiter_subscription(sub)``: see :class:`AsyncSubscription`."""
    return AsyncSubscription(subscription)
