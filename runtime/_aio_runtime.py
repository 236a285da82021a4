"""``AsyncRuntime``: the :class:`Runtime` API for asyncio hosts.

Every blocking call runs in a thread-pool executor, so the event loop never waits on a pykka
future or a lock; events arrive through an async iterator fed with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from paddock._pending import PendingRequest
from paddock._runtime import InstanceInfo, Runtime
from paddock.store import Binding
from paddock.contract import (
    Decision,
    Event,
    InteractionMode,
    RuntimeMode,
    Session,
    ThreadSnapshot,
    TurnStartResult,
)

__all__ = ["AsyncRuntime"]


class AsyncRuntime:
    """Async face of :class:`Runtime`. Build it with ``await AsyncRuntime.open(...)`` and use
    ``async with``. Methods run the blocking call in a private executor and are safe to call
    concurrently from many tasks."""

    def __init__(self, runtime: Runtime, executor: ThreadPoolExecutor) -> None:
        self.runtime = runtime
        self._executor = executor

    @classmethod
    async def open(
        cls,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        *,
        state_dir: str | os.PathLike[str] | None = None,
        max_workers: int = 32,
    ) -> AsyncRuntime:
        executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="paddock-aio")
        loop = asyncio.get_running_loop()
        rt = await loop.run_in_executor(executor, functools.partial(Runtime.open, config, state_dir=state_dir))
        return cls(rt, executor)

    async def _call(self, fn, /, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def instances(self) -> list[InstanceInfo]:
        return await self._call(self.runtime.instances)

    async def start_session(
        self,
        thread_id: str,
        *,
        instance: str,
        cwd: str | os.PathLike[str],
        runtime_mode: RuntimeMode = "full-access",
        interaction_mode: InteractionMode = "default",
        model: str | None = None,
        resume: Literal["auto", "require", "never"] | None = None,
        timeout: float | None = None,
    ) -> Session:
        return await self._call(
            self.runtime.start_session, thread_id, instance=instance, cwd=cwd, runtime_mode=runtime_mode,
            interaction_mode=interaction_mode, model=model, resume=resume, timeout=timeout,
        )

    async def send_turn(
        self, thread_id: str, text: str, *, interaction_mode: InteractionMode | None = None,
        model: str | None = None, timeout: float | None = None,
    ) -> TurnStartResult:
        return await self._call(
            self.runtime.send_turn, thread_id, text, interaction_mode=interaction_mode, model=model, timeout=timeout
        )

    async def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        await self._call(self.runtime.interrupt_turn, thread_id, turn_id, timeout=timeout)

    async def steer_turn(self, thread_id: str, text: str, *, timeout: float | None = None) -> TurnStartResult:
        return await self._call(self.runtime.steer_turn, thread_id, text, timeout=timeout)

    async def respond_to_request(self, thread_id: str, request_id: str, decision: Decision, *, timeout: float | None = None) -> None:
        await self._call(self.runtime.respond_to_request, thread_id, request_id, decision, timeout=timeout)

    async def respond_to_user_input(self, thread_id: str, request_id: str, answers: Mapping[str, Any], *, timeout: float | None = None) -> None:
        await self._call(self.runtime.respond_to_user_input, thread_id, request_id, answers, timeout=timeout)

    async def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        await self._call(self.runtime.stop_session, thread_id, timeout=timeout)

    async def stop_all(self, *, timeout: float | None = None) -> None:
        await self._call(self.runtime.stop_all, timeout=timeout)

    async def list_sessions(self) -> list[Session]:
        return await self._call(self.runtime.list_sessions)

    async def has_session(self, thread_id: str) -> bool:
        return await self._call(self.runtime.has_session, thread_id)

    async def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot:
        return await self._call(self.runtime.read_thread, thread_id, timeout=timeout)

    async def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        return await self._call(self.runtime.rollback_thread, thread_id, num_turns, timeout=timeout)

    async def diagnose(self, *, timeout: float = 10.0) -> list[dict[str, Any]]:
        return await self._call(self.runtime.diagnose, timeout=timeout)

    async def pending_requests(self, thread_id: str | None = None, *, timeout: float | None = None) -> list[PendingRequest]:
        return await self._call(self.runtime.pending_requests, thread_id, timeout=timeout)

    async def list_threads(self) -> list[Binding]:
        return await self._call(self.runtime.list_threads)

    async def compact_events(self, before_seq: int) -> int:
        return await self._call(self.runtime.compact_events, before_seq)

    def subscribe(
        self,
        thread_id: str | None = None,
        instance_id: str | None = None,
        types: Iterable[str] | None = None,
        from_seq: int | None = None,
        assistant_delivery: Literal["streaming", "buffered"] = "streaming",
        *,
        max_buffered: int | None = None,
    ) -> AsyncIterator[Event]:
        """An async iterator of events; it ends when the subscription or the runtime closes.
        Arguments as :meth:`paddock.Runtime.subscribe`."""
        from paddock.aio import aiter_subscription

        sub = self.runtime.subscribe(thread_id, instance_id, types, from_seq, assistant_delivery,
                                     max_buffered=max_buffered)
        return aiter_subscription(sub)

    async def close(self, *, timeout: float = 10.0) -> None:
        try:
            await self._call(self.runtime.close, timeout=timeout)
        finally:
            self._executor.shutdown(wait=False)

    async def __aenter__(self) -> AsyncRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
