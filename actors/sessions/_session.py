"""The session base every driver builds on: :class:`SessionActor` (one actor per live session,
under a session supervisor) and :class:`SessionTable` (the adapter's table of sessions).

What must outlive one actor incarnation (the supervisor restarts a session after its agent
process restarts) lives in a :class:`SessionRecord` that the driver hands to every incarnation:
the public :class:`Session` snapshot, the thread's turn history, and driver-private fields.

The base owns, once for every driver: the event identity, the control messages
(:mod:`._control`), the pending-request table (ids, ``request.opened``/``request.resolved``
pairing, answer-once, resolve-all at turn end and process death), the turn tracker (exactly one
``turn.completed`` per turn), turn timers and the ``session.exited`` builder. A driver implements
only the protocol hooks listed on :class:`SessionActor`.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import msgspec
import pykka

from paddock.contract import (
    DECISIONS,
    CapabilityUnsupportedError,
    PaddockError,
    DriverError,
    ProcessError,
    EventBase,
    EventIdentity,
    ModelInfo,
    RequestError,
    RequestOpened,
    RequestResolved,
    ResumeCursor,
    USAGE_LIMIT,
    RuleSubject,
    RuntimeErrorEvent,
    RuntimeWarningEvent,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionExited,
    StartSessionInput,
    ThreadFold,
    ThreadSnapshot,
    TokenUsage,
    TurnStartResult,
    TurnState,
    ValidationError,
    usage_limit_of,
    decide,
    with_preamble,
    with_reminder,
)
from paddock.supervisors import ChildContext, halted, hung_reason, limit_reason

from ..execution import SupervisedDispatchActor
from ._control import (
    AnswerUserInput,
    Compact,
    FailTurn,
    Fork,
    Interrupt,
    Open,
    Respond,
    Rollback,
    SendTurn,
    Steer,
    TransportWarning,
    TurnTimerExpired,
)
from ._requests import PendingRequests
from ..execution import TimerEntry, timers
from ._turns import TurnTracker
from ..events import Emitter
from ..transports import ExitInfo, ProcessHandle

__all__ = ["GONE_GRACE", "Mailbox", "ProcessGone", "ProcessRestarting", "SessionActor", "SessionRecord"]

_MAX_TURNS = 500
_STDERR_TAIL = 4096
DEFAULT_INTERRUPT_TIMEOUT = 10.0
_INTERRUPT_BOUND = "paddock.interrupt_bound"  # the base's own turn timer (not a driver's)

GONE_GRACE = 5.0
"""Seconds a ``send_turn`` that found the agent's process dead waits for what replaces it
before it fails with the typed error."""

N = TypeVar("N")
S = TypeVar("S")


class ProcessGone(ProcessError):
    """The agent's process died (or closed its stdin) and its exit is not processed yet:
    nothing written to it arrives (:meth:`SessionActor.refuse_unreachable`)."""


class ProcessRestarting(SessionClosedError):
    """A shared process exited and is being restarted (a :class:`SessionClosedError` to
    callers)."""


class Mailbox(Protocol):
    """What a router, a link or a timer needs of a session actor's ref: ``tell`` it a message
    (any thread; raises ``pykka.ActorDeadError`` once the actor stopped)."""

    def tell(self, message: object) -> None: ...


class SessionRecord(Generic[S]):
    """The durable part of one session, shared by its successive actor incarnations.

    Only the current incarnation writes it, inside its actor (on a dispatcher worker). Any thread may read
    :attr:`session`, :attr:`thread` and :attr:`ref`: ``session`` and ``ref`` are replaced whole
    (immutable values), ``thread`` is folded under a lock. ``input`` is what the host asked
    (its ``model`` resolved to the instance's default), ``emitter`` the session's line to the
    hub, ``state`` the driver's own durable state ``S`` (written inside the actor only).
    """

    def __init__(self, session: Session, input: StartSessionInput, emitter: Emitter, state: S) -> None:
        self.session = session
        self.input = input
        self.emitter = emitter
        self.state = state
        self.ref: pykka.ActorRef[Any] | None = None
        self.closed = False
        self.report_models: Callable[[Sequence[ModelInfo]], None] | None = None
        """Tell the instance the model catalog this session's agent reported (set by the adapter;
        thread-safe; called from the session actor)."""
        self._fold = ThreadFold(session.thread_id, max_turns=_MAX_TURNS)
        self._thread: ThreadSnapshot | None = None
        self._lock = threading.Lock()

    @property
    def thread(self) -> ThreadSnapshot:
        """The thread's turns as this session saw them (:func:`paddock.contract.fold_thread`)."""
        with self._lock:
            if self._thread is None:
                self._thread = self._fold.snapshot()
            return self._thread

    def fold(self, events: Sequence[EventBase]) -> None:
        """Fold emitted events into :attr:`thread` (thread: the session actor's)."""
        with self._lock:
            if self._fold.add(events):
                self._thread = None

    def forget_turns(self, num_turns: int) -> ThreadSnapshot:
        """Drop the last ``num_turns`` completed turns (rollback)."""
        with self._lock:
            self._fold.drop_last(num_turns)
            self._thread = None
        return self.thread


