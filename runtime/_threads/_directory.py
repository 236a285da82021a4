"""The thread directory: the one owner of session status.

Three things say whether a thread is live: the live map (thread -> instance), the adapter's
session record, and the persisted binding's status. Only this module reads or writes them, and it
reconciles them in one place (:meth:`ThreadDirectory._live_on`): a thread is live when the live
map names an instance whose adapter still has its session; the binding's status follows the
event stream (the tracker thread) and says why a thread is not live. Idle sessions are stopped by
the reaper thread.

Every public method is thread-safe and runs in the caller's thread; start and stop of one thread
are serialised by a per-thread lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from paddock._instances._config import RuntimeSettings
from paddock._services._generate import generate_text
from paddock._instances._handoff import ThreadHandoff
from paddock._threads._admission import SessionGate, TurnGate
from paddock._threads._handed import Handed, hand_off
from paddock._services._transcript import handoff_preamble
from paddock._instances._table import InstanceTable
from paddock._services._models import ModelCatalogs
from paddock._operations._queued import QueuedTurn
from paddock._operations._table import (
    CompactThreadBody,
    DeleteThreadBody,
    DiffBody,
    ForkThreadBody,
    GenerateTextBody,
    InterruptTurnBody,
    ModelsBody,
    ReadThreadBody,
    RespondToRequestBody,
    RespondToUserInputBody,
    RestoreFilesBody,
    RollbackThreadBody,
    SendTurnBody,
    StartSessionBody,
    SteerTurnBody,
    StopAllBody,
    StopSessionBody,
)
from paddock.actors import HubHandle, LogReader
from paddock.contract import (
    Attachment,
    Budget,
    Capabilities,
    CapabilityUnsupportedError,
    Decider,
    ModelInfo,
    OperationTimeout,
    PaddockError,
    PersistenceError,
    ProviderAdapter,
    ResumeCursor,
    RuntimeErrorEvent,
    RuntimeWarningEvent,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionNotFoundError,
    StartSessionInput,
    ThreadRolledBack,
    ThreadSnapshot,
    TurnStartResult,
    ValidationError,
    check_attachments_allowed,
    capability_on,
    check_runtime_mode,
    decide_steering,
    require_capabilities,
    decode_event,
    fold_thread,
    resolve_attachments,
)
from paddock._state._store import RESUMABLE, Binding, BindingStore
from paddock._workspaces._files import FilesRestored, ThreadFiles

__all__ = ["DEFAULT_TIMEOUT", "ThreadDirectory"]

DEFAULT_TIMEOUT = 30.0


class ThreadDirectory:
    """Threads -> live sessions, with their persisted bindings. Built by the Runtime's opener;
    :meth:`start` starts the tracker and reaper threads."""

    def __init__(self, store: BindingStore, instances: InstanceTable, hub: HubHandle,
                 settings: RuntimeSettings, files: ThreadFiles, *, turn_gate: TurnGate | None = None,
                 session_gate: SessionGate | None = None) -> None:
        self._store = store
        self._turn_gate = turn_gate  # admission (paddock._threads._admission); None: no bound configured
        self._session_gate = session_gate
        if turn_gate is not None:
            turn_gate.start(hub, instances.driver, self._send)
        self._files = files
        self._instances = instances
        self._hub = hub
        self._settings = settings
        self._lock = threading.Lock()
        self._live: dict[str, str] = {}  # thread id -> instance id
        self._last_used: dict[str, float] = {}
        self._thread_locks: dict[str, threading.Lock] = {}
        self._handed: dict[str, Handed] = {}  # live thread -> what its session was handed
        self._ephemeral: set[str] = set()  # threads of generate_text calls under way
        self._after_transcript: dict[str, Handed] = {}  # hand-off pending -> what it is handed after
        self._catalogs = ModelCatalogs(instances, self._ephemeral)
        self.budget_of: Callable[[str], Budget | None] = lambda _: None
        """The thread's own budget, handed to the driver's native limit (set by the runtime)."""
        self.hub_failed: str | None = None
        """Why the hub stopped under the tracker (the runtime then refuses work), else ``None``."""
        self._stop = threading.Event()
        self._tracker = hub.subscribe(types=("turn.completed", "session.exited", "session.started"))
        self._threads = [
            threading.Thread(target=self._track, name="paddock-tracker", daemon=True),
            threading.Thread(target=self._reap_idle, name="paddock-reaper", daemon=True),
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    # sessions -----------------------------------------------------------------------------------

    def start_session(self, a: StartSessionBody, *, fork_cursor: ResumeCursor | None = None,
                      transcript: str | None = None) -> Session:
        """Bind and start (or resume) the thread. ``fork_cursor``: start it on a native copy of
        another thread (:meth:`fork_thread`) instead of its own binding's cursor; ``transcript``:
        a hand-off's preamble, carried by the first turn accepted, in whichever process."""
        folder = Path(a.cwd).expanduser()
        if not folder.is_dir():
            raise ValidationError("start_session", f"cwd {a.cwd!r} is not a directory", thread_id=a.thread_id)
        cwd = str(folder.resolve())
        slot = self._instances.slot(a.instance)  # the one look-up of the instance this start makes
        adapter = slot.adapter
        confinement = None
        if slot.confinement is not None:
            shared = not getattr(adapter, "process_per_session", False)
            slot.confinement.check_cwd(cwd, shared=shared, thread_id=a.thread_id)
            confinement = slot.confinement.session_info(cwd, shared=shared)
        bound = self._store.get(a.thread_id)
        # A resume keeps the model the thread was started with, even if the catalog moved on.
        advice = None if bound is not None and (bound.instance_id, bound.model) == (a.instance, a.model) \
            else self._catalogs.advice(a.model, a.instance)
        _check_requirements(adapter.capabilities(), a)
        resume = a.resume or self._settings.resume
        with self._thread_lock(a.thread_id):
            binding = self._store.get(a.thread_id)
            handing = hand_off(a, slot, binding, transcript, moved_from=self._instances.thread_handoff,
                               runtime_rules=self._settings.approval_rules)
            handed, warnings = handing.handed, handing.warnings
            unconfined = slot.confinement.start_warning(slot.driver, a.instance, a.thread_id) if slot.confinement else None
            if unconfined is not None:
                warnings = (*warnings, unconfined)
            if handing.after_transcript is not None:
                self._after_transcript[a.thread_id] = handing.after_transcript
            else:
                self._after_transcript.pop(a.thread_id, None)
            workspace = self._files.open(a.thread_id, cwd, a.workspace or slot.workspace)
            run_in = workspace.cwd if workspace is not None else cwd  # the thread's worktree, else cwd
            if advice is not None:
                warnings = (*warnings, self._model_warning(advice, a.instance, a.thread_id))
            current = self._live.get(a.thread_id)
            if current is not None and current != a.instance:
                self._stop_live(a.thread_id, timeout=a.timeout)
            elif current == a.instance and adapter.has_session(a.thread_id):
                live = _session_of(adapter, a.thread_id)
                if live is not None and (live.cwd, live.runtime_mode, live.interaction_mode, live.model) == (
                        run_in, a.runtime_mode, a.interaction_mode, a.model) and self._handed.get(a.thread_id) == handed:
                    return self._files.label(live)  # already running as asked: starting it again is a no-op
                # Other settings: restart it from its cursor with them (the live session's newest:
                # it carries what its last turn changed, e.g. the thread's usage so far).
                adapter.stop_session(a.thread_id, timeout=_t(a.timeout))
                self._live.pop(a.thread_id, None)
                if live is not None and live.resume_cursor is not None and binding is not None:
                    binding = msgspec.structs.replace(binding, resume_cursor=live.resume_cursor)
            if warnings:
                self._hub.emitter(slot.driver, a.instance, a.thread_id).emit(list(warnings))
            cursor = fork_cursor
            if cursor is None and binding is not None and binding.instance_id == a.instance and resume != "never":
                cursor = binding.resume_cursor
            gate = self._session_gate
            if gate is not None:  # held until the start ended, either way
                gate.enter(a.instance, a.thread_id, self._live, idle_since=self._idle_since, evict=self._evict,
                           timeout=_t(a.timeout, self._settings.start_timeout))
            self._store.put(Binding(
                thread_id=a.thread_id, instance_id=a.instance, driver=slot.driver,
                status="starting", cwd=cwd, runtime_mode=a.runtime_mode, interaction_mode=a.interaction_mode,
                model=a.model, resume_cursor=cursor,
            ))
            request = StartSessionInput(
                thread_id=a.thread_id, cwd=run_in, runtime_mode=a.runtime_mode, interaction_mode=a.interaction_mode,
                model=a.model, resume_cursor=cursor, workspace_roots=(run_in,),
                mcp_servers=handed[0], preamble=handed[1], preamble_reminder=handed[2], approval_rules=handed[3],
                confinement=confinement, budget=self.budget_of(a.thread_id),
            )
            try:
                session = adapter.start_session(request, timeout=_t(a.timeout, self._settings.start_timeout))
            except PaddockError as exc:
                slot.mask(exc)  # its stderr may hold the key the CLI refused
                self._store.update(a.thread_id, status="error", last_error=str(exc))
                raise
            finally:
                if gate is not None:  # the slot is the live session's now, or free again
                    gate.leave(a.thread_id, live=a.thread_id in self._live or adapter.has_session(a.thread_id))
            if cursor is not None and resume == "require" and not session.resumed:
                adapter.stop_session(a.thread_id, timeout=_t(a.timeout))
                self._store.update(a.thread_id, status="error", last_error="resume failed")
                raise SessionClosedError(a.thread_id, "resume was required but the agent could not resume it")
            self._live[a.thread_id] = a.instance
            self._handed[a.thread_id] = handed
            self._last_used[a.thread_id] = time.monotonic()
            self._store.update(a.thread_id, status="ready", resume_cursor=session.resume_cursor or cursor,
                              last_error=None)
            return self._files.label(session)

    def models(self, a: ModelsBody) -> list[ModelInfo]:
        """The instance's model catalog (cached per instance; see :mod:`paddock._services._models`)."""
        return self._catalogs.models(a.instance, refresh=a.refresh, timeout=a.timeout)

    def _model_warning(self, advice: str, instance: str, thread_id: str) -> RuntimeWarningEvent:
        return RuntimeWarningEvent(driver=self._instances.driver(instance), instance_id=instance, thread_id=thread_id,
                                   code="model.not_in_catalog", message=advice)

    def _turn_inputs(self, thread_id: str, model: str | None, attachments: tuple[Attachment, ...], *,
                     operation: str, steering: bool) -> tuple[Attachment, ...]:
        """Warn of a turn's model the known catalog lacks (``model.not_in_catalog``) and, on a live session, check its
        attachments against the capabilities; then resolve them (read, bounded, confined to the
        workspace). Nothing here touches a process. Raises :class:`ValidationError`,
        :class:`CapabilityUnsupportedError`, :class:`SessionNotFoundError`."""
        binding = self._store.get(thread_id)
        if binding is None:
            raise SessionNotFoundError(thread_id)
        instance = self._live.get(thread_id) or binding.instance_id
        resolved: tuple[Attachment, ...] = ()
        if attachments:
            live = self._live_on(thread_id)
            if live is not None:
                # A thread that is not live is checked by its adapter once resumed (an ACP agent's
                # kinds are known only after its initialize), still before the turn is sent.
                check_attachments_allowed(live.capabilities().turns, attachments, steering=steering,
                                          driver=self._instances.driver(instance), instance_id=instance,
                                          thread_id=thread_id)
            resolved = resolve_attachments(attachments, cwd=binding.cwd, roots=(binding.cwd,), operation=operation)
        advice = self._catalogs.advice(model, instance)
        if advice is not None:
            self._hub.emitter(self._instances.driver(instance), instance, thread_id).emit(
                [self._model_warning(advice, instance, thread_id)])
        return resolved

    def send_turn(self, a: SendTurnBody) -> TurnStartResult:
        attachments = self._turn_inputs(a.thread_id, a.model, a.attachments, operation="send_turn", steering=False)
        gate = self._turn_gate
        if gate is not None:
            instance = self._live.get(a.thread_id) or self._resumable(a.thread_id).instance_id
            if gate.gates(instance):  # refused now, not once queued, when it could not resume
                return gate.send_turn(a, attachments, instance)
        return self._send(a, attachments)

    def _send(self, a: SendTurnBody, attachments: tuple[Attachment, ...], turn_id: str | None = None) -> TurnStartResult:
        """The turn to the thread's session (resumed on demand); ``turn_id``: admission's."""
        adapter = self._session_adapter(a.thread_id, timeout=a.timeout)
        # "running" goes in before the turn can end, so the tracker's running -> ready sticks.
        before = self._store.get(a.thread_id)
        running = self._store.update(a.thread_id, status="running")
        request = SendTurnInput(thread_id=a.thread_id, text=a.text, interaction_mode=a.interaction_mode, model=a.model,
                                attachments=attachments, turn_id=turn_id)
        try:
            try:
                result = adapter.send_turn(request, timeout=_t(a.timeout))
            except SessionClosedError:
                # The session ended under this call: its agent died and the new process could not
                # take the session back. A first send_turn after a crash resumes in one call: start
                # the thread again (from its cursor, or fresh with a warning) and send once more.
                adapter = self._session_adapter(a.thread_id, timeout=a.timeout)
                self._store.update(a.thread_id, status="running")
                result = adapter.send_turn(request, timeout=_t(a.timeout))
        except BaseException as exc:
            if before is not None:
                self._store.update(a.thread_id, only_if={"running"}, status=before.status)
                if isinstance(exc, PaddockError):
                    self._instances.mask(before.instance_id, exc)
            raise
        self._last_used[a.thread_id] = time.monotonic()
        if a.thread_id in self._after_transcript:
            self._transcript_delivered(a.thread_id)
        if result.resume_cursor is not None and (running is None or running.resume_cursor != result.resume_cursor):
            self._store.update(a.thread_id, resume_cursor=result.resume_cursor)  # only a new cursor is written
        return result

    # admission (paddock._threads._admission) ----------------------------------------------------

    def queue(self, instance: str | None) -> list[QueuedTurn]:
        """The turns admission holds back, in queue order per instance (none without a bound)."""
        return self._turn_gate.snapshot(instance) if self._turn_gate is not None else []

    def end_queued(self) -> None:
        """Closing: every queued turn ends ``interrupted``, and none starts any more."""
        if self._turn_gate is not None:
            self._turn_gate.end_all()

    def _idle_since(self, thread_id: str) -> float | None:
        """When the live thread was last active, if it is idle (no turn running or queued)."""
        instance_id = self._live.get(thread_id)
        adapter = self._instances.created(instance_id) if instance_id is not None else None
        session = _session_of(adapter, thread_id) if adapter is not None else None
        if session is None or session.active_turn_id or (self._turn_gate is not None and
                                                         self._turn_gate.has_queued(thread_id)):
            return None
        return self._last_used.get(thread_id, 0.0)

    def _evict(self, thread_id: str, instance_id: str) -> bool:
        """Stop an idle session for a start beyond ``max_live_sessions``, as the reaper does (it
        resumes on its next turn); whether it is stopped."""
        self._try_locked(thread_id, lambda: self._reap(thread_id, instance_id) if self._idle_since(thread_id)
                         is not None else None)
        return self._live.get(thread_id) != instance_id

    def interrupt_turn(self, a: InterruptTurnBody) -> None:
        if self._turn_gate is not None and self._turn_gate.end(a.thread_id, a.turn_id, "interrupted while queued"):
            return  # it never reached the agent
        adapter = self._live_adapter(a.thread_id)
        if not adapter.capabilities().turns.interrupt:
            raise CapabilityUnsupportedError("turns.interrupt", "interrupting a turn", thread_id=a.thread_id)
        adapter.interrupt_turn(a.thread_id, a.turn_id, timeout=_t(a.timeout))
        self._last_used[a.thread_id] = time.monotonic()

    def fail_turn(self, thread_id: str, turn_id: str, code: str, message: str, detail: dict[str, object]) -> None:
        """End the running turn ``turn_id`` failed for a cause the runtime found (the endpoint
        watch): the adapter's ``fail_turn`` (one ``runtime.error``, the agent asked to stop, the
        turn completed ``failed``); an adapter without it gets the ``runtime.error`` emitted here
        and an interrupt. Never raises: the thread may have ended meanwhile (thread: any)."""
        adapter = self._live_on(thread_id)
        instance_id = self._live.get(thread_id)
        if adapter is None or instance_id is None:
            return
        fail = getattr(adapter, "fail_turn", None)  # optional adapter hook
        try:
            if callable(fail):
                fail(thread_id, turn_id, code, message, detail=detail, timeout=10.0)
                return
            driver = self._instances.driver(instance_id)
            self._hub.emitter(driver, instance_id, thread_id).emit(
                [RuntimeErrorEvent(driver=driver, instance_id=instance_id, thread_id=thread_id,
                                   turn_id=turn_id, code=code, message=message, detail=detail)])
            adapter.interrupt_turn(thread_id, turn_id, timeout=10.0)
        except PaddockError:
            pass

    def steer_turn(self, a: SteerTurnBody) -> TurnStartResult:
        """Steer when the agent can (``decide_steering``), else interrupt the running turn, wait
        for its completion and start a new turn with the text."""
        adapter = self._live_adapter(a.thread_id)
        active = decide_steering(adapter.capabilities()) == "active_steering"
        attachments = self._turn_inputs(a.thread_id, None, a.attachments, operation="steer_turn", steering=active)
        if active:
            return adapter.steer_turn(a.thread_id, SendTurnInput(thread_id=a.thread_id, text=a.text,
                                                                 attachments=attachments), timeout=_t(a.timeout))
        deadline = time.monotonic() + _t(a.timeout)
        with self._hub.subscribe(thread_id=a.thread_id, types=("turn.completed", "turn.started")) as sub:
            session = _session_of(adapter, a.thread_id)
            running = session.active_turn_id if session else None
            if running:
                adapter.interrupt_turn(a.thread_id, running, timeout=_t(a.timeout))
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise OperationTimeout("steer_turn (waiting for the interrupted turn)", _t(a.timeout),
                                               thread_id=a.thread_id)
                    event = sub.get(timeout=left)
                    if event is not None and event.type == "turn.completed" and event.turn_id == running:
                        break
        return self.send_turn(SendTurnBody(thread_id=a.thread_id, text=a.text, attachments=a.attachments,
                                           timeout=max(0.1, deadline - time.monotonic())))

    def is_ephemeral(self, thread_id: str) -> bool:
        """The thread is a ``generate_text`` session under way (it answers its own requests)."""
        return thread_id in self._ephemeral

    def respond_to_request(self, a: RespondToRequestBody, *, decided_by: Decider = "person") -> None:
        """Answer an open request; ``decided_by`` (a ``person`` on ``a.surface``, or the ``host``'s
        hook) goes into its ``request.resolved``."""
        adapter = self._live_adapter(a.thread_id)
        adapter.respond_to_request(a.thread_id, a.request_id, a.decision, decided_by=decided_by, surface=a.surface,
                                   timeout=_t(a.timeout))
        self._last_used[a.thread_id] = time.monotonic()

    def respond_to_user_input(self, a: RespondToUserInputBody) -> None:
        adapter = self._live_adapter(a.thread_id)
        if not adapter.capabilities().approvals.user_input:
            raise CapabilityUnsupportedError("approvals.user_input", "structured user input", thread_id=a.thread_id)
        adapter.respond_to_user_input(a.thread_id, a.request_id, dict(a.answers), timeout=_t(a.timeout))

    def rollback_thread(self, a: RollbackThreadBody) -> ThreadSnapshot:
        """Natively where the agent can (``threads.rollback``); a worktree thread whose agent
        cannot is rewound by the runtime (:meth:`_rewind`). Either way the dropped turns are
        logged (``thread.rolled-back``) and a worktree's files follow."""
        adapter = self._live_adapter(a.thread_id)
        if not adapter.capabilities().threads.rollback:
            if self._files.get(a.thread_id) is None:
                raise CapabilityUnsupportedError("threads.rollback", "rolling back turns", thread_id=a.thread_id)
            return self._rewind(a)
        before = self._turn_ids(a.thread_id, a.timeout)
        snapshot = adapter.rollback_thread(a.thread_id, a.num_turns, timeout=_t(a.timeout))
        return self._files_rolled_back(snapshot, before, a.timeout)

    def fork_thread(self, a: ForkThreadBody) -> Session:
        """A native copy where the source's instance can make one (``sessions.fork``, and
        ``fork_kind == "from_turn"`` for ``at_turn``; the source resumed on demand unless the host
        stopped it), else a hand-off (:meth:`_hand_over`). The
        copy is bound like any thread; its hand-off file holds the source's servers, preamble and
        reminder (and a hand-off's transcript until a turn carried it)."""
        source = self._store.get(a.thread_id)
        if source is None:
            raise SessionNotFoundError(a.thread_id)
        if self._store.get(a.new_thread_id) is not None or a.new_thread_id in self._live:
            raise ValidationError("fork_thread", f"thread {a.new_thread_id!r} is already bound; pick a new id",
                                  thread_id=a.new_thread_id)
        target = a.instance or source.instance_id
        adapter: ProviderAdapter | None = None
        native = False
        if target == source.instance_id and (a.thread_id in self._live or source.status in RESUMABLE):
            # The source live first: an ACP agent's capabilities are negotiated by its process.
            # A source the host stopped is not resumed for this: it is handed over.
            adapter = self._session_adapter(a.thread_id, timeout=a.timeout)
            caps = adapter.capabilities().sessions
            native = caps.fork and (a.at_turn is None or caps.fork_kind == "from_turn")
        else:
            self._instances.adapter(target)  # an unknown instance fails here, before anything starts
        had = self._instances.thread_handoff(source.instance_id, a.thread_id)
        start = StartSessionBody(
            thread_id=a.new_thread_id, instance=target, cwd=source.cwd,
            runtime_mode=source.runtime_mode,  # type: ignore[arg-type]
            interaction_mode=source.interaction_mode,  # type: ignore[arg-type]
            model=source.model if target == source.instance_id else None,
            mcp_servers=had.mcp_servers if had is not None and target == source.instance_id else (),
            preamble=had.preamble if had is not None else None,
            preamble_reminder=had.preamble_reminder if had is not None else None,
            approval_rules=had.approval_rules if had is not None else None,
            timeout=a.timeout,
        )
        self._fork_files(a)
        if not native or adapter is None:
            return self._hand_over(a, source, start)
        cursor = adapter.fork_native(a.thread_id, at_turn=a.at_turn, timeout=_t(a.timeout))
        return self.start_session(msgspec.structs.replace(start, resume="require"), fork_cursor=cursor)

    def _hand_over(self, a: ForkThreadBody, source: Binding, start: StartSessionBody) -> Session:
        """Start the new thread fresh with the source's transcript (turns 1..``at_turn``) as its
        first-turn preamble, bounded by the target's ``preamble_max_chars``
        (:func:`paddock._services._transcript.handoff_preamble`). The transcript stays persisted until a
        turn carried it (:meth:`_transcript_delivered`), so a copy made by one process and
        first used by another still hands it over, once."""
        snapshot = self.read_thread(ReadThreadBody(thread_id=a.thread_id, timeout=a.timeout))
        if a.at_turn is not None and a.at_turn > len(snapshot.turns):
            raise ValidationError("fork_thread", f"at_turn {a.at_turn} is not a turn of the thread (it has "
                                  f"{len(snapshot.turns)})", thread_id=a.thread_id)
        config = self._instances.handoff(start.instance)[0]
        where = f"thread {a.thread_id!r} on instance {source.instance_id!r} ({source.driver})"
        transcript = handoff_preamble(snapshot, source=where, limit=config.preamble_max_chars, at_turn=a.at_turn,
                                      grounding=start.preamble)
        return self.start_session(msgspec.structs.replace(start, resume="never"), transcript=transcript)

    def _transcript_delivered(self, thread_id: str) -> None:
        """A turn carried the thread's hand-off transcript: forget it, on disk too, so no later
        incarnation repeats it; the live session counts as handed what it would be without it."""
        binding = self._store.get(thread_id)
        after = self._after_transcript.pop(thread_id, None)
        if binding is None or after is None:
            return
        with self._thread_lock(thread_id):
            if thread_id in self._handed:
                self._handed[thread_id] = after
            files = self._instances.handoff(binding.instance_id)[1]
            saved = files.load(thread_id)
            if isinstance(saved, ThreadHandoff):
                try:
                    files.save(thread_id, msgspec.structs.replace(saved, transcript=None))
                except OSError as exc:
                    raise PersistenceError("save the thread's hand-off", f"{files.path(thread_id)}: "
                                           f"{exc.strerror or exc}", thread_id=thread_id) from None

    def compact_thread(self, a: CompactThreadBody) -> TurnStartResult | None:
        """Refused before any process is touched where the thread's instance cannot compact;
        else the thread's session (resumed on demand) compacts natively."""
        binding = self._store.get(a.thread_id)
        instance_id = self._live.get(a.thread_id) or (binding.instance_id if binding is not None else None)
        if instance_id is None:
            raise SessionNotFoundError(a.thread_id)
        if not self._instances.adapter(instance_id).capabilities().context.compaction:
            raise CapabilityUnsupportedError("context.compaction", f"instance {instance_id!r} cannot compact a thread",
                                             thread_id=a.thread_id)
        adapter = self._session_adapter(a.thread_id, timeout=a.timeout)
        result = adapter.compact_thread(a.thread_id, timeout=_t(a.timeout))
        self._last_used[a.thread_id] = time.monotonic()
        return result

    def stop_session(self, a: StopSessionBody) -> None:
        if self._turn_gate is not None:
            self._turn_gate.end(a.thread_id, None, "its session was stopped while it was queued")
        with self._thread_lock(a.thread_id):
            if a.thread_id not in self._live:
                if self._store.get(a.thread_id) is None:
                    raise SessionNotFoundError(a.thread_id)
            else:
                self._stop_live(a.thread_id, timeout=a.timeout)
            self._store.update(a.thread_id, status="stopped")

    def stop_all(self, a: StopAllBody) -> None:
        for thread_id in list(self._live):
            try:
                self.stop_session(StopSessionBody(thread_id=thread_id, timeout=a.timeout))
            except SessionNotFoundError:
                pass

    def list_sessions(self) -> list[Session]:
        ephemeral = self._ephemeral
        return [self._files.label(s) for adapter in self._instances.adapters() for s in adapter.list_sessions()
                if s.thread_id not in ephemeral]

    def generate_text(self, a: GenerateTextBody) -> str:
        """One-shot text in an ephemeral session, hidden from :meth:`list_sessions` while it
        runs and gone when this returns (``paddock._services._generate``)."""
        return generate_text(self._instances, self._hub, self._ephemeral, a)

    def has_session(self, thread_id: str) -> bool:
        return self._live_on(thread_id) is not None

    def list_threads(self) -> list[Binding]:
        return self._store.list()

    def read_thread(self, a: ReadThreadBody) -> ThreadSnapshot:
        if self._store.get(a.thread_id) is None and a.thread_id not in self._live:
            raise SessionNotFoundError(a.thread_id)
        last = self._hub.flush(timeout=_t(a.timeout))
        if self._hub.log_path is None:
            raise CapabilityUnsupportedError("event_log", "reading a thread needs the event log ([runtime] event_log = true)")
        reader = LogReader(self._hub.log_path, thread_id=a.thread_id)
        try:
            rows = reader.read(0, last, 10_000_000)
        finally:
            reader.close()
        return fold_thread(a.thread_id, (decode_event(body) for _, body in rows))

    # closing ------------------------------------------------------------------------------------

    def halt(self) -> dict[str, str]:
        """Stop the reaper and the tracker from acting; returns the live map at that moment."""
        self._stop.set()
        return dict(self._live)

    def mark_closed(self, live: dict[str, str]) -> None:
        """After the adapters closed: every thread live at :meth:`halt` becomes ``closed``."""
        try:
            self._store.set_status(live, "closed")  # one commit for every live thread
        except PaddockError:
            pass
        self._live.clear()

    def stop_tracking(self) -> None:
        self._tracker.close()
        self._files.close(timeout=1.0)  # checkpoints under way publish their diff before the hub closes

    def close(self, timeout: float = 2.0) -> None:
        """Join the tracker and the reaper, then close the binding store, all within
        ``timeout`` seconds (the store's database is closed then whatever its writer does)."""
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
        self._store.close(timeout=max(0.0, deadline - time.monotonic()))

    # live sessions ------------------------------------------------------------------------------

    def _thread_lock(self, thread_id: str) -> threading.Lock:
        with self._lock:
            return self._thread_locks.setdefault(thread_id, threading.Lock())

    def _live_adapter(self, thread_id: str) -> ProviderAdapter:
        """The adapter of the thread's live session; raises :class:`SessionNotFoundError` for a
        thread never bound and :class:`SessionClosedError` for one not live."""
        instance_id = self._live.get(thread_id)
        if instance_id is None:
            binding = self._store.get(thread_id)
            if binding is None:
                raise SessionNotFoundError(thread_id)
            raise SessionClosedError(thread_id, f"its session is {binding.status}")
        return self._instances.adapter(instance_id)

    def _live_on(self, thread_id: str) -> ProviderAdapter | None:
        """The adapter holding the thread's live session, or ``None`` when it is not live."""
        instance_id = self._live.get(thread_id)
        adapter = self._instances.created(instance_id) if instance_id is not None else None
        return adapter if adapter is not None and adapter.has_session(thread_id) else None

    def _session_adapter(self, thread_id: str, *, timeout: float | None) -> ProviderAdapter:
        """The adapter of a live session, resuming a reaped/closed/exited one on demand."""
        adapter = self._live_on(thread_id)
        if adapter is not None:
            return adapter
        binding = self._resumable(thread_id)
        self.start_session(StartSessionBody(
            thread_id=thread_id, instance=binding.instance_id, cwd=binding.cwd,
            runtime_mode=binding.runtime_mode,  # type: ignore[arg-type]
            interaction_mode=binding.interaction_mode,  # type: ignore[arg-type]
            model=binding.model, timeout=timeout,
        ))
        return self._instances.adapter(binding.instance_id)

    def _resumable(self, thread_id: str) -> Binding:
        """The binding of a thread that resumes on its next turn; raises :class:`SessionNotFoundError`
        or :class:`SessionClosedError` (stopped on purpose, or failed)."""
        binding = self._store.get(thread_id)
        if binding is None:
            raise SessionNotFoundError(thread_id)
        if binding.status not in RESUMABLE:
            raise SessionClosedError(thread_id, f"it was {binding.status}; call start_session() to resume it")
        return binding

    def _stop_live(self, thread_id: str, *, timeout: float | None) -> None:
        instance_id = self._live.pop(thread_id, None)
        self._handed.pop(thread_id, None)
        self._last_used.pop(thread_id, None)
        adapter = self._instances.created(instance_id) if instance_id is not None else None
        if adapter is not None and adapter.has_session(thread_id):
            live = _session_of(adapter, thread_id)
            adapter.stop_session(thread_id, timeout=_t(timeout))
            if live is not None and live.resume_cursor is not None:
                # Keep its newest cursor: it carries what its last turn changed (the usage so far).
                self._store.update(thread_id, resume_cursor=live.resume_cursor)
        if self._session_gate is not None:
            self._session_gate.freed()

    def _track(self) -> None:
        """Tracker thread: keeps binding statuses in step with the event stream."""
        while not self._stop.is_set():
            try:
                event = self._tracker.get(timeout=0.5)
            except PaddockError:
                return
            if event is None:
                if self._tracker.ended:  # the hub stopped: nothing more will come
                    if not self._stop.is_set():
                        self.hub_failed = self._hub.failure or "the event hub stopped (its log could not be written)"
                    return
                continue
            try:
                if event.type == "turn.completed":
                    if self._turn_gate is not None and event.turn_id in self._turn_gate.turns:
                        self._turn_gate.release(event.turn_id)
                    if self._session_gate is not None:
                        self._session_gate.freed()  # its session is idle now: evictable
                    self._files.turn_ended(event)  # queued: the checkpoint is taken off this thread
                    if event.thread_id in self._live:
                        self._last_used[event.thread_id] = time.monotonic()
                    # Only a running turn becomes ready: a stop racing the turn's end wins.
                    self._store.update(event.thread_id, only_if={"running"}, status="ready", last_error=event.error)
                elif event.type == "session.exited":
                    if event.reason not in ("stopped", "closed") and event.thread_id in self._live:
                        self._store.update(event.thread_id, only_if={"ready", "running"}, status="exited",
                                          last_error=event.reason)
            except PaddockError:
                pass

    def _reap_idle(self) -> None:
        """Reaper thread: stops sessions idle for longer than ``idle_timeout``."""
        idle = self._settings.idle_timeout
        period = max(0.05, min(idle / 4, 30.0))
        while not self._stop.wait(period):
            now = time.monotonic()
            for thread_id, instance_id in list(self._live.items()):
                if now - self._last_used.get(thread_id, now) < idle:
                    continue
                adapter = self._instances.created(instance_id)
                if adapter is None:
                    continue
                session = _session_of(adapter, thread_id)
                if session is not None and session.active_turn_id:
                    continue
                if self._turn_gate is not None and self._turn_gate.has_queued(thread_id):
                    continue
                self._try_locked(thread_id, lambda: self._reap(thread_id, instance_id))

    def _reap(self, thread_id: str, instance_id: str) -> None:
        if self._live.get(thread_id) == instance_id:
            self._stop_live(thread_id, timeout=10.0)
            self._store.update(thread_id, status="idle")

    def _try_locked(self, thread_id: str, fn: Callable[[], None]) -> None:
        lock = self._thread_lock(thread_id)
        if not lock.acquire(timeout=0.1):
            return
        try:
            fn()
        except PaddockError:
            pass
        finally:
            lock.release()

    # workspaces (paddock._workspaces) ------------------------------------------------------------

    def _turn_ids(self, thread_id: str, timeout: float | None) -> tuple[str, ...]:
        """The thread's turn ids as the log has them, in order (none without the event log)."""
        if self._hub.log_path is None:
            return ()
        return tuple(t.turn_id for t in self.read_thread(ReadThreadBody(thread_id=thread_id, timeout=timeout)).turns)

    def _files_rolled_back(self, snapshot: ThreadSnapshot, before: tuple[str, ...],
                           timeout: float | None) -> ThreadSnapshot:
        """After a rollback (``before``: the turn ids the log had): log the dropped turns, and
        restore a worktree's files to the last kept turn's checkpoint."""
        kept = [t.turn_id for t in snapshot.turns]
        dropped = tuple(t for t in before if t not in set(kept))
        binding = self._store.get(snapshot.thread_id)
        if dropped and binding is not None:
            self._hub.emitter(binding.driver, binding.instance_id, snapshot.thread_id).emit([ThreadRolledBack(
                driver=binding.driver, instance_id=binding.instance_id, thread_id=snapshot.thread_id,
                created_at=time.time(), turn_ids=dropped)])
        if self._files.get(snapshot.thread_id) is None:
            return snapshot
        restored = self._files.rolled_back(snapshot.thread_id, kept, last_turn=before[-1] if before else None,
                                           timeout=_t(timeout))
        return msgspec.structs.replace(snapshot, files_restored_to=restored)

    def _rewind(self, a: RollbackThreadBody) -> ThreadSnapshot:
        """Roll back a worktree thread whose agent cannot: its session starts again, fresh, with
        the transcript of the turns kept as its first turn's preamble (as a hand-off does), and
        its files go back to the last kept turn's checkpoint."""
        snapshot = self.read_thread(ReadThreadBody(thread_id=a.thread_id, timeout=a.timeout))
        if any(t.state == "running" for t in snapshot.turns):
            raise ValidationError("rollback_thread", "a turn is running; wait for it or interrupt it",
                                  thread_id=a.thread_id)
        if a.num_turns > len(snapshot.turns):
            raise ValidationError("rollback_thread", f"the thread has {len(snapshot.turns)} turns, cannot drop "
                                  f"{a.num_turns}", thread_id=a.thread_id)
        binding = self._store.get(a.thread_id)
        if binding is None:
            raise SessionNotFoundError(a.thread_id)
        kept = msgspec.structs.replace(snapshot, turns=snapshot.turns[: len(snapshot.turns) - a.num_turns])
        config = self._instances.handoff(binding.instance_id)[0]
        transcript = handoff_preamble(kept, source=f"thread {a.thread_id!r} (its last {a.num_turns} turn(s) were "
                                      "rolled back)", limit=config.preamble_max_chars) if kept.turns else None
        with self._thread_lock(a.thread_id):
            self._stop_live(a.thread_id, timeout=a.timeout)
        self.start_session(StartSessionBody(
            thread_id=a.thread_id, instance=binding.instance_id, cwd=binding.cwd,
            runtime_mode=binding.runtime_mode,  # type: ignore[arg-type]
            interaction_mode=binding.interaction_mode,  # type: ignore[arg-type]
            model=binding.model, resume="never", timeout=a.timeout,
        ), transcript=transcript)
        return self._files_rolled_back(kept, tuple(t.turn_id for t in snapshot.turns), a.timeout)

    def _fork_files(self, a: ForkThreadBody) -> None:
        """A fork of a worktree thread gets its own worktree, from turn ``at_turn``'s checkpoint."""
        if self._files.get(a.thread_id) is None:
            return
        turns = self._turn_ids(a.thread_id, a.timeout)
        if a.at_turn is not None and a.at_turn > len(turns):
            raise ValidationError("fork_thread", f"at_turn {a.at_turn} is not a turn of the thread (it has "
                                  f"{len(turns)})", thread_id=a.thread_id)
        self._files.fork(a.thread_id, a.new_thread_id, turns[a.at_turn - 1] if a.at_turn else None,
                         last_turn=turns[-1] if turns else None, timeout=_t(a.timeout))

    def restore_files(self, a: RestoreFilesBody) -> FilesRestored:
        """Files only: the conversation stays. Refused while a turn of the thread runs."""
        if self._store.get(a.thread_id) is None:
            raise SessionNotFoundError(a.thread_id)
        with self._thread_lock(a.thread_id):
            live = self._live_on(a.thread_id)
            session = _session_of(live, a.thread_id) if live is not None else None
            if session is not None and session.active_turn_id:
                raise ValidationError("restore_files", "a turn is running; wait for it or interrupt it",
                                      thread_id=a.thread_id)
            turns = self._turn_ids(a.thread_id, a.timeout)
            return self._files.restore(a.thread_id, a.turn_id, last_turn=turns[-1] if turns else None,
                                       timeout=_t(a.timeout))

    def diff(self, a: DiffBody) -> str:
        if self._store.get(a.thread_id) is None:
            raise SessionNotFoundError(a.thread_id)
        turns = self._turn_ids(a.thread_id, a.timeout)
        return self._files.diff(a.thread_id, a.from_turn, a.to_turn, last_turn=turns[-1] if turns else None,
                                timeout=_t(a.timeout))

    def delete_thread(self, a: DeleteThreadBody) -> None:
        """Stop the thread, then remove its binding, its worktree, its checkpoints and (unless
        ``keep_branch``) its branch. The worktree's record says ``deleting`` before the binding
        goes, so a crash in between is finished by the next open's sweep."""
        if self._store.get(a.thread_id) is None and a.thread_id not in self._live and self._files.get(a.thread_id) is None:
            raise SessionNotFoundError(a.thread_id)
        if self._turn_gate is not None:
            self._turn_gate.end(a.thread_id, None, "its thread was deleted while it was queued")
        with self._thread_lock(a.thread_id):
            if a.thread_id in self._live:
                self._stop_live(a.thread_id, timeout=a.timeout)
            self._files.delete(a.thread_id, keep_branch=a.keep_branch, timeout=_t(a.timeout),
                               unbind=lambda: self._store.delete(a.thread_id))


def _session_of(adapter: ProviderAdapter, thread_id: str) -> Session | None:
    return next((s for s in adapter.list_sessions() if s.thread_id == thread_id), None)


def _t(timeout: float | None, default: float = DEFAULT_TIMEOUT) -> float:
    return default if timeout is None else timeout


def _check_requirements(caps: Capabilities, a: StartSessionBody) -> None:
    """Refuse, before any process starts, a mode the instance cannot honour and a required
    capability it lacks (``CapabilityUnsupportedError`` naming it); an unknown path is a
    ``ValidationError``. ``caps`` are the adapter's current ones: for ACP, the cached
    negotiation of the instance's agent, else the flavor's declared flags."""
    for path in a.require:
        try:
            capability_on(caps, path)
        except KeyError:
            raise ValidationError("start_session", f"require: unknown capability path {path!r}",
                                  thread_id=a.thread_id) from None
    check_runtime_mode(caps, a.runtime_mode)
    require_capabilities(caps, a.require)
