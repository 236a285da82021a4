"""CodexSessionActor: one Codex thread (one host thread) on the instance's shared app-server.

Thread: every method runs inside the actor, on a worker of the shared dispatcher (one message at
a time; see ``paddock.actors.DispatchActor``); a request it waits for waits inside
``blocking()`` (:meth:`~._server.ServerLink.call`), so the pool runs other sessions meanwhile.
The router (the connection's stdout reader thread) only ``tell``\\ s it
:class:`~._server.Incoming` batches of decoded notifications and server requests of its thread.
Host operations arrive as ``ask`` messages from the adapter.

Lifecycle of the native thread:
- ``Open``: ``thread/start``, or ``thread/resume`` from a resume cursor; a failed resume starts
  a new thread and says so (``session.started(resume_failed=True)`` + ``runtime.warning``
  ``codex.resume_failed``);
- after the app-server restarted (new link generation), the next turn first resumes the thread
  on the new process (``thread/resume``). A thread Codex never persisted (no turn yet) cannot
  be resumed: the driver starts a new thread and says so (``runtime.warning``
  ``codex.resume_unpersisted``);
- ``on_shutdown`` after the process died: the running turn fails, open requests expire and
  ``session.exited(recoverable=True)`` is emitted; on a normal stop the running turn is
  interrupted, open requests are cancelled and ``session.exited(reason="stopped")``.
"""

from __future__ import annotations

import base64
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from paddock.actors import SessionRecord, SharedSessionActor
from paddock.contract import (
    ImageAttachment,
    ConfigWarning,
    JsonObject,
    JsonValue,
    DeprecationNotice,
    EventBase,
    PaddockError,
    ProviderRefs,
    RequestError,
    RequestOpened,
    RequestSubject,
    ResumeCursor,
    RuntimeWarningEvent,
    SendTurnInput,
    Session,
    SessionConfigured,
    SessionStarted,
    ThreadSnapshot,
    TokenUsage,
    TurnStartResult,
    TurnState,
    UserInputOption,
    UserInputQuestion,
    UserInputRequested,
    UserInputResolved,
    ValidationError,
)
from paddock.drivers._subjects import codex_changes, command_subject, files_subject, tool_subject
from paddock.actors import blocking
from paddock.drivers._mcp_native import McpReadback
from paddock.supervisors import ChildContext

from . import _wire as w
from ._mcp import SSE_REFUSED, mcp_config, report_list, report_startup
from ._approvals import NativeRequest, answer_for, cancel_answer, request_kind
from ._server import Incoming, Note, Req, Router, ServerLink
from ._settings import CodexState, SessionSettings, cursor_for, thread_id_of
from ._translate import DELTA_STREAMS, TRANSLATED, TURN_STATES, Translator, turn_error_text

__all__ = ["CodexSessionActor"]

log = logging.getLogger(__name__)

_thread_result = msgspec.json.Decoder(w.ThreadResult)
_turn_result = msgspec.json.Decoder(w.TurnResult)
_command = msgspec.json.Decoder(w.CommandApprovalParams)
_file_change = msgspec.json.Decoder(w.FileChangeApprovalParams)
_permissions = msgspec.json.Decoder(w.PermissionsApprovalParams)
_legacy = msgspec.json.Decoder(w.LegacyApprovalParams)
_user_input = msgspec.json.Decoder(w.UserInputParams)
_mcp_list = msgspec.json.Decoder(w.McpServerStatusList)
_NO_TURN = "no turn is running"
_HOLD_LIMIT = 4096  # events held across queued Incoming batches before an emit regardless


def user_input(inp: SendTurnInput) -> list[w.TextInput | w.LocalImageInput | w.ImageInput]:
    """``turn/start`` / ``turn/steer`` ``input``: the text, then each image as ``localImage``
    (its path) or an ``image`` with a ``data:`` URL (bytes without a path). Only images reach here
    (``turns.attachments``)."""
    items: list[w.TextInput | w.LocalImageInput | w.ImageInput] = [w.TextInput(text=inp.text)]
    for a in inp.attachments:
        assert isinstance(a, ImageAttachment) and a.data is not None  # resolved and gated by the runtime
        items.append(w.LocalImageInput(path=a.path) if a.path is not None
                     else w.ImageInput(url=f"data:{a.mime_type};base64,{base64.b64encode(a.data).decode('ascii')}"))
    return items


