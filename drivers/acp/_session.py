"""AcpSessionActor: one ACP session (one host thread) on a shared agent process.

Thread: every method of the actor runs inside it, on a worker of the shared dispatcher (one
message at a time; see ``paddock.actors.DispatchActor``). The agent link's reader thread
only ``tell``s it: batches of already-decoded ``session/update`` payloads and agent requests for
this session (:class:`Incoming`), and the outcome of its ``session/prompt`` (:class:`PromptDone`).
Host operations arrive as ``ask`` messages from the adapter, with the caller's timeout.

Lifecycle of the native session:
- ``Open``: ``session/new``, or ``session/load`` / ``session/resume`` from a resume cursor; a failed
  resume falls back to ``session/new`` and says so (``session.started(resume_failed=True)`` plus a
  ``runtime.warning``). ``session/new`` holds no worker: the ``Open`` is answered when the agent's
  answer arrives (:class:`NewSessionDone`); a resume, ``session/set_mode`` and
  ``session/set_config_option`` wait for the agent inside ``blocking()`` (the pool compensates);
- after the agent process restarted (new link generation), the next ``SendTurn`` first reloads the
  native session (``session/load``, else ``session/resume``), transparently;
- modes (trust): a stop closes the native session with a tracked ``session/close``, and a load of
  that id on the same process waits for its answer (an unanswered one: not reused, a new session
  instead); a reloaded session whose mode cannot be set is abandoned (closed), never used; the
  agent's ``current_mode_update`` to a mode looser than the runtime mode allows is set back at
  once and before the next prompt (``send_turn`` fails typed when the agent refuses it);
- MCP: every server of the session is handed to the agent as an MCP relay (stdio) on
  ``session/new``, ``session/load`` and ``session/resume``; the relays' reports arrive as
  :class:`~paddock.drivers.mcp_relay.McpReports` (told by the relay listener's thread) and
  become ``mcp.status.updated`` and ``mcp_tool_call`` items; a server not connected by the end of
  the first turn of an incarnation is warned about (docs/architecture.md, "MCP relay");
- ``on_shutdown``: when the agent died, the running turn fails, open requests expire and
  ``session.exited(recoverable=<agent can load>)`` is emitted; on a normal stop the turn is
  cancelled, open requests are answered ``cancelled`` and ``session.exited(reason="stopped")``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from paddock.actors import INVALID_PARAMS, METHOD_NOT_FOUND, Interrupt, Open, Respond, SendTurn, SessionRecord, SharedSessionActor, blocking
from paddock.contract import (
    RUNTIME_MODES,
    EventBase,
    PaddockError,
    ProviderRefs,
    RequestError,
    RequestOpened,
    ResumeCursor,
    RuntimeWarningEvent,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionConfigured,
    SessionStarted,
    StartSessionInput,
    TokenUsage,
    TurnStartResult,
    TurnState,
    ValidationError,
)
from paddock.drivers.mcp_relay import McpRelays, McpReports
from paddock.supervisors import ChildContext

from . import _wire as w
from ._models import catalog_of
from ._prompt import prompt_blocks
from ._agent import AgentLink, Item
from ._capabilities import plan_mode_id
from ._messages import Incoming, ModeRestored, NewSessionDone, PromptDone, ReplayDone, Req
from ._settings import AcpState, SessionSettings, created_at_of, cursor_for, session_id_of, usage_of
from ._mcp import wire_mcp_server
from ._fs import FsError, read_text_file, write_text_file
from ._terminals import Terminals
from ._permissions import auto_decision, normalize_options, offered_decisions, outcome_for, request_kind_of_tool
from ._subjects import permission_subject
from ._translate import Translator, stop_reason_state

__all__ = ["AcpSessionActor"]

log = logging.getLogger(__name__)

_GUARD = "cancel_guard"  # turn timer: the start-evidence guard before session/cancel
_CANCEL = "cancel_timeout"  # turn timer: the agent never acknowledged session/cancel
_RETRY = "cancel_retry"  # turn timer: re-send session/cancel within the guard


class _Pending:
    """The native handle of an open permission request: how to answer it on the wire."""

    __slots__ = ("rpc_id", "options", "tool_call_id")

    def __init__(self, rpc_id: int | str, options: list[w.PermissionOption], tool_call_id: str) -> None:
        self.rpc_id = rpc_id
        self.options = options
        self.tool_call_id = tool_call_id


_permission_decoder = msgspec.json.Decoder(w.PermissionRequest)
_read_decoder = msgspec.json.Decoder(w.ReadTextFileParams)
_write_decoder = msgspec.json.Decoder(w.WriteTextFileParams)
_prompt_decoder = msgspec.json.Decoder(w.PromptResult)
_session_result_decoder = msgspec.json.Decoder(w.SessionResult)
_HOST_OPERATIONS = (Open, SendTurn, Interrupt, Respond)
_CONTENT_KINDS = (w.AgentMessageChunk, w.AgentThoughtChunk, w.ToolCallStart, w.ToolCallUpdate, w.PlanUpdate, w.UserMessageChunk)


class AcpSessionActor(SharedSessionActor[_Pending, AcpState, AgentLink]):
    """One ACP session. Built by the session supervisor's child spec; see the module docstring.

    ``get_link()`` returns the current agent link (or ``None`` while the agent restarts);
    ``report_modes(mode_ids)`` tells the instance which native modes a session offers (called on
    this actor's thread)."""

    process_noun = "the agent process"
    restart_reason = "the agent process restarted; the session reloads on its next turn"

    def __init__(
        self,
        record: SessionRecord[AcpState],
        settings: SessionSettings,
        get_link: Callable[[], AgentLink | None],
        *,
        report_modes: Callable[[list[str]], None] | None = None,
        context: ChildContext | None = None,
    ) -> None:
        super().__init__(record, get_link, context=context)
        self.settings = settings
        self._report_modes = report_modes
        self._terminals: Terminals | None = None
        self.start_input: StartSessionInput = record.input
        self.tr = Translator(settings.driver, settings.instance_id, self.thread_id, turn=self.turn)
        self.tr.native_session_id = record.state.native_id
        # The thread's usage goes on from what it reached: this incarnation's, else what the
        # cursor carries from an earlier session (a restart with other settings, a new host).
        cursor = record.input.resume_cursor
        usage = record.state.usage or (usage_of(cursor) if cursor is not None else None)
        if usage is not None:
            self.tr.restore_usage(usage)
        self._cancel_pending = False
        self._retry_until = 0.0
        self._replaying = False
        self._opening = False  # a session/new is out: host operations wait (stashed) until it answers
        self._restoring = False  # a session/set_mode undoing a mode drift is out
        self._roots = [self.start_input.cwd, *self.start_input.workspace_roots]
        self._mcp: McpRelays | None = None
        self._abandoned: str | None = None
        """A turn this session ended while the agent never answered its prompt (an interrupt or
        cancel it did not acknowledge): until that prompt's answer (or any later one) arrives,
        what the agent streams is that prompt's, not the running turn's."""
        self._late_warned = False

    # lifecycle (the shared-process base's hooks) -------------------------------------------------

    @property
    def native_id(self) -> str | None:
        return self.tr.native_session_id

    def on_start(self) -> None:
        super().on_start()
        if self.settings.client_terminal:
            self._terminals = Terminals(self.settings.env, self.settings.terminal_output_limit,
                                        self.settings.confinement)
        if self.start_input.mcp_servers:
            ref = self.actor_ref

            def deliver(reports: McpReports) -> None:
                # The relay listener's thread: only tell.
                try:
                    ref.tell(reports)
                except pykka.ActorDeadError:
                    pass

            self._mcp = McpRelays(self.start_input.mcp_servers, self.settings.home,
                                  self.identity, deliver)

    def recoverable(self, link: AgentLink | None) -> bool:
        return bool(link is not None and link.init.agentCapabilities.loadSession) or self._can_resume(link)

    def on_stopping(self, events: list[EventBase], link: AgentLink | None, in_turn: bool) -> None:
        if in_turn and link is not None and self.tr.native_session_id:
            try:
                link.notify("session/cancel", self._cancel_params())
            except PaddockError:
                pass

    def on_detached(self, link: AgentLink) -> None:
        if link.exit_info is None and link.init.agentCapabilities.sessionCapabilities.close is not None:
            # The agent process outlives this session: let it free the session's state. A later
            # session/load of this id waits for the answer (see _load).
            sid = self.tr.native_session_id
            if sid:
                try:
                    link.release(sid, "session/close", {"sessionId": sid}, timeout=self.settings.request_timeout)
                except PaddockError:
                    pass

    def on_ended(self, deadline: float) -> None:
        if self._terminals is not None:
            self._terminals.close(deadline)
        if self._mcp is not None:
            self._mcp.close()

    def persist(self) -> None:
        super().persist()
        self.record.state.usage = self.tr.usage

    # message dispatch ----------------------------------------------------------------------------

    def on_receive(self, message: object) -> object:
        if isinstance(message, Incoming):
            self._incoming(message.items)
            return None
        if isinstance(message, PromptDone):
            self._prompt_done(message)
            return None
        if isinstance(message, ReplayDone):
            self._replaying = False
            return None
        if isinstance(message, NewSessionDone):
            self._new_session_done(message)
            return None
        if isinstance(message, ModeRestored):
            self._mode_restored(message)
            return None
        if isinstance(message, McpReports):
            if self._opening:
                self.stash()  # the agent starts its servers during session/new: after session.started
            elif self._mcp is not None:
                self.emit(self._mcp.handle(message, self.tr.turn_id))
            return None
        if self._opening and type(message) in _HOST_OPERATIONS:
            self.stash()  # handled, in order, once the session is open (or failed to)
            return None
        return super().on_receive(message)  # the control messages (Open, SendTurn, ...)

    # helpers -------------------------------------------------------------------------------------

    def _can_resume(self, link: AgentLink | None) -> bool:
        return link is not None and link.init.agentCapabilities.sessionCapabilities.resume is not None

    def _call(self, link: AgentLink, method: str, params: dict[str, Any], timeout: float | None = None) -> msgspec.Raw:
        return link.call(method, params, timeout=timeout or self.settings.request_timeout, thread_id=self.thread_id)

    def _mcp_servers(self, link: AgentLink) -> list[dict[str, Any]]:
        """``mcpServers``: every server as its relay (see :mod:`._mcp`): a stdio relay the agent
        starts, or, for an agent that takes only HTTP, an HTTP-serving relay this session starts
        (waiting, inside ``blocking()``, until it listens)."""
        if self._mcp is None:
            return []
        if self.settings.mcp_stdio or not link.init.agentCapabilities.mcpCapabilities.http:
            return [wire_mcp_server(s) for s in self._mcp.handed()]
        with blocking():
            served = self._mcp.served(self.settings.env, self.settings.request_timeout)
        return [wire_mcp_server(s) for s in served]

    def _cursor(self) -> ResumeCursor | None:
        sid = self.tr.native_session_id
        return cursor_for(self.settings.cursor_driver, sid, self.record.state.created_at, self.tr.usage) if sid else None

    def fork(self, at_turn: int | None) -> ResumeCursor:
        """Hook (``Fork``): ``session/fork`` (unstable in ACP; ``sessions.fork`` is on only where
        the agent advertises ``sessionCapabilities.fork``). The agent copies the session and
        holds the copy live; the new thread's ``session/load`` takes it from there."""
        if self.turn.in_turn:
            raise ValidationError("fork_thread", f"turn {self.turn.turn_id!r} is still running; fork between turns",
                                  **self.where())
        link = self.current_link()
        with blocking():
            raw = self._call(link, "session/fork", {"sessionId": self.tr.native_session_id,
                                                    "cwd": self.start_input.cwd, "mcpServers": []})
        result = _session_result_decoder.decode(raw)
        if not result.sessionId:
            raise RequestError("session/fork", None, "the agent answered without a sessionId", **self.where())
        return cursor_for(self.settings.cursor_driver, result.sessionId, time.time())

    # open, resume, modes -------------------------------------------------------------------------

    def open_session(self) -> Session | None:
        """Hook: create or resume the native session. ``session/new`` does not hold the actor:
        the ``Open`` is answered when the agent's answer arrives (:class:`NewSessionDone`), and
        host operations that arrive meanwhile are stashed until then. A resume
        (``session/load``/``session/resume``) still waits for its answer, inside ``blocking()``."""
        if self.record.closed:
            raise self.closed_error()
        link = self.current_link()
        inp = self.start_input
        events: list[EventBase] = []
        resume_failed = False
        detail = None
        if inp.resume_cursor is not None:
            try:
                sid = session_id_of(inp.resume_cursor, self.settings.cursor_driver)
                result = self._load(link, sid)
                self.record.state.created_at = created_at_of(inp.resume_cursor)
                try:
                    return self._opened(link, result, events, resumed=True, resume_failed=False, detail=None)
                except PaddockError:
                    self._abandon(link, sid)  # e.g. its mode could not be set: never reused
                    raise
            except PaddockError as exc:
                resume_failed = True
                # The error's data carries the real reason (Gemini CLI: -32603, data.details).
                data = getattr(exc, "data", None)
                why = data.get("details") if isinstance(data, dict) else None
                detail = f"resume failed, started a new session: {exc}" + (
                    f" ({why})" if isinstance(why, str) and why not in str(exc) else "")
                hint = self.settings.resume_hint
                created = created_at_of(inp.resume_cursor)
                known = hint(str(exc), None if created is None else time.time() - created) if hint is not None else None
                if known:
                    detail = f"{detail}. {known}"
                events.append(RuntimeWarningEvent(**self.identity, code="acp.resume_failed", message=detail,
                                                  detail={"code": getattr(exc, "code", None), "data": data}))
        reply = self.defer_reply()
        ref = self.actor_ref

        def answered(result: msgspec.Raw | None, error: BaseException | None) -> None:
            # Reader (or timer) thread: only tell. A stopped actor answered the Open already.
            try:
                ref.tell(NewSessionDone(reply, link, events, resume_failed, detail, result, error))
            except pykka.ActorDeadError:
                pass

        self._opening = True
        try:
            link.request_async("session/new", {"cwd": inp.cwd, "mcpServers": self._mcp_servers(link)}, answered,
                               timeout=self.settings.request_timeout)
        except BaseException:
            self._opening = False
            raise
        return None

    def _new_session_done(self, msg: NewSessionDone) -> None:
        self._opening = False
        try:
            if msg.error is not None:
                raise msg.link.error_of("session/new", msg.error, self.settings.request_timeout, self.thread_id)
            if self.record.closed:
                raise self.closed_error()
            result = _session_result_decoder.decode(msg.result or b"")
            if not result.sessionId:
                raise RequestError("session/new", None, "the agent answered without a sessionId", **self.where())
            self.tr.native_session_id = result.sessionId
            self.record.state.created_at = time.time()
            msg.link.register(result.sessionId, self.actor_ref)
            session = self._opened(msg.link, result, msg.events, resumed=False, resume_failed=msg.resume_failed,
                                   detail=msg.detail)
        except Exception as exc:
            msg.reply.fail(exc)
        else:
            msg.reply.set(session)
        finally:
            self.unstash_all()

    def _opened(self, link: AgentLink, result: w.SessionResult, events: list[EventBase], *, resumed: bool,
                resume_failed: bool, detail: str | None) -> Session:
        """The native session is open: configure it (mode, model), then emit ``events``, its
        ``session.started`` and the configuration. Nothing is emitted when configuring fails
        (the caller falls back to a new session, or fails the ``Open``)."""
        self._link = link
        self.record.state.generation = link.generation
        self.persist()
        inp = self.start_input
        started = SessionStarted(
            **self.identity, cwd=inp.cwd, model=inp.model, runtime_mode=inp.runtime_mode,
            interaction_mode=inp.interaction_mode, resumed=resumed, resume_failed=resume_failed,
            detail=detail, provider_refs=ProviderRefs(thread=self.tr.native_session_id),
        )
        configured = self._configure(link, result, inp.interaction_mode, inp.model)
        self.emit([*events, started, *configured])
        return self.publish(status="ready", resume_cursor=self._cursor(), resumed=resumed)

    def _abandon(self, link: AgentLink, sid: str) -> None:
        """A loaded native session this actor will not use: stop routing it here and let the
        agent free it (when it can close sessions)."""
        link.unregister(sid, self.actor_ref)
        if self.tr.native_session_id == sid:
            self.tr.native_session_id = None
        if link.init.agentCapabilities.sessionCapabilities.close is not None:
            try:
                link.release(sid, "session/close", {"sessionId": sid}, timeout=self.settings.request_timeout)
            except PaddockError:
                pass

    def _load(self, link: AgentLink, sid: str) -> w.SessionResult:
        """``session/load`` (or ``session/resume``) ``sid`` on ``link``; replayed history is
        swallowed (it is not a turn)."""
        caps = link.init.agentCapabilities
        if caps.loadSession:
            method = "session/load"
            params = {"sessionId": sid, "cwd": self.start_input.cwd, "mcpServers": self._mcp_servers(link)}
        elif caps.sessionCapabilities.resume is not None:
            method = "session/resume"
            params = {"sessionId": sid, "cwd": self.start_input.cwd, "mcpServers": self._mcp_servers(link)}
        else:
            raise RequestError("session/load", None, "the agent supports neither session/load nor session/resume", **self.where())
        # Trap (claude-agent-acp): a session/close still being handled (a stopped session of
        # this id on this process) races a load sent meanwhile: the load answers from the
        # closing session (its old mode, e.g. bypassPermissions), a set_mode is acknowledged
        # by it, and the session vanishes under the next prompt. Load only once the agent
        # answered the close; one still unanswered means the id is not reused.
        if not link.released(sid, self.settings.request_timeout):
            raise RequestError(method, None, "the agent has not finished closing this session's previous use; "
                                             "it is not reused", **self.where())
        # Register before asking: the replay arrives before the answer.
        link.register(sid, self.actor_ref)
        self._replaying = True
        try:
            raw = self._call(link, method, params)
        except PaddockError:
            link.unregister(sid)
            self._replaying = False
            raise
        # The replayed updates were told to us before the answer resolved; this marker queues
        # behind them, so everything before it is history.
        self.actor_ref.tell(ReplayDone())
        self.tr.native_session_id = sid
        return _session_result_decoder.decode(raw)

    def _configure(self, link: AgentLink, result: w.SessionResult, interaction_mode: str, model: str | None) -> list[EventBase]:
        events: list[EventBase] = []
        x = self.record.state
        config: dict[str, Any] = {}
        if result.modes is not None:
            x.modes = [m.id for m in result.modes.availableModes]
            if self._report_modes is not None:
                self._report_modes(x.modes)
            x.current_mode = result.modes.currentModeId
            config["modes"] = [{"id": m.id, "name": m.name} for m in result.modes.availableModes]
            config["current_mode"] = result.modes.currentModeId
        elif self.settings.unlisted_modes:
            # The session lists no modes: it is in the agent's configured default (a reloaded
            # session too, whatever mode it was set to before), and set_mode still takes these.
            x.modes = list(self.settings.unlisted_modes)
            x.current_mode = None
        if result.configOptions is not None:
            x.config_options = result.configOptions
            config["config_options"] = result.configOptions
        if result.models is not None:
            config["models"] = result.models
            x.models = result.models
        catalog = catalog_of(result.configOptions, result.models)
        if catalog is not None and self.record.report_models is not None:
            self.record.report_models(catalog)
        if config:
            events.append(SessionConfigured(**self.identity, config=config))
        events += self._apply_mode(link, interaction_mode)
        if model:
            events += self._apply_model(link, model)
        return events

    def _native_mode_for(self, interaction_mode: str) -> str | None:
        modes = self.settings.native_modes
        if interaction_mode == "plan":
            return plan_mode_id(self.record.state.modes, modes.get("plan")) or modes.get("plan")
        return modes.get(self.start_input.runtime_mode)

    def _permitted(self, mode: str) -> bool:
        """Whether native ``mode`` asks no less than the session's runtime mode allows: the
        native mode of that runtime mode or of a stricter one, or the plan mode."""
        runtime_mode = self.start_input.runtime_mode
        if runtime_mode == RUNTIME_MODES[-1]:
            return True
        modes = self.settings.native_modes
        allowed = {modes[m] for m in RUNTIME_MODES[:RUNTIME_MODES.index(runtime_mode) + 1] if m in modes}
        plan = plan_mode_id(self.record.state.modes, modes.get("plan"))
        return mode in allowed or mode == plan

    def _drift_target(self) -> str | None:
        """The runtime mode's native mode when the agent last reported a mode looser than the
        runtime mode allows (and one can be set), else ``None``."""
        x = self.record.state
        target = self.settings.native_modes.get(self.start_input.runtime_mode)
        if target is None or x.current_mode is None or self._permitted(x.current_mode):
            return None
        return target if target in x.modes else None

    def _mode_reported(self, mode: str, events: list[EventBase]) -> None:
        """The agent says it is now in ``mode`` (``current_mode_update``). One looser than the
        runtime mode allows (e.g. it restored a previous mode, or a plan exit chose it) is set
        back at once, and again before the next prompt until the agent acknowledges it."""
        x = self.record.state
        x.current_mode = mode
        target = self._drift_target()
        if target is None:
            return
        events.append(RuntimeWarningEvent(
            **self.identity, turn_id=self.tr.turn_id, code="acp.mode_drift",
            message=f"the agent switched to mode {mode!r}, which runtime mode {self.start_input.runtime_mode!r} "
                    f"does not allow; setting {target!r} again",
            detail={"mode": mode, "target": target}))
        link = self._link
        if link is None or self._restoring or not self.tr.native_session_id:
            return
        ref = self.actor_ref
        self._restoring = True

        def done(result: msgspec.Raw | None, error: BaseException | None) -> None:
            # Reader (or timer) thread: only tell.
            try:
                ref.tell(ModeRestored(target, error))
            except pykka.ActorDeadError:
                pass

        try:
            link.request_async("session/set_mode", {"sessionId": self.tr.native_session_id, "modeId": target}, done,
                               timeout=self.settings.request_timeout)
        except PaddockError as exc:
            self._restoring = False
            log.debug("session/set_mode not sent on thread %s: %s", self.thread_id, exc)

    def _mode_restored(self, msg: ModeRestored) -> None:
        self._restoring = False
        x = self.record.state
        if msg.error is None:
            if self._drift_target() == msg.mode:  # no later report superseded it
                x.current_mode = msg.mode
                self.emit([SessionConfigured(**self.identity, config={"current_mode": msg.mode})])
            return
        self.emit([RuntimeWarningEvent(
            **self.identity, turn_id=self.tr.turn_id, code="acp.mode_drift",
            message=f"the agent refused mode {msg.mode!r}: {msg.error}; the next turn is refused until it is set")])

    def _apply_mode(self, link: AgentLink, interaction_mode: str) -> list[EventBase]:
        x = self.record.state
        target = self._native_mode_for(interaction_mode)
        x.interaction_mode = interaction_mode  # type: ignore[assignment]
        if target is None or target == x.current_mode:
            return []
        if target not in x.modes:
            return [RuntimeWarningEvent(**self.identity, code="acp.mode_unavailable",
                                        message=f"the agent has no mode {target!r}; runtime mode is enforced by the client only")]
        self._call(link, "session/set_mode", {"sessionId": self.tr.native_session_id, "modeId": target})
        x.current_mode = target
        return [SessionConfigured(**self.identity, config={"current_mode": target})]

    def _apply_model(self, link: AgentLink, model: str) -> list[EventBase]:
        x = self.record.state
        if x.model == model:
            return []
        option = next(
            (o for o in x.config_options or () if isinstance(o, dict) and o.get("category") == "model"),
            None,
        )
        if option is None and self.settings.set_model and x.models is not None:
            # Kiro (and Cursor) choose the model with the unstable session/set_model method; the
            # session's `models` block says the agent has one.
            self._call(link, "session/set_model", {"sessionId": self.tr.native_session_id, "modelId": model})
            x.model = model
            return [SessionConfigured(**self.identity, config={"model": model})]
        if option is None:
            return [RuntimeWarningEvent(**self.identity, code="acp.model_unsupported",
                                        message=f"the agent offers no model option; model {model!r} not applied")]
        self._call(link, "session/set_config_option",
                   {"sessionId": self.tr.native_session_id, "configId": option.get("id"), "value": model})
        x.model = model
        return [SessionConfigured(**self.identity, config={"model": model})]

    def reattach(self, link: AgentLink) -> list[EventBase]:
        """Hook: the agent process restarted; reload the native session on it (``session/load``,
        else ``session/resume``). An agent that cannot closes the session
        (:class:`SessionClosedError`)."""
        sid = self.tr.native_session_id
        if sid is None:
            raise self.closed_error("the session was never opened")
        try:
            result = self._load(link, sid)
        except PaddockError as exc:
            detail = f"could not reload the session after an agent restart: {exc}"
            self.record.closed = True
            if not self.record.state.exited:  # the crash already reported the session's end
                self.emit([self.session_exited(detail, recoverable=False)])
                self.record.state.exited = True
            self.publish(status="error", last_error=detail)
            raise self.closed_error(detail) from None
        state = self.record.state
        self._link = link
        state.generation = link.generation
        state.current_mode = None
        state.model = None
        events: list[EventBase] = [
            SessionStarted(
                **self.identity, cwd=self.start_input.cwd, runtime_mode=self.start_input.runtime_mode,
                interaction_mode=state.interaction_mode, resumed=True,
                detail="reloaded after the agent process restarted", provider_refs=ProviderRefs(thread=sid),
            )
        ]
        events += self._configure(link, result, state.interaction_mode or "default", self.start_input.model)
        self.publish(status="ready", last_error=None)
        return events

    # turns ---------------------------------------------------------------------------------------

    def start_turn(self, inp: SendTurnInput, turn_id: str) -> TurnStartResult:
        """Hook: reload the native session when the agent restarted, apply mode and model, then
        ``session/prompt`` (asynchronously: its result arrives as :class:`PromptDone`)."""
        link, events = self.ensure_native()
        if inp.interaction_mode is not None and inp.interaction_mode != self.record.state.interaction_mode:
            events += self._apply_mode(link, inp.interaction_mode)
        target = self._drift_target()
        if target is not None:
            # The agent reported a looser mode than the runtime mode allows: no prompt before it
            # acknowledged the runtime mode's own (a refusal fails send_turn, typed).
            try:
                self._call(link, "session/set_mode", {"sessionId": self.tr.native_session_id, "modeId": target})
            except PaddockError:
                self.emit(events)  # e.g. a reload's session.started
                raise
            self.record.state.current_mode = target
            events.append(SessionConfigured(**self.identity, config={"current_mode": target}))
        if inp.model:
            events += self._apply_model(link, inp.model)
        events += self.tr.start_turn(
            turn_id, model=inp.model or self.record.session.model,
            interaction_mode=inp.interaction_mode or self.record.state.interaction_mode,
            input_text=inp.text,
        )
        self._cancel_pending = False
        params = {"sessionId": self.tr.native_session_id, "prompt": prompt_blocks(inp.text, inp.attachments)}
        ref = self.actor_ref

        def done(result: msgspec.Raw | None, error: BaseException | None) -> None:
            # Reader thread: only tell. The session may have stopped meanwhile.
            try:
                ref.tell(PromptDone(turn_id, result, error))
            except pykka.ActorDeadError:
                pass

        try:
            link.request_async("session/prompt", params, done)
        except Exception as exc:  # any error: the turn started above must end (the base re-types it)
            self.end_turn(events, "failed", error=str(exc))
            self.emit(events)
            raise
        self.emit(events)
        cursor = self._cursor()
        self.publish(status="running", active_turn_id=turn_id, resume_cursor=cursor)
        return TurnStartResult(thread_id=self.thread_id, turn_id=turn_id, resume_cursor=cursor)

    def close_turn(self, events: list[EventBase], state: TurnState, usage: object) -> TokenUsage | None:
        """Hook: the MCP relays close their calls (and, after the first turn, warn about servers
        that never connected), then the translator closes the turn's items (``usage``: the
        prompt's PromptUsage)."""
        if self._mcp is not None:
            events += self._mcp.turn_ended(self.tr.turn_id)
        return self.tr.close_turn(state, events, usage if isinstance(usage, w.PromptUsage) else None)

    def end_unacknowledged_turn(self, turn_id: str, code: str, detail: str, *, answer: bool = False) -> None:
        """The base's end of a turn the agent did not stop, remembering that its prompt is
        still out: the agent's later output for it is dropped (:meth:`_incoming`)."""
        super().end_unacknowledged_turn(turn_id, code, detail, answer=answer)
        self._abandoned, self._late_warned = turn_id, False

    def _prompt_done(self, msg: PromptDone) -> None:
        # ACP updates name no prompt: an agent answers one prompt of a session at a time, so once
        # any prompt is answered an abandoned one is over.
        self._abandoned = None
        if msg.turn_id != self.tr.turn_id:
            return
        self.cancel_turn_timers()
        events: list[EventBase] = []
        if msg.error is not None:
            link = self._link
            if link is not None and link.exit_info is not None:
                return  # the process died: on_shutdown reports it with the exit details
            error = msg.error
            detail = error.detail if isinstance(error, RequestError) else str(error)
            if isinstance(error, RequestError) and self.tr.interrupt_requested:
                # Some agents end a cancelled prompt with an error instead of stopReason cancelled.
                self.end_turn(events, "interrupted", stop_reason="cancelled", error=detail, answer=True)
            else:
                self.end_turn(events, "failed", error=detail, answer=True)
        else:
            try:
                result = _prompt_decoder.decode(msg.result or b"")
            except msgspec.DecodeError as exc:
                result = None
                events.append(RuntimeWarningEvent(**self.identity, code="acp.malformed_result",
                                                  message=f"session/prompt result could not be decoded: {exc}"))
            if result is None:
                self.end_turn(events, "failed", error="malformed session/prompt result", answer=True)
            else:
                state = stop_reason_state(result.stopReason, self.tr.interrupt_requested)
                failure: str | None = None
                hook = self.settings.failed_text
                if state == "completed" and hook is not None:
                    # The agent reported a model failure as assistant text (copilot).
                    failure = hook(self.tr.last_message_text())
                    if failure is not None:
                        state = "failed"
                self.end_turn(events, state, stop_reason=result.stopReason, usage=result.usage, error=failure,
                              answer=True)
        self.emit(events)
        self.persist()
        self.publish(status="ready", active_turn_id=None, resume_cursor=self._cursor())  # with the turn's usage

    def cancel_turn(self, events: list[EventBase]) -> None:
        """Hook: ``session/cancel``, at once when the turn showed evidence of starting, else
        after the flavor's guard (an agent that has not started the prompt yet may miss it).
        ACP: after session/cancel the client answers every pending permission "cancelled" (the
        base has done that)."""
        if self.tr.turn_evidence or self.settings.cancel_guard <= 0:
            self._send_cancel()
        else:
            self._cancel_pending = True
            self.schedule_turn_timer(_GUARD, self.settings.cancel_guard)

    def on_turn_timer(self, name: str, turn_id: str) -> None:
        if name == _GUARD:
            if self._cancel_pending:
                self._send_cancel()
        elif name == _CANCEL:
            self._cancel_expired(turn_id)
        elif name == _RETRY:
            self._retry_cancel()

    def _cancel_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": self.tr.native_session_id}
        if self.settings.cancel_meta:
            params["_meta"] = dict(self.settings.cancel_meta)
        return params

    def _schedule_retry(self) -> None:
        # Some agents drop a cancel that arrives right after the prompt (Kiro; T3 Code re-sends
        # it): repeat session/cancel every `cancel_retry` s until the turn ends, within the guard.
        retry = self.settings.cancel_retry
        if retry > 0 and time.monotonic() + retry < self._retry_until:
            self.schedule_turn_timer(_RETRY, retry)

    def _retry_cancel(self) -> None:
        link = self._link
        if not self.tr.in_turn or link is None or not self.tr.native_session_id:
            return
        try:
            link.notify("session/cancel", self._cancel_params())
        except PaddockError:
            return
        self._schedule_retry()

    def _cancel_expired(self, turn_id: str) -> None:
        """The agent never answered the cancelled prompt: end the turn ourselves (its late result
        and updates are then ignored) rather than leave the host waiting forever."""
        detail = f"the agent did not acknowledge the cancel within {self.settings.cancel_timeout:g} s"
        self.end_unacknowledged_turn(turn_id, "acp.cancel_unacknowledged", detail, answer=True)

    def _send_cancel(self) -> None:
        self._cancel_pending = False
        self.cancel_turn_timers()
        self.tr.interrupt_acknowledged()
        link = self._link
        if link is None or not self.tr.native_session_id:
            return
        try:
            link.notify("session/cancel", self._cancel_params())
        except PaddockError as exc:
            log.debug("session/cancel not sent on thread %s: %s", self.thread_id, exc)
        if self.settings.cancel_timeout > 0:
            self.schedule_turn_timer(_CANCEL, self.settings.cancel_timeout)
        self._retry_until = time.monotonic() + self.settings.cancel_guard
        self._schedule_retry()

    # incoming updates and requests ---------------------------------------------------------------

    def _incoming(self, items: list[Item]) -> None:
        events: list[EventBase] = []
        tr = self.tr
        replaying = self._replaying
        for item in items:
            try:
                if isinstance(item, Req):
                    self._request(item, events)
                elif replaying and isinstance(item, _CONTENT_KINDS):
                    continue
                elif self._abandoned is not None and isinstance(item, _CONTENT_KINDS):
                    self._drop_late(events)
                else:
                    tr.update(item, events)
                    if type(item) is w.CurrentModeUpdate and not replaying and item.currentModeId:
                        self._mode_reported(item.currentModeId, events)
            except Exception as exc:  # one bad payload must not end the session
                log.exception("ACP update skipped on thread %s", self.thread_id)
                events.append(RuntimeWarningEvent(**self.identity, turn_id=tr.turn_id, code="acp.update_failed",
                                                  message=f"an agent update could not be handled: {exc!r}"))
        tr.end_batch()
        if self._cancel_pending and tr.turn_evidence:
            self._send_cancel()
        self.emit(events)

    def _drop_late(self, events: list[EventBase]) -> None:
        """Output of the abandoned prompt: never the running turn's, dropped with one warning."""
        if not self._late_warned:
            self._late_warned = True
            ended = self._abandoned
            events.append(RuntimeWarningEvent(
                **self.identity, turn_id=ended, code="acp.late_output", detail={"ended_turn": ended},
                message=f"the agent kept working on turn {ended!r} after it ended interrupted (it never acknowledged "
                        "the cancel); its output is dropped until it answers that prompt"))

    def _request(self, req: Req, events: list[EventBase]) -> None:
        method = req.method
        link = self._link or self._get_link()
        if link is None:
            return
        try:
            if method == "session/request_permission":
                self._permission(req, link, events)
            elif method == "fs/read_text_file" and self.settings.client_fs:
                p = _read_decoder.decode(req.params)
                link.respond(req.id, {"content": read_text_file(self._roots, self.start_input.cwd, p.path, p.line, p.limit)})
            elif method == "fs/write_text_file" and self.settings.client_fs:
                wp = _write_decoder.decode(req.params)
                write_text_file(self._roots, self.start_input.cwd, wp.path, wp.content)
                link.respond(req.id, {})
            elif method.startswith("terminal/") and self._terminals is not None:
                self._terminals.handle(req, link, self._roots, self.start_input.cwd)
            else:
                log.debug("answering -32601 to agent request %r on thread %s", method, self.thread_id)
                link.respond_error(req.id, METHOD_NOT_FOUND, f"Method not found: {method}")
        except FsError as exc:
            link.respond_error(req.id, exc.code, exc.message)
        except msgspec.DecodeError as exc:
            link.respond_error(req.id, INVALID_PARAMS, f"Invalid params: {exc}")
        except PaddockError as exc:
            log.debug("could not answer %r on thread %s: %s", method, self.thread_id, exc)

    def _permission(self, req: Req, link: AgentLink, events: list[EventBase]) -> None:
        p = _permission_decoder.decode(req.params)
        p = msgspec.structs.replace(p, options=self._within_mode(normalize_options(p.options)))
        tr = self.tr
        if not tr.in_turn or tr.interrupt_requested or self._abandoned is not None:
            link.respond(req.id, {"outcome": {"outcome": "cancelled"}})
            return
        tool = tr.ensure_tool(p.toolCall, events)
        tool_kind = p.toolCall.kind or tr.tool_kind_of(p.toolCall.toolCallId)
        request_id = self.requests.new_id(tr.turn_id)
        decisions = offered_decisions(p.options)
        data: dict[str, Any] = {
            "options": [{"id": o.optionId, "name": o.name, "kind": o.kind} for o in p.options],
            "tool_call_id": p.toolCall.toolCallId,
        }
        if tool_kind:
            data["tool_kind"] = tool_kind
        if p.toolCall.rawInput not in (None, {}):
            data["input"] = p.toolCall.rawInput
        title = p.toolCall.title or (tool.title if tool is not None else None)
        kind = request_kind_of_tool(tool_kind)
        opened = RequestOpened(
            **self.identity, turn_id=tr.turn_id, item_id=tool.item_id if tool is not None else None,
            request_id=request_id, kind=kind, title=title,  # type: ignore[arg-type]
            decisions=decisions, data=data,  # type: ignore[arg-type]
            subject=permission_subject(kind, p.toolCall, self.start_input.cwd, title_is_command=self.settings.title_is_command),
            provider_refs=ProviderRefs(thread=tr.native_session_id, item=p.toolCall.toolCallId or None, request=str(req.id)),
        )
        auto = auto_decision(self.start_input.runtime_mode, tool_kind, p.options, self.settings.auto_allow)
        self.open_request(events, opened, _Pending(req.id, p.options, p.toolCall.toolCallId), auto=auto)

    def _within_mode(self, options: list[w.PermissionOption]) -> list[w.PermissionOption]:
        """``options`` without those that would switch the agent to a mode the runtime mode does
        not allow. claude-agent-acp's ExitPlanMode offers "Yes, and bypass permissions"
        (optionId ``bypassPermissions``, kind ``allow_always``) and ``auto``/``acceptEdits``:
        ``accept_for_session`` would pick the first, so a plan exit in approval-required would
        leave the session in bypassPermissions. An option is a mode switch when its id is one
        of the modes the agent advertised."""
        modes = set(self.record.state.modes)
        return [o for o in options if o.optionId not in modes or self._permitted(o.optionId)]

    def answer_request(self, native: _Pending, decision: str) -> None:
        """Hook: answer ``session/request_permission`` with the option the decision picks."""
        if decision in ("decline", "cancel"):
            self.tr.mark_declined(native.tool_call_id)
        link = self._link or self._get_link()
        try:
            if link is None:
                raise SessionClosedError(self.thread_id, "the agent process is restarting")
            link.respond(native.rpc_id, outcome_for(decision, native.options))
        except PaddockError as exc:
            log.debug("permission answer not delivered on thread %s: %s", self.thread_id, exc)

    def cancel_request(self, native: _Pending) -> None:
        """Hook: the ``cancelled`` outcome, while the agent process lives."""
        link = self._link
        if link is not None and link.exit_info is None:
            try:
                link.respond(native.rpc_id, {"outcome": {"outcome": "cancelled"}})
            except PaddockError:
                pass