class SessionActor(SupervisedDispatchActor, Generic[N, S]):
    """Base of every driver's session actor. ``N`` is the driver's native handle of an open
    request (what it needs to answer it on the wire), ``S`` its durable per-session state
    (``record.state``).

    Every method runs inside the actor: on a worker thread of the shared dispatcher
    (:mod:`paddock.actors` ``Dispatcher``), one message at a time and in order, never on a thread
    of its own (many sessions share few threads). Attributes for the driver: ``record``,
    ``identity`` (``Event(**self.identity, ...)``), ``owner`` (``driver``/``instance_id`` for
    errors), ``turn`` (:class:`TurnTracker`), ``requests`` (:class:`PendingRequests`).

    The base answers the control messages (:mod:`paddock.actors` ``Open``, ``SendTurn``,
    ``Interrupt``, ``Respond``, ``TransportWarning``, ``TurnTimerExpired``) and calls the
    driver's hooks:

    - :meth:`open_session` -> ``Session``: create or resume the native session (``Open``); a
      driver that must wait for its agent's answer calls ``self.defer_reply()``, returns
      ``None`` and answers the reply when the answer arrives (as a message to this actor);
    - :meth:`start_turn` ``(input, turn_id)`` -> ``TurnStartResult``: send the prompt; the base has
      refused a closed session and a running turn already; use ``self.turn.start`` for the
      ``turn.started``;
    - :meth:`cancel_turn` ``(events)``: ask the agent to stop the running turn (the base has set
      ``turn.interrupt_requested`` and cancelled the open requests, answering them natively);
    - :meth:`answer_request` ``(native, decision)``: deliver a host decision on the wire;
    - :meth:`cancel_request` ``(native)``: tell the agent an open request is cancelled (only
      called with ``answer=True``; must not raise when the process is gone);
    - :meth:`close_turn` ``(events, state, usage)`` -> ``TokenUsage | None``: close the turn's open
      items before ``turn.completed``; returns the turn's usage for it;
    - :meth:`on_turn_timer` ``(name, turn_id)``: a timer of the running turn fired;
    - the optional thread operations, each behind a capability the adapter checks first:
      :meth:`steer` (``Steer``), :meth:`answer_user_input` (``AnswerUserInput``),
      :meth:`rollback` (``Rollback``), :meth:`fork` (``Fork``), :meth:`compact` (``Compact``).

    A driver's ``on_receive`` handles its own (transport) messages first and passes the rest to
    ``super().on_receive``. ``on_start`` records the actor's ref in the record; a subclass that
    overrides it must call ``super().on_start()``.

    Threads: ``__init__`` runs on the supervisor's thread that starts the child; ``on_start``,
    every hook and helper, ``on_shutdown``, ``on_stop``/``on_failure`` and ``on_terminate`` run
    inside the actor, on whichever dispatcher worker runs its message (two messages may run on
    two workers, never at once), so a hook must not rely on thread-local state. Other threads (a
    transport's reader, an exit watcher, the timer thread) only ``tell`` the actor; the adapter
    (:class:`SessionTable`, on the host's thread) only asks it the control messages. A hook never
    blocks: what needs an agent's answer defers its reply (``defer_reply``) or, where a driver
    still waits, waits inside ``paddock.actors.blocking()``, so the pool runs the other sessions
    on another worker meanwhile; it never waits for another actor.

    Writing a driver on this base:

    - a permission request from the agent: build its ``RequestOpened`` with
      ``request_id=self.requests.new_id(self.turn.turn_id)``, then
      ``self.open_request(events, opened, native, auto=<decision or None>)``; the host's answer
      reaches :meth:`answer_request` exactly once (a second one is a :class:`RequestError`);
    - the end of a turn, whatever ends it (the agent's result, a timeout, process death, a stop):
      ``self.end_turn(events, state, ...)``; it resolves what is still open (``requests=``
      ``"expired"`` when the process died, with ``answer=True`` to tell a living agent), and a
      second call for the same turn adds nothing;
    - the end of the session: ``self.session_exited(reason, recoverable=..., info=exit_info)``;
    - a deadline within a turn: ``self.schedule_turn_timer(name, seconds)`` ->
      :meth:`on_turn_timer`; ``end_turn`` cancels the turn's timers.

    An interrupted turn ends within :attr:`interrupt_timeout` whatever the agent does (a stopped
    or hung agent acknowledges nothing): the base ends it ``interrupted`` with a
    ``runtime.warning`` (``turn.interrupt_unacknowledged``) unless the driver ended it first.
    """

    interrupt_timeout: float = DEFAULT_INTERRUPT_TIMEOUT
    """Seconds from ``Interrupt`` to the end of the turn at the latest (0: no bound); a driver
    whose protocol has its own, longer acknowledgement wait may raise it."""

    def __init__(self, record: SessionRecord[S], *, context: ChildContext | None = None) -> None:
        super().__init__(context=context)
        self.record = record
        self.emitter = record.emitter
        s = record.session
        self.owner: dict[str, str] = {"driver": s.driver, "instance_id": s.instance_id}
        self.identity = EventIdentity(driver=s.driver, instance_id=s.instance_id, thread_id=s.thread_id)
        self.turn = TurnTracker(self.identity)
        self.requests: PendingRequests[N] = PendingRequests()
        self._turn_timers: dict[str, TimerEntry] = {}
        self._preamble_delivered = False
        """The mark belongs to this incarnation: a new one (a restart, a resume into a new
        process) delivers one full copy again. Set only once a turn carrying it was accepted."""
        self._interrupt_timer: TimerEntry | None = None  # kept apart: drivers cancel their own timers
        self._for_session: set[bytes] = set()
        """Subjects (encoded) answered ``accept_for_session`` in this incarnation: the same
        subject asked again is accepted (``decided_by = "session"``) without asking."""

    @property
    def thread_id(self) -> str:
        return self.record.session.thread_id

    def on_start(self) -> None:
        self.record.ref = self.actor_ref

    # events and the public snapshot ---------------------------------------------------------------

    def publish(self, **changes: object) -> Session:
        """Replace the public Session snapshot with ``changes`` applied (and ``updated_at``)."""
        session = msgspec.structs.replace(self.record.session, updated_at=time.time(), **changes)
        self.record.session = session
        return session

    def emit(self, events: Sequence[EventBase]) -> None:
        """Send ``events`` (in order) to the hub in one tell and fold them into the thread."""
        if not events:
            return
        self.emitter.emit(events)
        self.record.fold(events)

    def forget_turns(self, num_turns: int) -> ThreadSnapshot:
        """Drop the last ``num_turns`` completed turns from the history (rollback)."""
        return self.record.forget_turns(num_turns)

    def closed_error(self, detail: str | None = None) -> SessionClosedError:
        return SessionClosedError(self.thread_id, detail, **self.owner)

    def where(self) -> dict[str, str]:
        """``driver``, ``instance_id`` and ``thread_id``, for the errors this session raises."""
        return {**self.owner, "thread_id": self.thread_id}

    def session_exited(self, reason: str, *, recoverable: bool, info: ExitInfo | None = None) -> SessionExited:
        """``session.exited``; with the process's ``info`` it carries its exit code (or signal)
        and the end of its stderr."""
        if info is None:
            return SessionExited(**self.identity, reason=reason, recoverable=recoverable)
        return SessionExited(
            **self.identity, reason=reason, recoverable=recoverable,
            exit_code=info.returncode if info.returncode >= 0 else None, signal=info.signal,
            stderr_tail=info.stderr_tail[-_STDERR_TAIL:] or None,
        )

    # control messages -----------------------------------------------------------------------------

    def on_receive(self, message: object) -> object:
        handle = _CONTROL.get(type(message))
        if handle is not None:
            return handle(self, message)
        return super().on_receive(message)

    def _transport_warning(self, message: TransportWarning) -> None:
        code = "transport." + message.code.rsplit(".", 1)[-1]
        self.emit([RuntimeWarningEvent(**self.identity, turn_id=self.turn.turn_id, code=code,
                                       message=message.message, detail=message.detail)])

    def _turn_timer_expired(self, message: TurnTimerExpired) -> None:
        if message.name == _INTERRUPT_BOUND:
            if self._interrupt_timer is not None and message.turn_id == self.turn.turn_id:
                self._interrupt_timer = None
                self.end_unacknowledged_turn(
                    message.turn_id, "turn.interrupt_unacknowledged",
                    f"the agent did not end the interrupted turn within {self.interrupt_timeout:g} s", answer=True,
                )
            return
        if self._turn_timers.get(message.name) is not None and message.turn_id == self.turn.turn_id:
            del self._turn_timers[message.name]
            self.on_turn_timer(message.name, message.turn_id)

    def _send_turn(self, inp: SendTurnInput) -> TurnStartResult | None:
        """``SendTurn``. When the agent's process died under it before the prompt was written
        (:class:`ProcessGone`) or is restarting (:class:`ProcessRestarting`), this incarnation
        ends with the process, so the answer is left to what comes next: the reply stays open,
        and when this actor stops it is answered ``ActorDeadError``; the adapter then asks the
        next incarnation (shared process: it awaits the restart) or the runtime starts the
        thread again (process per session), which resumes the session and sends the turn: the
        first send after a crash resumes in one call. A process that closed its stdin and
        lives on fails the call with the typed error after :data:`GONE_GRACE` seconds."""
        try:
            return self._send_turn_now(inp)
        except (ProcessGone, ProcessRestarting) as exc:
            reply = self.defer_reply()
            timers.schedule(time.monotonic() + GONE_GRACE, functools.partial(reply.fail, exc))
            return None

    def _open(self) -> Session | None:
        """``Open``: :meth:`open_session`; when the agent's process died under it before the
        driver sent anything (:class:`ProcessGone`, :class:`ProcessRestarting`), the answer is
        left to what comes next, as for :meth:`_send_turn`: a start racing the crash of a shared
        process opens on the restarted one in the same call."""
        try:
            return self.open_session()
        except (ProcessGone, ProcessRestarting) as exc:
            reply = self.defer_reply()
            timers.schedule(time.monotonic() + GONE_GRACE, functools.partial(reply.fail, exc))
            return None

    def _send_turn_now(self, inp: SendTurnInput) -> TurnStartResult:
        if self.record.closed:
            raise self.closed_error()
        if self.turn.in_turn:
            raise ValidationError(
                "send_turn", f"a turn is already running on this thread (turn {self.turn.turn_id!r} is still "
                             "running); wait for its turn.completed or interrupt it", **self.where(),
            )
        sent, carries_preamble = self._with_prefix(inp)
        if sent is not inp:
            self.turn.carry(sent.text, inp.text, carries_preamble)
        try:
            result = self.start_turn(sent, self.turn.new_id(inp.turn_id))
            if carries_preamble:
                self._preamble_delivered = True  # accepted: only now is it delivered
            return result
        except Exception as exc:
            # Whatever failed (a foreign error included, e.g. text the wire cannot encode), the
            # turn must not stay marked running: every later send_turn would be refused.
            if self.turn.in_turn:
                events: list[EventBase] = []
                self.end_turn(events, "failed", error=f"the turn could not be sent: {exc}")
                self.emit(events)
            if isinstance(exc, PaddockError):
                raise
            raise DriverError(self.owner["driver"], self.owner["instance_id"], f"send_turn failed: {exc!r}",
                              thread_id=self.thread_id) from exc
        finally:
            self.turn.uncarry()

    def _with_prefix(self, inp: SendTurnInput) -> tuple[SendTurnInput, bool]:
        """``inp`` as sent to the agent, and whether it carries the preamble: the first turn of
        this incarnation carries the session's preamble block, every later turn its reminder
        (docs/architecture.md, "Preamble"). The user's text is unchanged inside it; the prompt
        limit was checked on it alone."""
        start = self.record.input
        if start.preamble and not self._preamble_delivered:
            return msgspec.structs.replace(inp, text=with_preamble(start.preamble, inp.text)), True
        if start.preamble_reminder and (self._preamble_delivered or not start.preamble):
            return msgspec.structs.replace(inp, text=with_reminder(start.preamble_reminder, inp.text)), False
        return inp, False

    def redeliver_preamble(self) -> None:
        """The agent behind this actor is a new live session (an OpenCode server restarted under
        a surviving actor): its next turn carries the full preamble again."""
        self._preamble_delivered = False

    def _interrupt(self, turn_id: str | None) -> None:
        current = self.turn.turn_id
        if current is None or (turn_id is not None and turn_id != current) or self.turn.interrupt_requested:
            return None
        self.turn.interrupt_requested = True
        events: list[EventBase] = []
        self.resolve_requests(events, "cancelled", answer=True)
        self.cancel_turn(events)
        self.emit(events)
        if self.turn.in_turn and self.interrupt_timeout > 0:
            self._interrupt_timer = timers.schedule(
                time.monotonic() + self.interrupt_timeout,
                functools.partial(_tell_quietly, self.actor_ref, TurnTimerExpired(_INTERRUPT_BOUND, current)),
            )
        return None

    def _fail_turn(self, message: FailTurn) -> None:
        if self.turn.turn_id != message.turn_id or self.turn.failure is not None:
            return None
        self.turn.failure = message.message
        self.emit([RuntimeErrorEvent(**self.identity, turn_id=message.turn_id, code=message.code,
                                     message=message.message, detail=message.detail)])
        if self.turn.interrupt_requested:
            return None  # an interrupt is under way, bounded: it ends the turn, failed now
        try:
            self._interrupt(message.turn_id)
        except Exception as exc:  # the agent cannot be asked to stop: end the turn here
            events: list[EventBase] = []
            self.end_turn(events, "failed", error=f"{message.message} (the agent could not be stopped: {exc})",
                          answer=True)
            self.emit(events)
            self.publish(status="ready", active_turn_id=None)
        return None

    # the agent's process ----------------------------------------------------------------------------

    def refuse_unreachable(self, handle: ProcessHandle | None, noun: str, *, gone: bool = True) -> None:
        """Refuse to send anything to the process behind ``handle`` (``noun`` names it) when it
        would answer nothing: :class:`ProcessGone` when it died and the host has not processed
        its exit yet (``gone``: checked on its stdin pipe), :class:`ProcessError` while it is
        stopped (SIGSTOP, SIGTSTP, a tracer: it would accept a prompt and answer nothing; its
        shim declares it hung after ``hang_timeout`` and kills it, and its supervisor
        restarts it). ``handle`` ``None``: nothing to check. Costs a ``poll`` and two or
        three small ``/proc`` reads."""
        if handle is None:
            return
        where = {"driver": self.owner["driver"], "instance_id": self.owner["instance_id"], "thread_id": self.thread_id}
        if gone:
            why = handle.input_gone()
            if why is not None:
                raise ProcessGone(f"{noun} is gone ({why}); the session resumes when it is restarted", None, **where)
        pid = handle.pid
        state = halted(pid) if pid is not None else None
        if state is not None:
            raise ProcessError(f"{noun} is {state}: it answers nothing until it is continued, or restarted once it "
                               "is declared hung", None, **where)

    def hung_warning(self, events: list[EventBase], info: ExitInfo | None) -> None:
        """Append the ``runtime.warning`` its shim's kill calls for when the process that ended
        was killed by it: ``process.hung`` (naming the state it was in) for staying stopped
        ``hang_timeout``, ``process.limit_exceeded`` (naming the limit, the figure and the
        process that grew most) for going over the instance's memory or process limit."""
        if info is None:
            return
        for code, why in (("process.hung", hung_reason(info.stderr_tail)),
                          ("process.limit_exceeded", limit_reason(info.stderr_tail))):
            if why is not None:
                events.append(RuntimeWarningEvent(**self.identity, turn_id=self.turn.turn_id, code=code, message=why))

    # requests -------------------------------------------------------------------------------------

    def open_request(self, events: list[EventBase], opened: RequestOpened, native: N, *,
                     auto: str | None = None) -> None:
        """Append ``opened`` (its ``request_id`` from ``self.requests.new_id``); with ``auto`` (a
        decision the runtime mode takes by itself) answer it at once and append its
        ``request.resolved``. Else the session's approval rules (``record.input.approval_rules``,
        :func:`paddock.contract.decide` on the request's subject) may answer it at once, the same
        way, with the rule in the audit; else it stays open until the host responds (its hook or
        a person) or the turn ends. Every driver opens its requests here, so the rules apply to
        all of them alike."""
        request_id = opened.request_id
        assert request_id is not None, "RequestOpened.request_id comes from self.requests.new_id"
        events.append(opened)
        if auto is not None:
            self.answer_request(native, auto)
            events.append(self.resolved(request_id, "answered", auto, decided_by="mode"))
            return
        start = self.record.input
        if start.approval_rules and opened.subject is not None:
            ruled = decide(start.approval_rules, RuleSubject(subject=opened.subject, cwd=start.cwd,
                                                              roots=start.workspace_roots), opened.decisions)
            if ruled is not None:
                self.answer_request(native, ruled.decision)
                events.append(self.resolved(request_id, "answered", ruled.decision, decided_by="rule",
                                            rule_index=ruled.index, rule=ruled.rule, reason=ruled.reason))
                return
        subject = _encode_subject(opened.subject) if opened.subject is not None else None
        if subject is not None and subject in self._for_session and "accept" in opened.decisions:
            self.answer_request(native, "accept")
            events.append(self.resolved(request_id, "answered", "accept", decided_by="session"))
            return
        self.requests.add(request_id, native, tuple(opened.decisions), subject)
        self.publish(status="running")

    def respond(self, request_id: str, decision: str, decided_by: str = "person", surface: str | None = None) -> None:
        """The host's answer (``Respond``): once per request, else :class:`RequestError`. An
        approval (``accept``, ``accept_for_session``) the request did not offer is refused with
        :class:`ValidationError` and the request stays open; ``decline`` and ``cancel`` are
        always taken (a driver answers them with the nearest refusal)."""
        if decision not in DECISIONS:
            raise ValidationError("respond_to_request", f"unknown decision {decision!r}; use one of "
                                  f"{', '.join(DECISIONS)}", **self.where())
        offered = self.requests.offered(request_id)
        if offered is not None and decision in ("accept", "accept_for_session") and decision not in offered:
            # An approval must be one the request offered: a driver mapping an unoffered one to
            # the nearest option would approve something the host was never shown. Stays open.
            raise ValidationError("respond_to_request", f"request {request_id!r} does not offer {decision!r}; it "
                                  f"offers {', '.join(offered)}", **self.where())
        subject = self.requests.subject(request_id)
        native = self.requests.take(request_id)
        if native is None:
            raise RequestError("respond_to_request", None, f"no open request {request_id!r} (unknown or already "
                               "resolved)", **self.where())
        if decision == "accept_for_session" and subject is not None:
            self._for_session.add(subject)
        self.answer_request(native, decision)
        self.emit([self.resolved(request_id, "answered", decision, decided_by=decided_by,
                                 surface=surface if decided_by == "person" else None)])
        self.publish(status="running")
        return None

    def resolved(self, request_id: str, resolution: str, decision: str | None = None, **audit: Any) -> RequestResolved:
        """The ``request.resolved`` of ``request_id``; ``audit``: who decided and how
        (``decided_by``, ``surface``, ``rule_index``, ``rule``, ``reason``)."""
        return RequestResolved(**self.identity, turn_id=self.turn.turn_id, request_id=request_id,
                               resolution=resolution, decision=decision, **audit)  # type: ignore[arg-type]

    def resolve_requests(self, events: list[EventBase], resolution: str, *, answer: bool = False) -> None:
        """Resolve every open request with ``resolution`` (``cancelled``, ``expired``); with
        ``answer`` tell the agent each is cancelled (:meth:`cancel_request`)."""
        for request_id, native in self.requests.take_all():
            if answer:
                self.cancel_request(native)
            events.append(self.resolved(request_id, resolution))

    # turns ----------------------------------------------------------------------------------------

    def end_turn(self, events: list[EventBase], state: TurnState, *, stop_reason: str | None = None,
                 error: str | None = None, usage: object = None, requests: str = "cancelled",
                 answer: bool = False) -> None:
        """End the running turn, once: resolve its open requests (``requests``: the resolution;
        ``answer``: tell the agent), stop its timers, let the driver close its items
        (:meth:`close_turn`), then ``turn.completed``. A no-op for the turn when none runs."""
        self.resolve_requests(events, requests, answer=answer)
        self.cancel_turn_timers()
        self._cancel_interrupt_bound()
        if not self.turn.in_turn:
            return
        if state == "failed" and error:
            limited, resets_at = usage_limit_of(error)
            if limited:  # one classification for every driver: the text its agent reports
                events.append(RuntimeErrorEvent(**self.identity, turn_id=self.turn.turn_id, code=USAGE_LIMIT,
                                                message=error, error_class=USAGE_LIMIT, resets_at=resets_at))
        turn_usage = self.close_turn(events, state, usage)
        done = self.turn.complete(state, stop_reason=stop_reason, error=error, usage=turn_usage)
        if done is not None:
            events.append(done)

    def end_unacknowledged_turn(self, turn_id: str, code: str, detail: str, *, answer: bool = False) -> None:
        """The agent never ended turn ``turn_id`` after it was asked to stop (its interrupt or
        cancel timer fired): warn ``code`` with ``detail``, end the turn ``interrupted`` (see
        :meth:`end_turn` for ``answer``) and mark the session ready. Runs inside the actor."""
        events: list[EventBase] = [RuntimeWarningEvent(**self.identity, turn_id=turn_id, code=code, message=detail)]
        self.end_turn(events, "interrupted", error=detail, answer=answer)
        self.emit(events)
        self.publish(status="ready", active_turn_id=None)

    def schedule_turn_timer(self, name: str, delay: float) -> None:
        """In ``delay`` seconds call :meth:`on_turn_timer` ``(name, turn_id)``, unless the turn
        ended or the timer was cancelled first. One timer per name (a new one replaces it)."""
        turn_id = self.turn.turn_id
        if turn_id is None:
            return
        self.cancel_turn_timer(name)
        self._turn_timers[name] = timers.schedule(
            time.monotonic() + delay, functools.partial(_tell_quietly, self.actor_ref, TurnTimerExpired(name, turn_id))
        )

    def cancel_turn_timer(self, name: str) -> None:
        timer = self._turn_timers.pop(name, None)
        if timer is not None:
            timer.cancel()

    def cancel_turn_timers(self) -> None:
        for name in list(self._turn_timers):
            self.cancel_turn_timer(name)

    def _cancel_interrupt_bound(self) -> None:
        timer, self._interrupt_timer = self._interrupt_timer, None
        if timer is not None:
            timer.cancel()

    # hooks (a driver overrides them; all run on this actor's thread) -------------------------------

    def open_session(self) -> Session | None:
        raise NotImplementedError

    def start_turn(self, inp: SendTurnInput, turn_id: str) -> TurnStartResult:
        raise NotImplementedError

    def cancel_turn(self, events: list[EventBase]) -> None:
        raise NotImplementedError

    def answer_request(self, native: N, decision: str) -> None:
        raise NotImplementedError

    def cancel_request(self, native: N) -> None:
        """Default: nothing to send."""

    def close_turn(self, events: list[EventBase], state: TurnState, usage: object) -> TokenUsage | None:
        """Default: no items to close; ``usage`` is already the turn's TokenUsage (or ``None``)."""
        return usage if isinstance(usage, TokenUsage) else None

    def on_turn_timer(self, name: str, turn_id: str) -> None:
        """Default: ignore."""

    def steer(self, inp: SendTurnInput) -> TurnStartResult:
        """``Steer``: add ``inp`` to the running turn (``turns.steer``)."""
        raise self._unsupported("turns.steer")

    def answer_user_input(self, request_id: str, answers: dict[str, Any]) -> None:
        """``AnswerUserInput``: answer an open user-input request (``approvals.user_input``)."""
        raise self._unsupported("approvals.user_input")

    def rollback(self, num_turns: int) -> ThreadSnapshot:
        """``Rollback``: drop the last ``num_turns`` turns natively (``threads.rollback``)."""
        raise self._unsupported("threads.rollback")

    def fork(self, at_turn: int | None) -> ResumeCursor:
        """``Fork``: copy the native session, through turn ``at_turn`` where given (only a
        ``sessions.fork_kind == "from_turn"`` driver gets one); the copy's resume cursor
        (``sessions.fork``)."""
        raise self._unsupported("sessions.fork")

    def compact(self) -> TurnStartResult | None:
        """``Compact``: summarize the native history (``context.compaction``)."""
        raise self._unsupported("context.compaction")

    def _unsupported(self, capability: str) -> CapabilityUnsupportedError:
        return CapabilityUnsupportedError(capability, f"the {self.owner['driver']} driver has no such operation",
                                          **self.where())


