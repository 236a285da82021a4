"""The shared-process session base: a session actor whose native session lives in a process
that serves every session of the instance (:class:`~._shared.SharedProcessAdapter`), and that
outlives the process's restarts (docs/architecture.md, "The adapter contract").

It owns, once: the takeover after a restart (:meth:`SharedSessionActor.on_start`), the end of
the session (process death, a failure, or a stop), what must outlive one incarnation
(:class:`SharedState`), the current link, and the resume on a new process
(:meth:`SharedSessionActor.ensure_native`). A driver implements :meth:`~SharedSessionActor.reattach`
(re-attach this one session to the new process: resume from its native id, or start anew and
say so) and the small hooks listed on the class.

Thread: every method runs inside the actor (a dispatcher worker), like :class:`SessionActor`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from paddock.contract import EventBase, SessionStateChanged, TokenUsage
from paddock.supervisors import ChildContext, ExitReason

from ._session import ProcessRestarting, SessionActor, SessionRecord
from ._shared import SharedLink

__all__ = ["SharedSessionActor", "SharedState"]

N = TypeVar("N")
L = TypeVar("L", bound=SharedLink[Any, Any])


@dataclass(slots=True)
class SharedState:
    """What a shared-process session keeps across incarnations (written inside its actor).
    A driver subclasses it for its own fields."""

    native_id: str | None = None
    """The native session id (Codex thread, ACP session), once opened."""
    usage: TokenUsage | None = None
    """The thread's cumulative token usage."""
    generation: int | None = None
    """The process incarnation the native session is attached to."""
    finished: object | None = None
    """The incarnation that ended the session (the end is reported once per incarnation)."""
    exited: bool = False
    """A ``session.exited`` was reported and the session did not start again since: a later end
    (the next incarnation stopped, or a reload that failed) reports none, so one crash is one
    ``session.exited``."""


St = TypeVar("St", bound=SharedState)


class SharedSessionActor(SessionActor[N, St], Generic[N, St, L]):
    """Base of a session actor on a shared process. ``get_link()`` returns the process's current
    link (``None`` while it restarts).

    Hooks (all inside the actor): :attr:`native_id` (the live native id), :meth:`reattach`
    (required), :meth:`recoverable`, :meth:`on_lost`, :meth:`on_stopping`, :meth:`on_detached`,
    :meth:`on_ended`, :meth:`persist`. Class attributes: :attr:`process_noun`,
    :attr:`restart_reason`.
    """

    process_noun: ClassVar[str] = "the process"
    """What a closed session's error calls the process (``<noun> is restarting``)."""
    restart_reason: ClassVar[str] = "the process restarted; the session resumes on its next turn"
    """The ``session.state.changed(ready)`` reason of an incarnation after a restart."""

    def __init__(self, record: SessionRecord[St], get_link: Callable[[], L | None], *,
                 context: ChildContext | None = None) -> None:
        super().__init__(record, context=context)
        self._get_link = get_link
        self._link: L | None = None

    # hooks ---------------------------------------------------------------------------------------

    @property
    def native_id(self) -> str | None:
        raise NotImplementedError

    def reattach(self, link: L) -> list[EventBase]:
        """The process restarted since this session last spoke to it: re-attach the native
        session to ``link`` (resume it, or start a new one and say so) and return the events
        to emit (its ``session.started``). Raise to refuse (e.g. :class:`SessionClosedError`)."""
        raise NotImplementedError

    def recoverable(self, link: L | None) -> bool:
        """Whether a session lost with its process can resume on the next one."""
        return self.native_id is not None

    def on_lost(self, events: list[EventBase]) -> None:
        """The process died (or the actor failed): before the turn fails."""

    def on_stopping(self, events: list[EventBase], link: L | None, in_turn: bool) -> None:
        """A normal stop, open requests already cancelled: stop the agent's running turn."""

    def on_detached(self, link: L) -> None:
        """A stopped session left ``link`` (the process lives on): free its native state."""

    def on_ended(self, deadline: float) -> None:
        """Last step of the end, whatever ended it: release the session's own resources."""

    def persist(self) -> None:
        """Save what the next incarnation needs into ``record.state``."""
        self.record.state.native_id = self.native_id

    # lifecycle -----------------------------------------------------------------------------------

    def on_start(self) -> None:
        super().on_start()
        link = self._get_link()
        native = self.native_id
        if link is not None and native and self.record.state.generation == link.generation:
            self._link = link  # a restarted incarnation on the same process takes over the routing
            link.register(native, self.actor_ref)
        elif link is not None and native:
            self.emit([SessionStateChanged(**self.identity, state="ready", reason=self.restart_reason)])

    def on_shutdown(self, deadline: float) -> None:
        self.end_session(deadline)

    def on_terminate(self, reason: ExitReason) -> None:
        # Always runs, also after a failure; end_session is idempotent.
        try:
            self.end_session(time.monotonic() + 1.0, failed=reason.abnormal)
        finally:
            self.persist()

    def end_session(self, deadline: float, *, failed: bool = False) -> None:
        """End the session once per incarnation: after the process died (or the actor failed)
        the running turn fails, open requests expire and ``session.exited`` says whether it can
        resume; on a normal stop the turn is cancelled, open requests are cancelled and
        ``session.exited(reason="stopped")``."""
        state = self.record.state
        if state.finished is self:
            return
        state.finished = self
        self.cancel_turn_timers()
        link = self._link or self._get_link()
        info = link.exit_info if link is not None else None
        events: list[EventBase] = []
        if info is not None or failed:
            detail = link.exit_detail() if link is not None and info is not None else "the session actor failed"
            self.hung_warning(events, info)  # the shim killed a process that stayed stopped for hang_timeout
            self.on_lost(events)
            self.end_turn(events, "failed", error=detail, requests="expired")
            if not state.exited:
                events.append(self.session_exited(detail, recoverable=self.recoverable(link), info=info))
                state.exited = True
            self.publish(status="error", active_turn_id=None, last_error=detail)
        elif self.native_id is None:
            self.publish(status="stopped")  # never opened (a failed start): nothing to report
        else:
            in_turn = self.turn.in_turn
            self.resolve_requests(events, "cancelled", answer=True)
            self.on_stopping(events, link, in_turn)
            self.end_turn(events, "cancelled", error="the session was stopped")
            if not state.exited:
                events.append(self.session_exited("stopped", recoverable=True))
                state.exited = True
            self.publish(status="stopped", active_turn_id=None)
            native = self.native_id
            if link is not None and native:
                link.unregister(native, self.actor_ref)
                self.on_detached(link)
        self.on_ended(deadline)
        self.emit(events)

    # the link ------------------------------------------------------------------------------------

    def current_link(self) -> L:
        """The running process's link; :class:`ProcessRestarting` (a :class:`SessionClosedError`)
        while it restarts, else what :meth:`refuse_unreachable` raises: :class:`ProcessGone`
        when it died and its exit is not processed yet, :class:`ProcessError` while it is
        stopped."""
        link = self._get_link()
        if link is None or link.exit_info is not None:
            raise ProcessRestarting(self.thread_id, f"{self.process_noun} is restarting", **self.owner)
        self.refuse_unreachable(link.conn.process, self.process_noun)
        return link

    def ensure_native(self) -> tuple[L, list[EventBase]]:
        """The link to send on, re-attaching the native session first when the process
        restarted since (:meth:`reattach`); the events that re-attaching produced."""
        link = self.current_link()
        if self.record.state.generation == link.generation:
            self._link = link
            return link, []
        events = self.reattach(link)
        self._link = link
        self.record.state.generation = link.generation
        self.record.state.exited = False
        return link, events
