"""Files that follow the conversation: the thread directory's one entry to workspaces.

:class:`ThreadFiles` decides where a thread's session runs (its worktree or the ``cwd`` given),
takes a checkpoint when each of its turns ends and publishes the turn's diff, and restores,
diffs, forks and deletes worktrees for the operations (``rollback_thread``, ``fork_thread``,
``restore_files``, ``diff``, ``delete_thread``).

Threads: :meth:`ThreadFiles.turn_ended` is called on the directory's tracker thread and only
queues (a dict look-up for a thread without a worktree); checkpoints are taken on one worker
thread of this module (``paddock-checkpoints``), never on the hub's or an actor's. Every other
method runs in the caller's thread and may wait for that worker.

Why the checkpoint id is not on ``turn.completed``: the session actor emits ``turn.completed``
the moment its agent ends the turn, and the hub logs and publishes it before the runtime sees it;
a published event is never changed. So the checkpoint follows it: one ``turn.diff.updated`` of
the same turn whose ``checkpoint`` is the commit id and whose ``diff`` is the turn's unified diff
(from the checkpoint before it), for every driver.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import msgspec

from paddock._workspaces._worktrees import Checkpoint, Workspace, Worktrees
from paddock.actors import HubHandle
from paddock.contract import (
    EventBase,
    OperationTimeout,
    PaddockError,
    RuntimeWarningEvent,
    Session,
    TurnDiffUpdated,
    ValidationError,
)

__all__ = ["FilesRestored", "ThreadFiles", "WorkspaceMode"]

WorkspaceMode = Literal["shared", "worktree"]

_STOP = object()
_GRACE = 2.0  # seconds a turn's end may take to reach the tracker before its checkpoint is given up


class FilesRestored(msgspec.Struct, frozen=True, kw_only=True):
    """What ``restore_files`` did: the thread's worktree now holds ``checkpoint``, the commit
    taken when ``turn_id`` ended (``"base"``: the state the worktree started from)."""

    thread_id: str
    turn_id: str
    checkpoint: str


class ThreadFiles:
    """Worktrees and checkpoints of one state dir's threads (module docstring)."""

    def __init__(self, state_dir: Path, hub: HubHandle, *, keep: int) -> None:
        self.trees = Worktrees(state_dir / "workspaces")
        self._hub = hub
        self._keep = keep
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._cond = threading.Condition()
        self._queued: dict[str, int] = {}  # thread -> turn ends queued, not yet checkpointed
        self._seen: dict[str, set[str]] = {}  # thread -> turns checkpointed (or failed) since open
        self._worker: threading.Thread | None = None

    # where a session runs -----------------------------------------------------------------------

    def open(self, thread_id: str, cwd: str, mode: WorkspaceMode) -> Workspace | None:
        """The thread's worktree (created on its first start in mode ``worktree`` from the
        repository holding ``cwd``), or ``None`` when it runs in ``cwd``. A thread that has a
        worktree keeps it whatever ``mode`` says later, until ``delete_thread``. Raises
        :class:`ValidationError` naming why a folder cannot have one (``Worktrees.create``)."""
        ws = self.trees.get(thread_id)
        if ws is not None and not ws.deleting:
            if not os.path.isdir(ws.path):
                raise ValidationError("start_session", f"the thread's worktree {ws.path!r} is gone; delete_thread() "
                                      "and start the thread again", thread_id=thread_id)
            return ws
        if mode != "worktree":
            return None
        return self.trees.create(thread_id, cwd)

    def get(self, thread_id: str) -> Workspace | None:
        return self.trees.get(thread_id)

    def label(self, session: Session) -> Session:
        """``session`` with its worktree's branch, when its thread has one."""
        ws = self.trees.get(session.thread_id)
        return session if ws is None or session.branch == ws.branch else msgspec.structs.replace(session, branch=ws.branch)

    # checkpoints --------------------------------------------------------------------------------

    def turn_ended(self, event: EventBase) -> None:
        """A ``turn.completed`` (tracker thread): queue the thread's checkpoint, when it has a
        worktree. Never blocks."""
        if event.turn_id is None or self.trees.get(event.thread_id) is None:
            return
        with self._cond:
            self._queued[event.thread_id] = self._queued.get(event.thread_id, 0) + 1
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="paddock-checkpoints", daemon=True)
                self._worker.start()
        self._queue.put(event)

    def _work(self) -> None:
        """Worker thread: one checkpoint per queued turn end, then its ``turn.diff.updated``."""
        while True:
            event = self._queue.get()
            if event is _STOP:
                return
            assert isinstance(event, EventBase)
            try:
                self._checkpoint(event)
            except Exception as exc:  # a failing repository must not stop other threads' checkpoints
                self._hub.emitter(event.driver, event.instance_id, event.thread_id).emit([RuntimeWarningEvent(
                    driver=event.driver, instance_id=event.instance_id, thread_id=event.thread_id,
                    turn_id=event.turn_id, code="workspace.checkpoint_failed", created_at=time.time(),
                    message=f"no checkpoint of turn {event.turn_id!r}: {exc}", detail={})])
            finally:
                with self._cond:
                    left = self._queued.get(event.thread_id, 1) - 1
                    if left:
                        self._queued[event.thread_id] = left
                    else:
                        self._queued.pop(event.thread_id, None)
                    self._seen.setdefault(event.thread_id, set()).add(event.turn_id or "")
                    self._cond.notify_all()

    def _checkpoint(self, event: EventBase) -> None:
        ws = self.trees.get(event.thread_id)
        if ws is None or ws.deleting or event.turn_id is None:
            return
        after, before = self.trees.checkpoint(ws, event.turn_id)
        diff = self.trees.diff(ws, before.commit, after.commit)
        if after.seq > self._keep:
            self.trees.prune(ws, self._keep)
        self._hub.emitter(event.driver, event.instance_id, event.thread_id).emit([TurnDiffUpdated(
            driver=event.driver, instance_id=event.instance_id, thread_id=event.thread_id, turn_id=event.turn_id,
            created_at=time.time(), diff=diff, checkpoint=after.commit)])

    def settle(self, thread_id: str, turn_id: str | None, *, timeout: float) -> None:
        """Wait until no turn end of the thread is queued and, for ``turn_id`` (a completed turn
        of the thread), until its checkpoint was taken or failed. A turn this process never saw
        end (it ended before this runtime opened) counts once its checkpoint exists, or after a
        short grace for the tracker to see its end. Raises :class:`OperationTimeout`."""
        deadline = time.monotonic() + timeout
        ws = self.trees.get(thread_id)
        if turn_id is not None and ws is not None and turn_id not in self._seen.get(thread_id, ()):
            if any(c.turn_id == turn_id for c in self.trees.checkpoints(ws)):
                turn_id = None  # taken already, by this process or an earlier one
        grace = time.monotonic() + min(timeout, _GRACE)
        with self._cond:
            while True:
                now = time.monotonic()
                queued = self._queued.get(thread_id, 0)
                if not queued and (turn_id is None or turn_id in self._seen.get(thread_id, ()) or now >= grace):
                    return
                if now >= deadline:
                    raise OperationTimeout(f"waiting for the checkpoint of turn {turn_id!r}", timeout,
                                           thread_id=thread_id)
                self._cond.wait(min(deadline, grace if not queued else deadline) - now)

    def _worktree(self, thread_id: str, operation: str) -> Workspace:
        ws = self.trees.get(thread_id)
        if ws is None or ws.deleting:
            raise ValidationError(operation, "the thread has no worktree of its own (workspace = \"worktree\")",
                                  thread_id=thread_id)
        return ws

    def _find(self, ws: Workspace, turn_id: str, operation: str) -> Checkpoint:
        found = self.trees.checkpoints(ws)
        if turn_id == "base":
            return found[0] if found else Checkpoint(seq=0, commit=ws.base)
        for c in found:
            if c.turn_id == turn_id:
                return c
        raise ValidationError(operation, f"turn {turn_id!r} has no checkpoint (not a completed turn of the "
                              f"thread, rolled back, or pruned beyond checkpoints_kept)", thread_id=ws.thread_id)

    # operations ---------------------------------------------------------------------------------

    def restore(self, thread_id: str, turn_id: str, *, last_turn: str | None, timeout: float) -> FilesRestored:
        """``restore_files``: the worktree's files become those of ``turn_id``'s checkpoint; the
        conversation is not touched. ``last_turn``: the thread's last completed turn, whose
        checkpoint is awaited first."""
        ws = self._worktree(thread_id, "restore_files")
        self.settle(thread_id, last_turn, timeout=timeout)
        target = self._find(ws, turn_id, "restore_files")
        self.trees.restore(ws, target.commit)
        return FilesRestored(thread_id=thread_id, turn_id=turn_id, checkpoint=target.commit)

    def rolled_back(self, thread_id: str, kept: list[str], *, last_turn: str | None, timeout: float) -> str | None:
        """After the conversation dropped its last turns (``kept``: the turn ids left, in
        order): restore the checkpoint of the last kept turn (the base when none is), delete the
        checkpoints after it, and return its commit; ``None`` for a thread without a worktree."""
        ws = self.trees.get(thread_id)
        if ws is None or ws.deleting:
            return None
        self.settle(thread_id, last_turn, timeout=timeout)
        target = self._find(ws, kept[-1] if kept else "base", "rollback_thread")
        self.trees.restore(ws, target.commit)
        self.trees.drop(ws, [c for c in self.trees.checkpoints(ws) if c.seq > target.seq])
        return target.commit

    def diff(self, thread_id: str, from_turn: str | None, to_turn: str | None, *, last_turn: str | None,
             timeout: float) -> str:
        """The unified diff between two checkpoints of the thread: ``to_turn``'s (``None``: the
        newest), from ``from_turn``'s (``None``: the one before it; ``"base"``: where the
        worktree started)."""
        ws = self._worktree(thread_id, "diff")
        self.settle(thread_id, last_turn, timeout=timeout)
        found = self.trees.checkpoints(ws)
        to = self._find(ws, to_turn, "diff") if to_turn is not None else (
            found[-1] if found else Checkpoint(seq=0, commit=ws.base))
        if from_turn is not None:
            start = self._find(ws, from_turn, "diff")
        else:
            older = [c for c in found if c.seq < to.seq]
            start = older[-1] if older else to
        return self.trees.diff(ws, start.commit, to.commit)

    def fork(self, source: str, new_thread_id: str, at_turn: str | None, *, last_turn: str | None,
             timeout: float) -> Workspace | None:
        """``fork_thread``: the new thread's worktree, from the checkpoint of ``at_turn`` (``None``:
        the source's files as they are now); ``None`` when the source has no worktree."""
        ws = self.trees.get(source)
        if ws is None or ws.deleting:
            return None
        self.settle(source, last_turn, timeout=timeout)
        if self.trees.get(new_thread_id) is not None:  # left by an earlier fork that failed to start
            self.trees.remove(new_thread_id)
        seed = self._find(ws, at_turn, "fork_thread").commit if at_turn is not None else self.trees.snapshot_now(ws)
        return self.trees.create(new_thread_id, ws.cwd, seed=seed, operation="fork_thread")

    def delete(self, thread_id: str, *, keep_branch: bool, timeout: float, unbind: Callable[[], None]) -> None:
        """``delete_thread``: mark the worktree's record ``deleting`` (the journal the sweep
        reads), ``unbind`` the thread, then remove its worktree, hidden refs and (unless
        ``keep_branch``) branch, after any checkpoint still queued for it."""
        if self.trees.get(thread_id) is None:
            unbind()
            return
        self.trees.mark_deleting(thread_id, keep_branch=keep_branch)
        unbind()
        self.settle(thread_id, None, timeout=timeout)
        self.trees.remove(thread_id, keep_branch=keep_branch)

    def sweep(self, bound: set[str]) -> list[str]:
        """At open: remove the worktrees and refs of threads with no binding (``Worktrees.sweep``)."""
        try:
            return self.trees.sweep(bound)
        except (OSError, PaddockError):
            return []

    def close(self, *, timeout: float) -> None:
        """Stop the worker once what is queued is done, waiting up to ``timeout`` seconds (thread:
        the closer's). A checkpoint still running then finishes on its own (a daemon thread); a
        turn end never checkpointed is not retried."""
        self.trees.close()
        with self._cond:
            worker = self._worker
        if worker is not None:
            self._queue.put(_STOP)
            worker.join(timeout=timeout)
