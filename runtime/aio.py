"""The asyncio face of the runtime.

``AsyncRuntime`` has the :class:`~paddock.Runtime` API as coroutines; ``aiter_subscription``
turns a :class:`~paddock.actors.Subscription` into an async iterator that never blocks the event
loop.
"""

from __future__ import annotations

from paddock._aio_runtime import AsyncRuntime as AsyncRuntime
from paddock._aio_subscription import AsyncSubscription as AsyncSubscription
from paddock._aio_subscription import aiter_subscription as aiter_subscription

__all__ = ["AsyncRuntime", "AsyncSubscription", "aiter_subscription"]
