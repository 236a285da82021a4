"""IdleStopper: an instance's shared process (a Codex app-server, an ACP agent, a spawned
``opencode serve``) stops once it has served no session for the instance's ``idle_timeout``
seconds; the next ``start_session`` spawns it again (docs/architecture.md, "The adapter").

The adapter says when the instance may have become idle (:meth:`IdleStopper.arm`: a session
left its table, a start failed, a tree started) and when it is busy again (:meth:`touch`: a
session record was created). The timer runs on the shared timer thread and only compares; the
stop itself runs on a short-lived thread of its own, since closing a scope waits for a process.
Thread: every method is thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..execution import timers

__all__ = ["IdleStopper"]


class IdleStopper:
    """``idle()`` says whether the instance has no live session and no start under way (the
    adapter's table, under its lock). ``stop(still_idle)`` stops the shared process: the adapter
    takes its start lock, then checks ``still_idle()`` under its table lock before it detaches the
    tree (a start or a session that came meanwhile keeps it). ``timeout=None``: never stop."""

    def __init__(self, timeout: float | None, name: str, idle: Callable[[], bool],
                 stop: Callable[[Callable[[], bool]], None]) -> None:
        self.timeout = timeout
        self._name = name
        self._idle = idle
        self._stop = stop
        self._lock = threading.Lock()
        self._token = 0
        self._stopping: threading.Thread | None = None

    def touch(self) -> None:
        """A session is starting: forget any pending idle timer."""
        with self._lock:
            self._token += 1

    def arm(self) -> None:
        """The instance may be idle: stop its process ``timeout`` seconds from now unless a
        session starts meanwhile."""
        if self.timeout is None or not self._idle():
            return
        with self._lock:
            self._token += 1
            token = self._token
        timers.schedule(time.monotonic() + self.timeout, lambda: self._expired(token))

    def _current(self, token: int) -> bool:
        return token == self._token and self._idle()

    def _expired(self, token: int) -> None:
        # Timer thread: compare only; the stop waits for a process, on a thread of its own.
        if not self._current(token):
            return
        with self._lock:
            if self._stopping is not None and self._stopping.is_alive():
                return
            thread = threading.Thread(target=self._stop, args=(lambda: self._current(token),),
                                      name=f"paddock-idle-{self._name}", daemon=True)
            self._stopping = thread
        thread.start()

    def join(self, deadline: float) -> None:
        """Wait, until ``deadline``, for an idle stop under way (closing the instance)."""
        with self._lock:
            thread = self._stopping
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
