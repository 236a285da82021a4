"""``AsyncRuntime``: the :class:`Runtime` API for asyncio hosts.

Every operation of the table runs the Runtime's method of the same name in a thread-pool
executor, so the event loop never waits on a pykka future or a lock; events arrive through an
async iterator fed with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any, Literal, TypeVar

from paddock._operations import _table as ops
from paddock._operations._approval_hook import DEFAULT_HOOK_TIMEOUT, ApprovalHook
from paddock._aio_subscription import aiter_subscription
from paddock._instances._table import InstanceInfo
from paddock._operations._table import Operation, arguments
from paddock._operations._pending import PendingRequest
from paddock._operations._queued import QueuedTurn
from paddock._runtime import CloseReport, Runtime
from paddock.contract import (
    ApprovalRule,
    Attachment,
    Budget,
    Decision,
    Event,
    InteractionMode,
    RequestOpened,
    McpServer,
    ModelInfo,
    RuntimeMode,
    Session,
    Surface,
    UsageReport,
    ThreadSnapshot,
    TurnStartResult,
)
from paddock._state._store import Binding
from paddock._workspaces._files import FilesRestored

__all__ = ["AsyncApprovalHook", "AsyncRuntime", "AsyncRuntimeAPI"]

R = TypeVar("R")

AsyncApprovalHook = Callable[[RequestOpened], Awaitable["Decision | None"]]
"""An approval hook for :class:`AsyncRuntime`: a coroutine function run on the host's loop."""


def _on_loop(hook: AsyncApprovalHook, loop: asyncio.AbstractEventLoop, timeout: float) -> ApprovalHook:
    """``hook`` as the runtime calls it (on the hook's executor thread): run on ``loop`` and
    waited for; cancelled on the loop when it overruns ``timeout`` (the runtime has then left
    the request to a person already)."""
    def call(request: RequestOpened) -> Decision | None:
        future: Future[Decision | None] = asyncio.run_coroutine_threadsafe(hook(request), loop)  # type: ignore[arg-type]
        try:
            return future.result(timeout + 1.0)
        except FutureTimeout:
            future.cancel()
            return None
    return call


