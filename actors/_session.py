"""The SessionActor base: one actor per live session (thread), under a session supervisor.

A driver subclasses :class:`SessionActor` and keeps its protocol state in it. What must outlive
one actor incarnation (the supervisor restarts a session after its agent process restarts) lives
in a :class:`SessionRecord` that the driver hands to every incarnation: the public
:class:`Session` snapshot, the thread's turn history, and driver-private fields.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import msgspec
import pykka

from paddock.contract import (
    INTERACTION_MODES,
    MAX_PROMPT_CHARS,
    ContentDelta,
    EventBase,
    ItemCompleted,
    ItemSnapshot,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionNotFoundError,
    ThreadSnapshot,
    TurnCompleted,
    TurnSnapshot,
    TurnStarted,
    ValidationError,
)
from paddock.supervisors import ChildContext, SupervisedActor

__all__ = ["SessionActor", "SessionRecord", "SessionTable", "StoppedSnapshots"]

_MAX_TURNS = 500


class SessionRecord:
    """The durable part of one session, shared by its successive actor incarnations.

    Only the current incarnation writes it, on its actor thread. Any thread may read
    :attr:`session`, :attr:`thread` and :attr:`ref`: each is replaced whole (an immutable value),
    never mutated. ``extra`` is the driver's own durable state (written on the actor thread only).
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.thread = ThreadSnapshot(thread_id=session.thread_id)
        self.ref: pykka.ActorRef[Any] | None = None
        self.closed = False
        self.extra: dict[str, Any] = {}


class SessionActor(SupervisedActor):
    """Base of every driver's session actor.

    :meth:`emit` sends a batch of canonical events to the hub (one ``tell``) and folds it into
    the thread's turn history; :meth:`publish` replaces the public :class:`Session` snapshot.
    Both run on the actor thread. ``on_start`` records the actor's ref in the record; a subclass
    that overrides it must call ``super().on_start()``.
    """

    def __init__(self, record: SessionRecord, emitter: Any, *, context: ChildContext | None = None) -> None:
        super().__init__(context=context)
        self.record = record
        self.emitter = emitter
        self._turns: list[TurnSnapshot] = list(record.thread.turns)
        self._open_turn: dict[str, Any] | None = None

    @property
    def thread_id(self) -> str:
        return self.record.session.thread_id

    def on_start(self) -> None:
        self.record.ref = self.actor_ref

    def publish(self, **changes: Any) -> Session:
        """Replace the public Session snapshot with ``changes`` applied (and ``updated_at``)."""
        session = msgspec.structs.replace(self.record.session, updated_at=time.time(), **changes)
        self.record.session = session
        return session

    def emit(self, events: Sequence[EventBase]) -> None:
        """Send ``events`` (in order) to the hub in one tell and update the turn history."""
        if not events:
            return
        self.emitter.emit(events)
        self._observe(events)

    def _observe(self, events: Sequence[EventBase]) -> None:
        changed = False
        ev: Any  # dispatched on its exact class below
        for ev in events:
            cls = type(ev)
            if cls is ContentDelta:
                continue
            if cls is TurnStarted:
                self._open_turn = {"turn_id": ev.turn_id, "user_text": ev.input_text, "items": []}
                changed = True
            elif cls is ItemCompleted and self._open_turn is not None and ev.turn_id == self._open_turn["turn_id"]:
                self._open_turn["items"].append(
                    ItemSnapshot(item_id=ev.item_id or "", kind=ev.kind, status=ev.status, title=ev.title, text=ev.text)
                )
            elif cls is TurnCompleted and self._open_turn is not None and ev.turn_id == self._open_turn["turn_id"]:
                self._turns.append(self._snapshot(ev.state))
                del self._turns[:-_MAX_TURNS]
                self._open_turn = None
                changed = True
        if changed:
            turns = list(self._turns)
            if self._open_turn is not None:
                turns.append(self._snapshot("running"))
            self.record.thread = ThreadSnapshot(thread_id=self.thread_id, turns=tuple(turns))

    def _snapshot(self, state: str) -> TurnSnapshot:
        assert self._open_turn is not None
        return TurnSnapshot(
            turn_id=self._open_turn["turn_id"], state=state, user_text=self._open_turn["user_text"],  # type: ignore[arg-type]
            items=tuple(self._open_turn["items"]),
        )

    def forget_turns(self, num_turns: int) -> ThreadSnapshot:
        """Drop the last ``num_turns`` completed turns from the history (rollback)."""
        if num_turns > 0:
            del self._turns[-num_turns:]
        self.record.thread = ThreadSnapshot(thread_id=self.thread_id, turns=tuple(self._turns))
        return self.record.thread


class StoppedSnapshots(dict):
    """The last snapshots of stopped sessions, keeping only the ``limit`` most recent (a host
    that runs sessions for months must not grow without bound; the event log keeps the rest)."""

    def __init__(self, limit: int = 1024) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, thread_id: str, snapshot: ThreadSnapshot) -> None:
        self.pop(thread_id, None)
        super().__setitem__(thread_id, snapshot)
        while len(self) > self.limit:
            del self[next(iter(self))]


class SessionTable:
    """The adapter-side table of an instance's sessions: what every driver's adapter answers the
    same way. A subclass sets ``_records`` (thread id -> :class:`SessionRecord`), ``_stopped``
    (thread id -> the last snapshot of a stopped session), ``_where`` (the ``driver`` and
    ``instance_id`` its errors name), and implements ``stop_session``. Thread-safe reads."""

    _records: dict[str, SessionRecord]
    _stopped: StoppedSnapshots
    _where: dict[str, Any]

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        raise NotImplementedError

    def check_turn_input(self, input: SendTurnInput) -> None:
        """Refuse an empty or oversized prompt, or an unknown interaction mode, before anything
        reaches a process (:class:`ValidationError`)."""
        if not input.text.strip():
            raise ValidationError("send_turn", "the prompt is empty", **self._where, thread_id=input.thread_id)
        if len(input.text) > MAX_PROMPT_CHARS:
            raise ValidationError(
                "send_turn", f"the prompt has {len(input.text)} characters (limit {MAX_PROMPT_CHARS})",
                **self._where, thread_id=input.thread_id,
            )
        if input.interaction_mode is not None and input.interaction_mode not in INTERACTION_MODES:
            raise ValidationError("send_turn", f"unknown interaction mode {input.interaction_mode!r}", **self._where)

    def stop_all(self, *, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else 15.0)
        for thread_id in list(self._records):
            try:
                self.stop_session(thread_id, timeout=max(0.1, deadline - time.monotonic()))
            except (SessionNotFoundError, SessionClosedError):
                pass

    def list_sessions(self) -> list[Session]:
        return [r.session for r in list(self._records.values()) if not r.closed]

    def has_session(self, thread_id: str) -> bool:
        record = self._records.get(thread_id)
        return record is not None and not record.closed

    def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot:
        """The turns this instance saw on the thread (also after the session stopped)."""
        record = self._records.get(thread_id)
        if record is not None:
            return record.thread
        if thread_id in self._stopped:
            return self._stopped[thread_id]
        raise SessionNotFoundError(thread_id, **self._where)
