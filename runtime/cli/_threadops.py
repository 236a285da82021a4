"""What ``paddock fork``, ``paddock compact`` and chat's ``/fork`` and ``/compact`` share: the
calls and the sentences that report them. Every function runs in the caller's thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paddock import Runtime
    from paddock.client import RemoteRuntime
    from paddock.contract import Session, TurnCompleted

__all__ = ["compact", "fork", "fork_kind"]


def fork_kind(rt: Runtime | RemoteRuntime, source: str, instance: str | None, at_turn: int | None) -> str:
    """How ``fork_thread`` copies ``source`` here: ``native`` (the agent copies its session,
    from ``at_turn`` too where its ``fork_kind`` is ``from_turn``) or ``handoff`` (the
    transcript rides the new thread's first turn), as the Runtime decides it."""
    binding = next((b for b in rt.list_threads() if b.thread_id == source), None)
    if binding is None:
        return "handoff"
    target = instance or binding.instance_id
    info = next((i for i in rt.instances() if i.id == target), None)
    if info is None or info.capabilities is None or target != binding.instance_id:
        return "handoff"
    caps = info.capabilities.sessions
    native = caps.fork and (at_turn is None or caps.fork_kind == "from_turn")
    return "native" if native else "handoff"


def fork(rt: Runtime | RemoteRuntime, source: str, new: str, *, at_turn: int | None = None,
         instance: str | None = None, timeout: float | None = None) -> tuple[Session, str]:
    """Fork ``source`` into ``new``; the new session and a sentence that says how."""
    session = rt.fork_thread(source, new, at_turn=at_turn, instance=instance, timeout=timeout)
    kind = fork_kind(rt, source, instance, at_turn)  # after: an ACP agent's flags come with its process
    upto = f" through turn {at_turn}" if at_turn is not None else ""
    how = ("the agent copied its session" if kind == "native"
           else "its transcript rides the new thread's first turn (a hand-off)")
    return session, (f"thread {new} forked from {source}{upto} on instance {session.instance_id} "
                     f"({session.driver}): {how}")


def compact(rt: Runtime | RemoteRuntime, thread_id: str, *, timeout: float) -> tuple[bool, str]:
    """Compact ``thread_id`` and wait (up to ``timeout`` s) for the compaction turn to end, where
    the agent runs it as one: whether it completed, and a sentence that says so."""
    with rt.subscribe(thread_id=thread_id, types=["turn.completed"]) as sub:
        result = rt.compact_thread(thread_id, timeout=timeout)
        if result is None:
            return True, f"thread {thread_id} compacted"
        while True:
            event = sub.get(timeout=timeout)
            if event is None:
                return False, f"thread {thread_id}: the compaction turn {result.turn_id} did not end within {timeout:g} s"
            if event.turn_id == result.turn_id:
                done: TurnCompleted = event  # type: ignore[assignment]
                if done.state == "completed":
                    return True, f"thread {thread_id} compacted"
                return False, f"thread {thread_id}: compaction {done.state}" + (f": {done.error}" if done.error else "")
