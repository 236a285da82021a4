"""One-shot text: ``Runtime.generate_text`` runs a prompt in an ephemeral session and returns the
assistant's text, for titles, commit messages and summaries.

The session is the adapter's own, never the thread directory's: it gets no binding and no
persisted hand-off, it is hidden from ``list_sessions`` while it runs, and it is stopped before
the call returns. No tool is approved: it runs in ``approval-required`` mode and every request
the agent opens is declined (a question to the user interrupts the turn). Its workspace is an
empty private folder, removed afterwards. The instance's adapter is used when it runs already;
otherwise a throwaway one is built and closed, so no process outlives the call
(:meth:`InstanceTable.adapter_once`).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid

from paddock._instances._table import InstanceTable
from paddock._operations._table import GenerateTextBody
from paddock.actors import HubHandle, Subscription
from paddock.contract import (
    DriverError,
    Event,
    OperationTimeout,
    PaddockError,
    ProviderAdapter,
    SendTurnInput,
    StartSessionInput,
    fold_thread,
)

__all__ = ["generate_text"]

_POLL = 0.25


def generate_text(instances: InstanceTable, hub: HubHandle, ephemeral: set[str], a: GenerateTextBody) -> str:
    """Run ``a.prompt`` on ``a.instance`` in an ephemeral session; the assistant's text of the
    turn. ``ephemeral`` is the thread directory's set of such threads (hidden from listings).
    Raises :class:`OperationTimeout` past ``a.timeout``, :class:`DriverError` for a failed turn
    or one with no text, and what starting a session raises. Thread: the caller's."""
    deadline = time.monotonic() + a.timeout
    thread_id = f"generate-{uuid.uuid4().hex}"
    cwd = tempfile.mkdtemp(prefix="cwd-", dir=instances.scratch_dir(a.instance))
    ephemeral.add(thread_id)
    try:
        with hub.subscribe(thread_id=thread_id) as sub, instances.adapter_once(a.instance) as adapter:
            try:
                return _run(adapter, sub, instances.driver(a.instance), thread_id, cwd, a, deadline)
            finally:
                if adapter.has_session(thread_id):
                    try:
                        adapter.stop_session(thread_id, timeout=10.0)
                    except PaddockError:
                        pass
    except PaddockError as exc:
        raise instances.mask(a.instance, exc)
    finally:
        ephemeral.discard(thread_id)
        shutil.rmtree(cwd, ignore_errors=True)


def _left(deadline: float, a: GenerateTextBody) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise OperationTimeout("generate_text", a.timeout, instance_id=a.instance)
    return left


def _run(adapter: ProviderAdapter, sub: Subscription, driver: str, thread_id: str, cwd: str, a: GenerateTextBody,
         deadline: float) -> str:
    adapter.start_session(StartSessionInput(
        thread_id=thread_id, cwd=cwd, runtime_mode="approval-required", model=a.model, workspace_roots=(cwd,),
    ), timeout=_left(deadline, a))
    turn = adapter.send_turn(SendTurnInput(thread_id=thread_id, text=a.prompt, model=a.model),
                             timeout=_left(deadline, a))
    seen: list[Event] = []
    while True:
        event = sub.get(timeout=min(_POLL, _left(deadline, a)))
        if event is None:
            if sub.ended:
                raise DriverError(driver, a.instance, "generate_text: the event stream ended")
            continue
        seen.append(event)
        if event.type == "request.opened" and event.request_id:
            try:  # no tool is approved in a one-shot call
                adapter.respond_to_request(thread_id, event.request_id, "decline", decided_by="mode",
                                           timeout=_left(deadline, a))
            except PaddockError:
                pass  # resolved meanwhile (the turn ended, or the agent withdrew it)
        elif event.type == "user-input.requested":
            adapter.interrupt_turn(thread_id, turn.turn_id, timeout=_left(deadline, a))
        elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
            break
    snapshot = fold_thread(thread_id, seen)
    last = next((t for t in reversed(snapshot.turns) if t.turn_id == turn.turn_id), None)
    texts = [i.text for i in (last.items if last else ()) if i.kind == "assistant_message" and i.text]
    if event.state != "completed":
        raise DriverError(driver, a.instance,
                          f"generate_text: the turn ended {event.state}" + (f": {event.error}" if event.error else ""))
    if not texts:
        raise DriverError(driver, a.instance, "generate_text: the agent answered no text")
    return "\n\n".join(texts).strip()