_CONTROL: dict[type, Callable[[SessionActor[Any, Any], Any], object]] = {
    SendTurn: lambda actor, m: actor._send_turn(m.input),
    Respond: lambda actor, m: actor.respond(m.request_id, m.decision, m.decided_by, m.surface),
    Interrupt: lambda actor, m: actor._interrupt(m.turn_id),
    FailTurn: lambda actor, m: actor._fail_turn(m),
    Open: lambda actor, m: actor._open(),
    TransportWarning: lambda actor, m: actor._transport_warning(m),
    TurnTimerExpired: lambda actor, m: actor._turn_timer_expired(m),
    Steer: lambda actor, m: actor.steer(m.input),
    AnswerUserInput: lambda actor, m: actor.answer_user_input(m.request_id, m.answers),
    Rollback: lambda actor, m: actor.rollback(m.num_turns),
    Fork: lambda actor, m: actor.fork(m.at_turn),
    Compact: lambda actor, m: actor.compact(),
}
"""The control messages (:mod:`._control`) -> what the base does with each (inside the actor)."""


_encode_subject = msgspec.json.Encoder().encode


def _tell_quietly(ref: Mailbox, message: object) -> None:
    # Timer thread: only tell; the actor may have stopped meanwhile.
    try:
        ref.tell(message)
    except pykka.ActorDeadError:
        pass