class AsyncRuntimeAPI:
    """The operations of :class:`paddock._api.RuntimeAPI` as coroutines, for a runtime in
    this process (:class:`AsyncRuntime`) or behind ``paddock serve``
    (:class:`paddock.client.AsyncRemoteRuntime`). Arguments, results and errors as
    :class:`paddock.Runtime`'s."""

    async def _call(self, op: Operation[R], args: Mapping[str, Any]) -> R:
        """Run ``op`` with ``args`` (the method's ``locals()``)."""
        raise NotImplementedError

    async def instances(self) -> list[InstanceInfo]:
        return await self._call(ops.INSTANCES, locals())

    async def diagnose(self, *, timeout: float = 10.0) -> list[dict[str, Any]]:
        return await self._call(ops.DIAGNOSE, locals())

    async def models(self, instance: str, *, refresh: bool = False, timeout: float = 120.0) -> list[ModelInfo]:
        return await self._call(ops.MODELS, locals())

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
        mcp_servers: Sequence[McpServer] | None = None,
        preamble: str | None = None,
        preamble_reminder: str | None = None,
        require: Sequence[str] = (),
        approval_rules: Sequence[ApprovalRule] | None = None,
        budget: Budget | None = None,
        timeout: float | None = None,
        workspace: Literal["shared", "worktree"] | None = None,
    ) -> Session:
        return await self._call(ops.START_SESSION, locals())

    async def send_turn(
        self, thread_id: str, text: str, *, interaction_mode: InteractionMode | None = None,
        model: str | None = None, attachments: Sequence[Attachment] = (), timeout: float | None = None,
    ) -> TurnStartResult:
        return await self._call(ops.SEND_TURN, locals())

    async def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        return await self._call(ops.INTERRUPT_TURN, locals())

    async def steer_turn(self, thread_id: str, text: str, *, attachments: Sequence[Attachment] = (),
                         timeout: float | None = None) -> TurnStartResult:
        return await self._call(ops.STEER_TURN, locals())

    async def respond_to_request(self, thread_id: str, request_id: str, decision: Decision, *,
                                 surface: Surface = "api", timeout: float | None = None) -> None:
        return await self._call(ops.RESPOND_TO_REQUEST, locals())

    async def respond_to_user_input(self, thread_id: str, request_id: str, answers: Mapping[str, Any], *,
                                    timeout: float | None = None) -> None:
        return await self._call(ops.RESPOND_TO_USER_INPUT, locals())

    async def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        return await self._call(ops.STOP_SESSION, locals())

    async def stop_all(self, *, timeout: float | None = None) -> None:
        return await self._call(ops.STOP_ALL, locals())

    async def list_sessions(self) -> list[Session]:
        return await self._call(ops.LIST_SESSIONS, locals())

    async def has_session(self, thread_id: str) -> bool:
        return await self._call(ops.HAS_SESSION, locals())

    async def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot:
        return await self._call(ops.READ_THREAD, locals())

    async def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        return await self._call(ops.ROLLBACK_THREAD, locals())

    async def fork_thread(self, thread_id: str, new_thread_id: str, *, at_turn: int | None = None,
                          instance: str | None = None, timeout: float | None = None) -> Session:
        return await self._call(ops.FORK_THREAD, locals())

    async def compact_thread(self, thread_id: str, *, timeout: float | None = None) -> TurnStartResult | None:
        return await self._call(ops.COMPACT_THREAD, locals())

    async def pending_requests(self, thread_id: str | None = None, *,
                               timeout: float | None = None) -> list[PendingRequest]:
        return await self._call(ops.PENDING_REQUESTS, locals())

    async def queue(self, instance: str | None = None) -> list[QueuedTurn]:
        return await self._call(ops.QUEUE, locals())

    async def list_threads(self) -> list[Binding]:
        return await self._call(ops.LIST_THREADS, locals())

    async def generate_text(self, instance: str, prompt: str, *, model: str | None = None,
                            timeout: float = 120.0) -> str:
        return await self._call(ops.GENERATE_TEXT, locals())

    async def compact_events(self, before_seq: int) -> int:
        return await self._call(ops.COMPACT_EVENTS, locals())

    async def restore_files(self, thread_id: str, turn_id: str, *, timeout: float | None = None) -> FilesRestored:
        return await self._call(ops.RESTORE_FILES, locals())

    async def diff(self, thread_id: str, from_turn: str | None = None, to_turn: str | None = None, *,
                   timeout: float | None = None) -> str:
        return await self._call(ops.DIFF, locals())

    async def delete_thread(self, thread_id: str, *, keep_branch: bool = False, timeout: float | None = None) -> None:
        return await self._call(ops.DELETE_THREAD, locals())
    async def usage(self, thread_id: str | None = None, instance: str | None = None, since: float | None = None, *,
                    timeout: float = 5.0) -> UsageReport:
        return await self._call(ops.USAGE, locals())

    async def set_budget(self, budget: Budget | None, thread_id: str | None = None,
                         instance: str | None = None) -> None:
        return await self._call(ops.SET_BUDGET, locals())


class AsyncRuntime(AsyncRuntimeAPI):
    """Async face of :class:`Runtime`. Build it with ``await AsyncRuntime.open(...)`` and use
    ``async with``. Methods run the blocking call in a private executor and are safe to call
    concurrently from many tasks. Arguments, results and errors as :class:`Runtime`'s."""

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
        approval_hook: AsyncApprovalHook | None = None,
        approval_hook_timeout: float = DEFAULT_HOOK_TIMEOUT,
    ) -> AsyncRuntime:
        """Open a runtime (as :meth:`paddock.Runtime.open`). ``approval_hook`` is a coroutine
        function: it runs on this event loop, called with each request no rule decided, and
        returns a decision the request offered or ``None`` (a person decides); one that takes
        longer than ``approval_hook_timeout`` seconds is cancelled and the request waits for a
        person."""
        executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="paddock-aio")
        loop = asyncio.get_running_loop()
        hook = _on_loop(approval_hook, loop, approval_hook_timeout) if approval_hook is not None else None
        rt = await loop.run_in_executor(executor, functools.partial(
            Runtime.open, config, state_dir=state_dir, approval_hook=hook, approval_hook_timeout=approval_hook_timeout))
        return cls(rt, executor)

    async def _call(self, op: Operation[R], args: Mapping[str, Any]) -> R:
        """Run ``op`` on the Runtime, in the executor, with ``args`` (a method's ``locals()``, or
        the fields of a body the server decoded)."""
        loop = asyncio.get_running_loop()
        result: R = await loop.run_in_executor(self._executor, functools.partial(self.runtime._call, op, args))
        return result

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
        Arguments as :meth:`paddock.Runtime.subscribe` (not in the operation table: a stream)."""
        return aiter_subscription(self.runtime.subscribe(**arguments(locals())))

    async def close(self, *, timeout: float = 10.0) -> CloseReport:
        """:meth:`paddock.Runtime.close` off the event loop; returns its report."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(self.runtime.close, timeout=timeout))
        finally:
            self._executor.shutdown(wait=False)

    async def __aenter__(self) -> AsyncRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