class CodexSessionActor(SharedSessionActor[NativeRequest, CodexState, ServerLink]):
    """One Codex thread. Built by the session supervisor's child spec; see the module docstring.
    ``get_link()`` returns the current app-server link (``None`` while it restarts)."""

    process_noun = "the app-server"
    restart_reason = "the app-server restarted; the thread resumes on its next turn"

    def __init__(self, record: SessionRecord[CodexState], settings: SessionSettings,
                 get_link: Callable[[], ServerLink | None], *, context: ChildContext | None = None) -> None:
        super().__init__(record, get_link, context=context)
        self.settings = settings
        self.start_input = record.input
        self.tr = Translator(self.identity)
        self.tr.native_thread_id = record.state.native_id
        self.tr.usage = record.state.usage
        self._inputs: dict[str, tuple[int | str, str | None]] = {}  # user-input request id -> (rpc id, turn)
        self._held: list[EventBase] = []  # translated, not yet emitted (see _handle_receive)
        self.mcp = McpReadback(self.identity, self.start_input.mcp_servers)
        self.mcp_servers, self.mcp_refused = mcp_config(self.start_input.mcp_servers)
        self._turn_policy: str | None = None  # approvalPolicy every turn/start restates (see _resume)

    # lifecycle (the shared-process base's hooks) -------------------------------------------------

    @property
    def native_id(self) -> str | None:
        return self.tr.native_thread_id

    def end_session(self, deadline: float, *, failed: bool = False) -> None:
        self._flush()
        super().end_session(deadline, failed=failed)

    def on_lost(self, events: list[EventBase]) -> None:
        self._resolve_inputs(events, "expired", answer=False)

    def on_stopping(self, events: list[EventBase], link: ServerLink | None, in_turn: bool) -> None:
        self._resolve_inputs(events, "cancelled", answer=True)
        if in_turn:
            self._send_interrupt()
        if self.mcp and link is not None and link.exit_info is None and self.tr.native_thread_id:
            # Observed (0.171.0): a thread's MCP servers live while the thread is loaded, also
            # after its session stopped; thread/unsubscribe of its only subscriber unloads it
            # (thread/closed, with the delay 0 set at start) and stops them. Not awaited.
            link.conn.request("thread/unsubscribe", {"threadId": self.tr.native_thread_id},
                              timeout=self.settings.request_timeout)

    def persist(self) -> None:
        super().persist()
        self.record.state.usage = self.tr.usage

    # message dispatch ----------------------------------------------------------------------------

    def _handle_receive(self, message: object) -> object:
        # The app-server writes one line per delta, so at its ~10k lines/s each read batch holds
        # a few lines and every hop downstream (hub, subscribers) would run per tiny batch.
        # Consecutive Incoming batches already waiting in this actor's inbox are translated
        # into one emit: the events are held only while another message is queued behind them,
        # and any other message (a host operation, a stop) first flushes them, so order and
        # latency are unchanged when the stream is slow.
        if isinstance(message, Incoming):
            self._incoming(message.items)
            if len(self._held) >= _HOLD_LIMIT or self.actor_inbox.empty():
                self._flush()
            return None
        self._flush()
        return super()._handle_receive(message)

    def _flush(self) -> None:
        if self._held:
            held, self._held = self._held, []
            self.emit(held)

    def on_receive(self, message: object) -> object:
        if isinstance(message, Incoming):
            self._incoming(message.items)
            return None
        return super().on_receive(message)

    # helpers -------------------------------------------------------------------------------------

    def _call(self, link: ServerLink, method: str, params: Mapping[str, object]) -> msgspec.Raw:
        return link.call(method, params, timeout=self.settings.request_timeout, thread_id=self.thread_id)

    def _cursor(self) -> ResumeCursor | None:
        tid = self.tr.native_thread_id
        return cursor_for(tid) if tid else None

    def _thread_params(self, model: str | None) -> dict[str, object]:
        mode = self.start_input.runtime_mode
        params: dict[str, object] = {
            "cwd": self.start_input.cwd,
            "approvalPolicy": self.settings.approval_policies[mode],
            "sandbox": self.settings.sandbox_modes[mode],
        }
        if model:
            params["model"] = model
        if self.mcp_servers:
            # thread_unload_delay_secs 0: once unsubscribed (the stop) and idle, the thread
            # unloads at once and its MCP servers stop (else they live as long as the app-server).
            params["config"] = {"mcp_servers": self.mcp_servers, "thread_unload_delay_secs": 0}
        return params

    # open and resume -----------------------------------------------------------------------------

    def open_session(self) -> Session:
        """Hook (``Open``): start or resume the native thread (blocking on the app-server)."""
        if self.record.closed:
            raise self.closed_error()
        link = self.current_link()
        inp = self.start_input
        events: list[EventBase] = []
        resumed = resume_failed = False
        detail = None
        result: w.ThreadResult | None = None
        if inp.resume_cursor is not None:
            try:
                result = self._resume(link, thread_id_of(inp.resume_cursor))
                resumed = True
            except PaddockError as exc:
                resume_failed = True
                detail = f"resume failed, started a new thread: {exc}"
                events.append(RuntimeWarningEvent(**self.identity, code="codex.resume_failed", message=detail))
        if result is None:
            result = self._start_thread(link)
        self._bind(link, result)
        events.append(SessionStarted(
            **self.identity, cwd=inp.cwd, model=result.model or inp.model, runtime_mode=inp.runtime_mode,
            interaction_mode=inp.interaction_mode, resumed=resumed, resume_failed=resume_failed, detail=detail,
            provider_refs=ProviderRefs(thread=self.tr.native_thread_id),
        ))
        events += self._configured(link, result)
        if self.mcp:
            events += self._mcp_settle(link)
        self.emit(events)
        return self.publish(status="ready", resume_cursor=self._cursor(), resumed=resumed,
                            model=result.model or inp.model)

    def _start_thread(self, link: ServerLink) -> w.ThreadResult:
        raw = self._call(link, "thread/start", self._thread_params(self.start_input.model or self.settings.model))
        result = _thread_result.decode(raw)
        self.record.state.persisted_turns = 0
        return result

    def _resume(self, link: ServerLink, native_id: str) -> w.ThreadResult:
        params = {"threadId": native_id, **self._thread_params(self.start_input.model or self.settings.model)}
        result = _thread_result.decode(self._call(link, "thread/resume", params))
        # thread/resume of a thread this app-server still holds keeps its old approvalPolicy
        # (seen after a restart in another runtime mode: commands then ran unasked): each turn
        # restates the policy when the answer shows a different one.
        wanted = self.settings.approval_policies[self.start_input.runtime_mode]
        self._turn_policy = wanted if result.approvalPolicy != wanted else None
        self.record.state.persisted_turns = len(result.thread.turns)
        self.record.state.native_turns = [t.id for t in result.thread.turns]
        return result

    def _bind(self, link: ServerLink, result: w.ThreadResult) -> None:
        old = self.tr.native_thread_id
        if old and old != result.thread.id and self._link is not None:
            self._link.router.unregister(old, self.actor_ref)
        self.tr.native_thread_id = result.thread.id
        link.router.register(result.thread.id, self.actor_ref)
        self._link = link
        self.record.state.generation = link.generation
        self.persist()

    def _configured(self, link: ServerLink, result: w.ThreadResult) -> list[EventBase]:
        events: list[EventBase] = [SessionConfigured(**self.identity, config={
            "model": result.model, "model_provider": result.modelProvider,
            "approval_policy": result.approvalPolicy, "sandbox": result.sandbox,
            "rollout_path": result.thread.path,
        })]
        router = link.router
        notes = list(router.instance_notes) if isinstance(router, Router) else []
        for method, text in notes:
            if not text:
                continue
            if method == "configWarning":
                events.append(ConfigWarning(**self.identity, message=text))
            else:
                events.append(DeprecationNotice(**self.identity, message=text))
        return events

    def _mcp_settle(self, link: ServerLink) -> list[EventBase]:
        """The thread's MCP servers as the app-server reports them (``mcpServerStatus/list``),
        asked again every 0.1 s while one is still starting, at most ``request_timeout``
        seconds: the session is ready once each connected, failed or was not loaded."""
        events: list[EventBase] = []
        for name in self.mcp_refused:
            events += self.mcp.report(name, "failed", detail=SSE_REFUSED)
        deadline = time.monotonic() + self.settings.request_timeout
        pause = threading.Event()  # never set: a bounded pause between two asks
        while True:
            raw = self._call(link, "mcpServerStatus/list", {"threadId": self.tr.native_thread_id,
                                                             "detail": "toolsAndAuthOnly"})
            found, starting = report_list(self.mcp, _mcp_list.decode(raw).data, None)
            events += found
            if not starting or time.monotonic() >= deadline:
                return events
            with blocking():
                pause.wait(min(0.1, max(0.0, deadline - time.monotonic())))

    def reattach(self, link: ServerLink) -> list[EventBase]:
        """Hook: the app-server restarted; resume the thread on it (``thread/resume``), or start
        a new thread when Codex never persisted this one (no completed turn) or the resume
        fails, and say so."""
        state = self.record.state
        events: list[EventBase] = []
        native = self.tr.native_thread_id
        detail: str
        result: w.ThreadResult | None = None
        if native and state.persisted_turns > 0:
            try:
                result = self._resume(link, native)
            except PaddockError as exc:
                detail = f"could not resume thread {native} after the app-server restarted ({exc}); started a new thread"
                events.append(RuntimeWarningEvent(**self.identity, code="codex.resume_failed", message=detail))
        else:
            detail = (f"thread {native} had no completed turn, so Codex never persisted it and it cannot be resumed "
                      "after the app-server restarted; started a new thread")
            events.append(RuntimeWarningEvent(**self.identity, code="codex.resume_unpersisted", message=detail))
        resumed = result is not None
        if result is None:
            result = self._start_thread(link)
            state.native_turns = []
        self._bind(link, result)
        if self.mcp:
            self.mcp.restarted()
            events += self._mcp_settle(link)
        events.append(SessionStarted(
            **self.identity, cwd=self.start_input.cwd, model=result.model, runtime_mode=self.start_input.runtime_mode,
            interaction_mode=self.start_input.interaction_mode, resumed=resumed, resume_failed=not resumed,
            detail="resumed after the app-server restarted" if resumed else detail,
            provider_refs=ProviderRefs(thread=self.tr.native_thread_id),
        ))
        self.publish(status="ready", last_error=None, resume_cursor=self._cursor())
        return events

    # turns ---------------------------------------------------------------------------------------

    def start_turn(self, inp: SendTurnInput, turn_id: str) -> TurnStartResult:
        """Hook (``SendTurn``): resume on a restarted app-server, then ``turn/start``. The turn's
        id is Codex's own unless the host chose one (``SendTurnInput.turn_id``)."""
        link, events = self.ensure_native()
        params: dict[str, object] = {
            "threadId": self.tr.native_thread_id,
            "input": user_input(inp),
        }
        if self._turn_policy is not None:
            params["approvalPolicy"] = self._turn_policy
        if inp.model:
            params["model"] = inp.model
        try:
            result = _turn_result.decode(self._call(link, "turn/start", params))
        except PaddockError:
            self.emit(events)
            raise
        native_turn = result.turn.id
        ours = inp.turn_id or native_turn
        events.append(self.turn.start(
            ours, input_text=inp.text, model=inp.model or self.record.session.model,
            interaction_mode=inp.interaction_mode or self.start_input.interaction_mode,
            provider_refs=ProviderRefs(thread=self.tr.native_thread_id, turn=native_turn),
        ))
        self.tr.begin(ours, native_turn)
        self.emit(events)
        cursor = self._cursor()
        self.publish(status="running", active_turn_id=ours, resume_cursor=cursor)
        return TurnStartResult(thread_id=self.thread_id, turn_id=ours, resume_cursor=cursor)

    def steer(self, inp: SendTurnInput) -> TurnStartResult:
        if self.record.closed:
            raise self.closed_error()
        turn_id = self.turn.turn_id
        if turn_id is None or self.tr.native_turn_id is None or self._link is None:
            raise ValidationError("steer_turn", f"{_NO_TURN} on this thread; send a turn instead", **self.where())
        self._call(self._link, "turn/steer", {
            "threadId": self.tr.native_thread_id, "expectedTurnId": self.tr.native_turn_id,
            "input": user_input(inp),
        })
        return TurnStartResult(thread_id=self.thread_id, turn_id=turn_id, resume_cursor=self._cursor())

    def cancel_turn(self, events: list[EventBase]) -> None:
        """Hook (``Interrupt``): ``turn/interrupt``; the turn ends with Codex's ``turn/completed
        (interrupted)``, or after ``interrupt_timeout`` by the driver."""
        self.tr.interrupted = True
        self._resolve_inputs(events, "cancelled", answer=True)
        self._send_interrupt()
        self.schedule_turn_timer("interrupt", self.settings.interrupt_timeout)

    def _send_interrupt(self) -> None:
        link = self._link
        if link is None or link.exit_info is not None or self.tr.native_turn_id is None:
            return
        future = link.conn.request("turn/interrupt", {"threadId": self.tr.native_thread_id,
                                                      "turnId": self.tr.native_turn_id},
                                   timeout=self.settings.request_timeout)
        future.add_done_callback(_log_failure)

    def on_turn_timer(self, name: str, turn_id: str) -> None:
        if name != "interrupt":
            return
        detail = f"the app-server did not end the interrupted turn within {self.settings.interrupt_timeout:g} s"
        self.end_unacknowledged_turn(turn_id, "codex.interrupt_unacknowledged", detail, answer=True)

    def close_turn(self, events: list[EventBase], state: TurnState, usage: object) -> TokenUsage | None:
        """Hook: pending user inputs end with the turn; the translator forgets the turn."""
        self._resolve_inputs(events, "cancelled", answer=True)
        if self.mcp:
            events += self.mcp.first_turn_ended(self.turn.turn_id)
        self.tr.end()
        return usage if isinstance(usage, TokenUsage) else None

    def _turn_completed(self, n: w.TurnNotification, events: list[EventBase]) -> None:
        if not self.turn.in_turn or n.turn.id != self.tr.native_turn_id:
            return
        state: TurnState = TURN_STATES.get(n.turn.status, "failed")  # type: ignore[assignment]
        kept = self.record.state
        kept.persisted_turns += 1
        kept.native_turns.append(n.turn.id)
        self.end_turn(events, state, stop_reason=n.turn.status, error=turn_error_text(n.turn.error), answer=True,
                      usage=self.tr.usage)
        self.publish(status="ready", active_turn_id=None)

    # thread operations ---------------------------------------------------------------------------

    def _idle_native(self, operation: str) -> tuple[ServerLink, list[EventBase]]:
        """The link for a thread ``operation`` (and the events of re-attaching the thread to it):
        refused when the session is closed or a turn is running."""
        if self.record.closed:
            raise self.closed_error()
        if self.turn.in_turn:
            raise ValidationError(operation, "a turn is running; wait for it or interrupt it", **self.where())
        return self.ensure_native()

    def rollback(self, num_turns: int) -> ThreadSnapshot:
        """Hook (``Rollback``): ``thread/revert`` before the ``num_turns``-th last turn."""
        link, events = self._idle_native("rollback_thread")
        self.emit(events)
        natives = self.record.state.native_turns
        if num_turns > len(natives):
            raise ValidationError("rollback_thread", f"the thread has {len(natives)} turns, cannot drop {num_turns}",
                                  **self.where())
        self._call(link, "thread/revert", {"threadId": self.tr.native_thread_id, "beforeTurnId": natives[-num_turns]})
        del natives[-num_turns:]
        self.record.state.persisted_turns = len(natives)
        return self.forget_turns(num_turns)

    def fork(self, at_turn: int | None) -> ResumeCursor:
        """Hook (``Fork``): ``thread/fork``, through Codex's turn ``at_turn`` where given
        (``lastTurnId``, inclusive: later turns are left out of the copy); the copy's cursor."""
        link, events = self._idle_native("fork_thread")
        self.emit(events)
        natives = self.record.state.native_turns
        if not self.record.state.persisted_turns:
            raise ValidationError("fork_thread", "the thread has no turn yet; there is nothing to fork", **self.where())
        params: dict[str, object] = {"threadId": self.tr.native_thread_id}
        if at_turn is not None:
            if not 1 <= at_turn <= len(natives):
                raise ValidationError("fork_thread", f"at_turn {at_turn} is not a turn of the thread (it has "
                                      f"{len(natives)})", **self.where())
            params["lastTurnId"] = natives[at_turn - 1]
        result = _thread_result.decode(self._call(link, "thread/fork", params))
        return cursor_for(result.thread.id)

    def compact(self) -> TurnStartResult:
        """``thread/compact/start``. Codex runs the compaction as a turn of its own (a second
        ``turn/start`` meanwhile fails with ``ActiveTurnNotSteerable { turn_kind: Compact }``),
        so it is a turn here too: ``turn.started`` now, bound to Codex's turn id at its
        ``turn/started``, ended by its ``turn/completed``."""
        link, events = self._idle_native("compact_thread")
        self._call(link, "thread/compact/start", {"threadId": self.tr.native_thread_id})
        turn_id = self.turn.new_id(None)
        events.append(self.turn.start(turn_id, input_text=None, model=self.record.session.model,
                                      provider_refs=ProviderRefs(thread=self.tr.native_thread_id)))
        self.tr.begin(turn_id, None)
        self.emit(events)
        self.publish(status="running", active_turn_id=turn_id)
        return TurnStartResult(thread_id=self.thread_id, turn_id=turn_id, resume_cursor=self._cursor())

    # incoming ------------------------------------------------------------------------------------

    def _incoming(self, items: list[Note | Req]) -> None:
        events = self._held
        tr = self.tr
        streams, translated = DELTA_STREAMS, TRANSLATED
        for item in items:
            try:
                if isinstance(item, Req):
                    self._request(item, events)
                    continue
                method, p = item
                stream = streams.get(method)
                if stream is not None:
                    if not tr.interrupted:
                        tr.delta(stream, p, events)
                    continue
                translate = translated.get(method)
                if translate is not None:
                    translate(tr, p, events)
                elif method == "turn/completed":
                    self._turn_completed(p, events)
                elif method == "turn/started":
                    if tr.turn_id is not None and tr.native_turn_id is None:
                        tr.native_turn_id = p.turn.id  # the compaction turn Codex started for us
                elif method == "mcpServer/startupStatus/updated":
                    events += report_startup(self.mcp, p.name, p.status, p.error, self.turn.turn_id)
                elif method == "serverRequest/resolved":
                    rid = p.requestId
                    for request_id in self.requests.take_where(lambda n: n.rpc_id == rid):
                        events.append(self.resolved(request_id, "cancelled"))
            except Exception as exc:  # one bad payload must not end the session
                log.exception("Codex notification skipped on thread %s", self.thread_id)
                events.append(RuntimeWarningEvent(**self.identity, turn_id=self.turn.turn_id, code="codex.update_failed",
                                                  message=f"an app-server message could not be handled: {exc!r}"))

    def _request(self, req: Req, events: list[EventBase]) -> None:
        link = self._link or self._get_link()
        if link is None:
            return
        method = req.method
        if method == "item/tool/requestUserInput":
            return self._ask_user(link, req, events)
        item_id: str | None = None
        native_turn: str | None = None
        title: str | None = None
        detail: str | None = None
        permissions: JsonValue = None
        approval_id: str | None = None
        subject: RequestSubject | None = None
        data: JsonObject = {"method": method, "rpc_id": req.id}
        try:
            if method == "item/commandExecution/requestApproval":
                c = _command.decode(req.params)
                item_id, native_turn, title, detail = c.itemId, c.turnId, c.command, c.reason
                approval_id = c.approvalId
                data.update(command=c.command, cwd=c.cwd, approval_id=c.approvalId)
                if c.command:
                    subject = command_subject(c.command, c.cwd or self.start_input.cwd)
            elif method == "item/fileChange/requestApproval":
                f = _file_change.decode(req.params)
                item_id, native_turn, detail = f.itemId, f.turnId, f.reason
                data.update(grant_root=f.grantRoot)
                # The request names only the item; its files came with item/started.
                files = self.tr.changes.get(f.itemId)
                subject = files_subject(files) if files else None
            elif method == "item/permissions/requestApproval":
                pr = _permissions.decode(req.params)
                item_id, native_turn, detail, permissions = pr.itemId, pr.turnId, pr.reason, pr.permissions
                data.update(permissions=pr.permissions)
                subject = tool_subject("permissions", pr.permissions)
            elif method in ("execCommandApproval", "applyPatchApproval"):
                lg = _legacy.decode(req.params)
                item_id, detail, approval_id = lg.callId, lg.reason, lg.approvalId
                if method == "execCommandApproval":
                    title = " ".join(lg.command)
                    data.update(command=list(lg.command), cwd=lg.cwd)
                    subject = command_subject(lg.command, lg.cwd or self.start_input.cwd)
                else:
                    data["files"] = list[JsonValue](sorted(lg.fileChanges))
                    subject = files_subject(codex_changes(lg.fileChanges))
            else:
                data["raw"] = msgspec.json.decode(req.params)  # a kind we do not know: the payload itself
                subject = tool_subject(method, data["raw"])
        except msgspec.DecodeError as exc:
            data["raw"] = msgspec.json.decode(req.params) if req.params else None
            data["decode_error"] = str(exc)
        native = NativeRequest(req.id, method, item_id, permissions)
        if not self.turn.in_turn or self.turn.interrupt_requested or (
                native_turn is not None and native_turn != self.tr.native_turn_id):
            self._answer(native, cancel_answer(native))  # no turn to ask the host for
            return
        if item_id is not None and title is None:
            title = self.tr.titles.get(item_id)
        opened = RequestOpened(
            **self.identity, turn_id=self.turn.turn_id, item_id=item_id, request_id=self.requests.new_id(self.turn.turn_id),
            kind=request_kind(method), title=title, detail=detail, data=data, subject=subject,  # type: ignore[arg-type]
            # The native request id: Codex's approvalId where it gives one, else the item's id
            # (the model's call id); the JSON-RPC id is reused per process (data["rpc_id"]).
            provider_refs=self.tr.refs(item=item_id, request=approval_id or item_id or str(req.id)),
        )
        self.open_request(events, opened, native)

    def _answer(self, native: NativeRequest, result: Mapping[str, object]) -> None:
        link = self._link
        if link is None or link.exit_info is not None:
            return
        try:
            link.respond(native.rpc_id, result)
        except PaddockError as exc:
            log.debug("answer to %s not delivered on thread %s: %s", native.method, self.thread_id, exc)

    def answer_request(self, native: NativeRequest, decision: str) -> None:
        """Hook: the host's decision, verbatim in the request's vocabulary."""
        self._answer(native, answer_for(native, decision))

    def cancel_request(self, native: NativeRequest) -> None:
        """Hook: the runtime cancelled the request (interrupt, turn end, stop)."""
        self._answer(native, cancel_answer(native))

    # structured user input -----------------------------------------------------------------------

    def _ask_user(self, link: ServerLink, req: Req, events: list[EventBase]) -> None:
        try:
            p = _user_input.decode(req.params)
        except msgspec.DecodeError as exc:
            link.respond_error(req.id, -32602, f"Invalid params: {exc}")
            return
        if not self.turn.in_turn or self.turn.interrupt_requested:
            self._answer(NativeRequest(req.id, req.method), {"answers": {}})
            return
        request_id = self.requests.new_id(self.turn.turn_id)
        self._inputs[request_id] = (req.id, self.turn.turn_id)
        questions = tuple(
            UserInputQuestion(id=q.id, question=q.question, header=q.header,
                              options=tuple(UserInputOption(label=o.label, description=o.description) for o in q.options or ()))
            for q in p.questions
        )
        events.append(UserInputRequested(**self.identity, turn_id=self.turn.turn_id, item_id=p.itemId,
                                         request_id=request_id, questions=questions,
                                         provider_refs=self.tr.refs(item=p.itemId, request=str(req.id))))

    def answer_user_input(self, request_id: str, answers: dict[str, Any]) -> None:
        entry = self._inputs.pop(request_id, None)
        if entry is None:
            raise RequestError("respond_to_user_input", None,
                               f"no open user-input request {request_id!r} (unknown or already resolved)", **self.where())
        native_answers = {
            qid: {"answers": [str(a) for a in value] if isinstance(value, (list, tuple)) else [str(value)]}
            for qid, value in answers.items()
        }
        self._answer(NativeRequest(entry[0], "item/tool/requestUserInput"), {"answers": native_answers})
        self.emit([UserInputResolved(**self.identity, turn_id=entry[1], request_id=request_id, resolution="answered",
                                     answers=answers)])

    def _resolve_inputs(self, events: list[EventBase], resolution: str, *, answer: bool) -> None:
        for request_id, (rpc_id, turn_id) in list(self._inputs.items()):
            del self._inputs[request_id]
            if answer:
                self._answer(NativeRequest(rpc_id, "item/tool/requestUserInput"), {"answers": {}})
            events.append(UserInputResolved(**self.identity, turn_id=turn_id, request_id=request_id,
                                            resolution=resolution))  # type: ignore[arg-type]


def _log_failure(future: concurrent.futures.Future[msgspec.Raw]) -> None:
    # Reader (or timer) thread: the interrupt's answer; its failure only matters for debugging.
    error = future.exception()
    if error is not None:
        log.debug("turn/interrupt failed: %s", error)
