"""ClaudeSessionActor: one Claude Code session (one host thread) on its own CLI process.

Thread: every method runs inside the actor, on a worker of the shared dispatcher (one message at
a time; see ``paddock.actors.DispatchActor``). The process's reader thread only ``tell``s
it decoded stdout batches (:class:`Lines`), the exit watcher the exit (:class:`Exited`); host
operations arrive as ``ask`` messages from the adapter, with the caller's timeout.

Translation (stream-json -> canonical events), per turn:
- ``stream_event`` ``content_block_start`` text/thinking -> ``item.started``
  (assistant_message/reasoning), ``text_delta``/``thinking_delta`` -> ``content.delta``; the
  ``assistant`` line carrying the whole block -> ``item.completed`` with its text;
- ``content_block_start`` tool_use -> ``item.started`` (kind from the tool name), the
  ``assistant`` ``tool_use`` line with the whole input -> ``item.updated`` (title, input); the ``user``
  ``tool_result`` -> ``item.completed`` (``failed`` when ``is_error``, ``declined`` when the host
  declined it);
- ``control_request can_use_tool`` -> ``request.opened``; the decision goes back as
  ``control_response`` allow (+ ``updatedInput``) or deny;
- ``result`` -> ``thread.token-usage.updated`` + ``turn.completed``; it is the only end of a turn.

MCP servers (the session's, from ``--mcp-config``): read back with the ``mcp_status`` control
request before the session is ready (the adapter waits until none is ``pending``,
:meth:`ProcessLink.await_mcp`; again at a turn that finds one pending) and from each turn's
``system/init`` ``mcp_servers`` -> ``mcp.status.updated`` per change (:class:`McpReadback`); a
server not connected when the first turn ends -> ``runtime.warning`` ``mcp.not_connected``.
Tool calls named ``mcp__<server>__<tool>`` are ``mcp_tool_call`` items.
"""

from __future__ import annotations

import logging
import os
import uuid

import msgspec

from paddock.actors import ExitInfo, ProcessRestarting, SessionActor, SessionRecord
from paddock.contract import (
    AccountRateLimitsUpdated,
    ContentDelta,
    EventBase,
    ItemCompleted,
    ItemStarted,
    ItemUpdated,
    JsonObject,
    JsonValue,
    ModelRerouted,
    PaddockError,
    ProviderRefs,
    RequestOpened,
    ResumeCursor,
    RuntimeWarningEvent,
    SendTurnInput,
    Session,
    SessionConfigured,
    SessionStarted,
    StreamKind,
    ThreadTokenUsageUpdated,
    TokenUsage,
    TurnAborted,
    TurnStartResult,
    TurnState,
    ValidationError,
)
from paddock.drivers._subjects import input_subject
from paddock.drivers._mcp_native import McpReadback
from paddock.supervisors import ChildContext, ExitReason

from ._cursor import cursor_for
from ._prompt import catalog_of, resolved_models, user_content
from ._link import Exited, Lines, ProcessLink
from ._messages import ClaudeState, SessionSettings
from ._tools import item_kind_of_tool, mcp_call_data, request_kind_of_item, result_text, tool_title
from ._wire import (
    ApiRetry,
    Assistant,
    AssistantMessage,
    CompactBoundary,
    ControlCancel,
    ControlRequest,
    ControlResponse,
    Malformed,
    McpServer,
    McpStatusAnswer,
    Message,
    RateLimitEvent,
    RateLimitInfo,
    Response,
    Result,
    StreamEvent,
    SseEvent,
    SystemInit,
    User,
    decode_init_answer,
    decode_mcp_answer,
)

__all__ = ["ClaudeSessionActor"]

log = logging.getLogger(__name__)

_encode = msgspec.json.Encoder().encode
_INTERRUPT = "interrupt_timeout"  # turn timer: the CLI never ended the interrupted turn
_DENY_INTERRUPTED: JsonObject = {"behavior": "deny", "message": "The turn was interrupted.", "interrupt": True}
_WINDOW_MINUTES = {"five_hour": 300, "seven_day": 10080, "seven_day_opus": 10080, "seven_day_sonnet": 10080,
                   "seven_day_overage_included": 10080}


class _Item:
    __slots__ = ("item_id", "kind", "text", "streamed", "native")

    def __init__(self, item_id: str, kind: str, native: str | None) -> None:
        self.item_id = item_id
        self.kind = kind
        self.text: list[str] = []
        self.streamed = False
        self.native = native


class _Pending:
    """The native handle of an open ``can_use_tool`` request: how to answer it."""

    __slots__ = ("native_id", "input", "suggestions", "tool_use_id")

    def __init__(self, native_id: str, inp: JsonObject, suggestions: list[JsonValue], tool_use_id: str | None) -> None:
        self.native_id = native_id
        self.input = inp
        self.suggestions = suggestions
        self.tool_use_id = tool_use_id


def _named(servers: list[McpServer] | None) -> list[tuple[McpServer, str]]:
    """The entries of a server list that name their server, with the name."""
    return [(s, s.name) for s in servers or () if s.name is not None]


class ClaudeSessionActor(SessionActor[_Pending, ClaudeState]):
    """One Claude Code session on one CLI process (see the module docstring); its state
    (:class:`ClaudeState`) is set by the adapter at start."""

    def __init__(self, record: SessionRecord[ClaudeState], settings: SessionSettings, *,
                 context: ChildContext | None = None) -> None:
        super().__init__(record, context=context)
        x = record.state
        self.link: ProcessLink = x.link
        self.settings = settings
        self.start_input = record.input
        self.session_id: str = x.session_id
        self.auto_allow: bool = x.auto_allow
        self.usage: TokenUsage = x.usage or TokenUsage()
        self.cost_base = self.usage.cost or 0.0
        self.model: str | None = self.start_input.model
        self.asked_model: str | None = self.start_input.model
        self.aliases: dict[str, str] = {}  # alias -> model (initialize answer)
        self.reroutes: set[tuple[str, str]] = set()  # (asked, answered) already reported
        self.permission_mode: str = x.permission_mode
        self.interaction_mode: str = self.start_input.interaction_mode
        self.aborted = False
        self.turns_done = 0
        self.items: dict[str, _Item] = {}
        self.blocks: dict[tuple[str, int], str] = {}  # (message id, block index) -> item id
        self.block_count: dict[str, int] = {}  # message id -> assistant lines seen
        self.stream_msg: str | None = None
        self.declined: set[str] = set()
        self.ctl_seq = 0
        self.ctl_pending: dict[str, str] = {}
        self.configured = False
        self.opened = False
        self.finished = False
        self.mcp = McpReadback(self.identity, self.start_input.mcp_servers)
        self.mcp_calls: dict[str, JsonObject] = {}  # tool_use id -> item data of an MCP call

    # lifecycle -----------------------------------------------------------------------------------

    def on_start(self) -> None:
        super().on_start()
        self.link.attach(self.actor_ref)

    def on_shutdown(self, deadline: float) -> None:
        self._end(stopped=True)

    def on_terminate(self, reason) -> None:  # type: ignore[no-untyped-def]
        self._end(stopped=not reason.abnormal, detail=None if not reason.abnormal else f"the session actor failed: {reason.error!r}")

    def _end(self, *, stopped: bool, detail: str | None = None, info: ExitInfo | None = None) -> None:
        """Finish the session once: the running turn, open requests, ``session.exited``."""
        if self.finished:
            return
        self.finished = True
        self.cancel_turn_timers()
        self.record.closed = True
        self._remove_mcp_config()
        events: list[EventBase] = []
        if not self.opened:
            self.publish(status="stopped")  # never opened (a failed start): nothing to report
        elif stopped:
            self.end_turn(events, "cancelled", error="the session was stopped", answer=True)
            events.append(self.session_exited("stopped", recoverable=self._recoverable()))
            self.publish(status="stopped", active_turn_id=None)
        else:
            self.hung_warning(events, info)  # its shim killed it: it stayed stopped for hang_timeout
            self.end_turn(events, "failed", error=detail, requests="expired")
            events.append(self.session_exited(detail or "the session ended", recoverable=self._recoverable(),
                                              info=info))
            self.publish(status="error", active_turn_id=None, last_error=detail)
        self.emit(events)

    def _remove_mcp_config(self) -> None:
        path = self.record.state.mcp_config
        if path is not None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.warning("could not remove the MCP server file of thread %s: %s", self.thread_id, exc)

    def _recoverable(self) -> bool:
        # Observed: a session killed during its first turn cannot be resumed ("No conversation
        # found"); once a turn completed (or it was resumed) it is saved under CLAUDE_CONFIG_DIR.
        return self.turns_done > 0 or self.record.state.resumed

    # dispatch ------------------------------------------------------------------------------------

    def on_receive(self, message: object) -> object:
        if isinstance(message, Lines):
            self._lines(message)
            return None
        if isinstance(message, Exited):
            self._exited(message.info)
            return None
        return super().on_receive(message)  # the control messages (Open, SendTurn, ...)

    # helpers -------------------------------------------------------------------------------------

    def _cursor(self) -> ResumeCursor:
        return cursor_for(self.settings.driver, self.session_id, self.usage)

    def _write(self, message: JsonObject) -> None:
        handle = self.link.handle
        if handle is None or self.link.exit_info is not None:
            raise self.closed_error("the Claude Code process has exited")
        # Never blocks the actor: a CLI that stopped reading fails the write once its bound is full.
        handle.write_lines([_encode(message)])

    def _control(self, subtype: str, **fields: JsonValue) -> str:
        self.ctl_seq += 1
        rid = f"paddock_{self.ctl_seq}_{uuid.uuid4().hex[:8]}"
        self._write({"type": "control_request", "request_id": rid, "request": {"subtype": subtype, **fields}})
        self.ctl_pending[rid] = subtype
        return rid

    def _refs(self, item: str | None = None, request: str | None = None) -> ProviderRefs:
        return ProviderRefs(thread=self.session_id, item=item, request=request)

    # open ----------------------------------------------------------------------------------------

    def open_session(self) -> Session:
        """Hook: the process is ready (``initialize`` answered); report the session."""
        if self.finished:
            raise self.closed_error("the Claude Code process has exited")
        self.opened = True
        x = self.record.state
        inp = self.start_input
        init = self.link.init_response
        answer = decode_init_answer(init.response if init is not None else msgspec.Raw(b"null"))
        events: list[EventBase] = []
        if x.resume_failed:
            events.append(RuntimeWarningEvent(**self.identity, code="claude.resume_failed", message=x.resume_detail or ""))
        events.append(SessionStarted(
            **self.identity, cwd=inp.cwd, model=self.model, runtime_mode=inp.runtime_mode,
            interaction_mode=inp.interaction_mode, resumed=x.resumed,
            resume_failed=x.resume_failed, detail=x.resume_detail,
            provider_refs=self._refs(),
        ))
        config: JsonObject = {"session_id": self.session_id, "permission_mode": self.permission_mode}
        if answer.pid is not msgspec.UNSET:
            config["pid"] = answer.pid
        models: list[JsonValue] = [m.value for m in answer.models or () if m.value]
        if models:
            config["models"] = models
            if self.record.report_models is not None:
                self.record.report_models(catalog_of(answer))
        self.aliases = resolved_models(answer)
        if isinstance(answer.output_style, str):
            config["output_style"] = answer.output_style
        events.append(SessionConfigured(**self.identity, config=config, provider_refs=self._refs()))
        if self.mcp and self.link.mcp_answer is not None:
            self._mcp_status(self.link.mcp_answer, events)
        self.emit(events)
        return self.publish(status="ready", resume_cursor=self._cursor(), resumed=x.resumed)

    # turns ---------------------------------------------------------------------------------------

    def start_turn(self, inp: SendTurnInput, turn_id: str) -> TurnStartResult:
        """Hook: apply model and mode (control requests), then write the user message. A CLI that
        exited, or died unnoticed yet, leaves the turn to the session started after it (the
        base's ``ProcessRestarting``/``ProcessGone``); a stopped one refuses it at once."""
        if self.link.handle is not None and self.link.exit_info is not None and not self.finished:
            raise ProcessRestarting(self.thread_id, "the Claude Code process has exited", **self.owner)
        self.refuse_unreachable(self.link.handle, "the Claude Code process")
        if inp.model and inp.model != self.model:
            self._control("set_model", model=inp.model)
            self.model = inp.model
            self.asked_model = inp.model
        mode = inp.interaction_mode
        if mode is not None and mode != self.interaction_mode:
            native = self.settings.permission_modes["plan"] if mode == "plan" else self.record.state.runtime_permission_mode
            self._control("set_permission_mode", mode=native)
            self.permission_mode = native
            self.interaction_mode = mode
        self._write({"type": "user", "message": {"role": "user", "content": user_content(inp.text, inp.attachments)},
                     "parent_tool_use_id": None, "session_id": self.session_id})
        self.aborted = False
        self.emit([self.turn.start(turn_id, input_text=inp.text, model=self.model,
                                   interaction_mode=self.interaction_mode, provider_refs=self._refs())])
        cursor = self._cursor()
        self.publish(status="running", active_turn_id=turn_id, resume_cursor=cursor, model=self.model)
        return TurnStartResult(thread_id=self.thread_id, turn_id=turn_id, resume_cursor=cursor)

    # thread operations ---------------------------------------------------------------------------

    def fork(self, at_turn: int | None) -> ResumeCursor:
        """Hook (``Fork``): the cursor of a copy still to be made: its first start runs the CLI
        with ``--resume`` of this session, ``--fork-session`` and the copy's new id. Only a
        saved session can be copied (one turn completed, or resumed)."""
        if self.turn.in_turn:
            raise ValidationError("fork_thread", f"turn {self.turn.turn_id!r} is still running; fork between turns",
                                  **self.where())
        if not self._recoverable():
            raise ValidationError("fork_thread", "the thread has no saved turn yet; there is nothing to fork",
                                  **self.where())
        return cursor_for(self.settings.driver, str(uuid.uuid4()), fork_of=self.session_id)

    def compact(self) -> TurnStartResult:
        """Hook (``Compact``): the ``/compact`` slash command as a stream-json user message.
        Claude Code summarizes the conversation with one model request and answers with a
        ``compact_boundary`` system message and a ``result``, which ends the turn here."""
        if self.turn.in_turn:
            raise ValidationError("compact_thread", f"turn {self.turn.turn_id!r} is still running; compact between "
                                  "turns", **self.where())
        turn_id = self.turn.new_id(None)
        self._write({"type": "user", "message": {"role": "user", "content": "/compact"},
                     "parent_tool_use_id": None, "session_id": self.session_id})
        self.aborted = False
        self.emit([self.turn.start(turn_id, input_text=None, model=self.model, interaction_mode=self.interaction_mode,
                                   provider_refs=self._refs())])
        cursor = self._cursor()
        self.publish(status="running", active_turn_id=turn_id, resume_cursor=cursor)
        return TurnStartResult(thread_id=self.thread_id, turn_id=turn_id, resume_cursor=cursor)

    def close_turn(self, events: list[EventBase], state: TurnState, usage: object) -> TokenUsage | None:
        """Hook: complete the turn's open items before its ``turn.completed``."""
        item_status = "completed" if state == "completed" else ("failed" if state == "failed" else "cancelled")
        for item in list(self.items.values()):
            self._complete(events, item, status=item_status, text="".join(item.text) if item.kind in (
                "assistant_message", "reasoning") else None)
        self.items.clear()
        self.blocks.clear()
        self.block_count.clear()
        self.declined.clear()
        self.mcp_calls.clear()
        self.stream_msg = None
        self.aborted = False
        if self.mcp:
            events += self.mcp.first_turn_ended(self.turn.turn_id)
        return usage if isinstance(usage, TokenUsage) else None

    def cancel_turn(self, events: list[EventBase]) -> None:
        """Hook: control_request ``interrupt``; ``turn.aborted`` at once (no new item after it)."""
        try:
            self._control("interrupt")
        except PaddockError as exc:
            log.debug("interrupt not sent on thread %s: %s", self.thread_id, exc)
        self.aborted = True
        events.append(TurnAborted(**self.identity, turn_id=self.turn.turn_id, reason="interrupted by the host"))
        if self.settings.interrupt_timeout > 0:
            self.schedule_turn_timer(_INTERRUPT, self.settings.interrupt_timeout)

    def on_turn_timer(self, name: str, turn_id: str) -> None:
        if name == _INTERRUPT:
            detail = f"Claude Code did not end the interrupted turn within {self.settings.interrupt_timeout:g} s"
            self.end_unacknowledged_turn(turn_id, "claude.interrupt_unacknowledged", detail)

    # process exit --------------------------------------------------------------------------------

    def _exited(self, info: ExitInfo) -> None:
        if info.requested or self.finished:
            return
        detail = f"Claude Code exited (exit code {info.returncode})" if info.returncode >= 0 else \
            f"Claude Code was killed by signal {-info.returncode}"
        self._end(stopped=False, detail=detail, info=info)
        self.exit(ExitReason("normal"))  # the session scope closes behind it

    # stdout --------------------------------------------------------------------------------------

    def _lines(self, batch: Lines) -> None:
        events: list[EventBase] = []
        if batch.skipped:
            events.append(RuntimeWarningEvent(
                **self.identity, turn_id=self.turn.turn_id, code="transport.malformed_line",
                message=f"skipped {len(batch.skipped)} non-JSON stdout line(s) from Claude Code",
                detail={"first": batch.skipped[0].decode("utf-8", "replace")},
            ))
        for msg in batch.messages:
            try:
                self._message(msg, events)
            except Exception as exc:  # one odd message must not end the session
                log.exception("Claude Code message skipped on thread %s", self.thread_id)
                self._message_failed(events, repr(exc))
        self.emit(events)

    def _message_failed(self, events: list[EventBase], why: str) -> None:
        events.append(RuntimeWarningEvent(**self.identity, turn_id=self.turn.turn_id, code="claude.message_failed",
                                          message=f"a Claude Code message could not be handled: {why}"))

    def _message(self, msg: Message, events: list[EventBase]) -> None:
        in_turn = self.turn.turn_id is not None
        match msg:
            case StreamEvent(event=event) if in_turn:
                self._stream_event(event, events)
            case Assistant(message=message) if in_turn:
                self._assistant(message, events)
            case User(isReplay=replay) if in_turn and not replay:
                self._user(msg, events)
            case Result():
                self._result(msg, events)
            case SystemInit():
                self._system_init(msg, events)
            case CompactBoundary() if in_turn:
                self._compacted(msg, events)
            case ApiRetry():
                self._api_retry(msg, events)
            case RateLimitEvent(rate_limit_info=info):
                self._rate_limits(info, events)
            case ControlRequest():
                self._control_request(msg, events)
            case ControlResponse(response=response):
                self._control_response(response, events)
            case ControlCancel(request_id=native):
                for rid in self.requests.take_where(lambda p: p.native_id == native):
                    events.append(self.resolved(rid, "cancelled"))
            case Malformed():
                self._message_failed(events, f"{msg.type}: {msg.error}")
            case _:
                pass  # unknown types, other system subtypes, lines outside a turn: ignored

    def _system_init(self, msg: SystemInit, events: list[EventBase]) -> None:
        sid = msg.session_id
        if isinstance(sid, str) and sid and sid != self.session_id:
            self.session_id = sid
            self.record.state.session_id = sid
        if isinstance(msg.model, str):
            self._check_reroute(msg.model, events)
            self.model = msg.model
        if self.mcp:
            self._mcp_init(msg, events)
        if not self.configured:
            self.configured = True
            present = (("session_id", msg.session_id), ("model", msg.model), ("permissionMode", msg.permissionMode),
                       ("cwd", msg.cwd), ("claude_code_version", msg.claude_code_version), ("tools", msg.tools),
                       ("output_style", msg.output_style))
            config: JsonObject = {k: v for k, v in present if v is not msgspec.UNSET}
            events.append(SessionConfigured(**self.identity, turn_id=self.turn.turn_id, config=config,
                                            provider_refs=self._refs()))

    def _compacted(self, msg: CompactBoundary, events: list[EventBase]) -> None:
        # Claude Code's compaction (`/compact`, or its own when the context fills) ends with
        # this message: {"subtype": "compact_boundary", "uuid", "compact_metadata": {"trigger", ...}}.
        uid = msg.uuid or f"compact-{uuid.uuid4().hex[:12]}"
        meta = msg.compact_metadata
        data: JsonObject = {"native_type": "compact_boundary", **({"compact_metadata": meta} if isinstance(meta, dict) else {})}
        item = self._start_item(events, uid, "other", uid, title="conversation compacted", data=data)
        if item is not None:
            self._complete(events, item, data=data)

    def _api_retry(self, msg: ApiRetry, events: list[EventBase]) -> None:
        detail = msg.detail
        events.append(RuntimeWarningEvent(
            **self.identity, turn_id=self.turn.turn_id, code="claude.api_retry",
            message=f"the model API failed ({detail.get('error_status')} {detail.get('error')}); retry "
                    f"{detail.get('attempt')} of {detail.get('max_retries')}",
            detail=detail,
        ))

    def _rate_limits(self, info: RateLimitInfo, events: list[EventBase]) -> None:
        # Also sent with only a status (a model response without the unified headers): no window.
        windows = [{"name": info.rateLimitType or "unified",
                    "used_percent": None if info.utilization is None else info.utilization * 100,
                    "resets_at": info.resetsAt, "window_minutes": _WINDOW_MINUTES.get(info.rateLimitType or "")}
                   ] if (info.rateLimitType, info.resetsAt, info.utilization) != (None, None, None) else []
        limits: dict[str, object] = {"windows": windows, "status": info.status}
        for key, value in (("overage_status", info.overageStatus), ("overage_resets_at", info.overageResetsAt),
                           ("using_overage", info.isUsingOverage)):
            if value is not None:
                limits[key] = value
        events.append(AccountRateLimitsUpdated(**self.identity, limits=limits))  # an account's, not the turn's

    # items ---------------------------------------------------------------------------------------

    def _start_item(self, events: list, item_id: str, kind: str, native: str | None, *, title: str | None = None,
                    data: JsonObject | None = None) -> _Item | None:
        if self.aborted or item_id in self.items:
            return self.items.get(item_id)  # no new item after turn.aborted (grammar rule 6)
        item = _Item(item_id, kind, native)
        self.items[item_id] = item
        events.append(ItemStarted(**self.identity, turn_id=self.turn.turn_id, item_id=item_id, kind=kind, title=title,  # type: ignore[arg-type]
                                  data=data, provider_refs=self._refs(item=native)))
        return item

    def _complete(self, events: list, item: _Item, *, status: str = "completed", text: str | None = None,
                  data: JsonObject | None = None) -> None:
        self.items.pop(item.item_id, None)
        events.append(ItemCompleted(**self.identity, turn_id=self.turn.turn_id, item_id=item.item_id, kind=item.kind,  # type: ignore[arg-type]
                                    status=status, text=text, data=data,  # type: ignore[arg-type]
                                    provider_refs=self._refs(item=item.native)))

    def _delta(self, events: list, item: _Item, text: str) -> None:
        if not text:
            return
        item.text.append(text)
        item.streamed = True
        stream: StreamKind = "assistant_text" if item.kind == "assistant_message" else "reasoning_text"
        events.append(ContentDelta(**self.identity, turn_id=self.turn.turn_id, item_id=item.item_id, stream=stream,
                                   delta=text))

    def _block_id(self, msg_id: str, index: int) -> str:
        return f"{self.turn.turn_id}:{msg_id}:{index}"

    def _stream_event(self, ev: SseEvent, events: list[EventBase]) -> None:
        etype = ev.type
        if etype == "message_start":
            self.stream_msg = ev.message.id if ev.message is not None else None
        elif etype == "content_block_start" and self.stream_msg:
            block = ev.content_block
            btype = block.type if block is not None else None
            if btype in ("text", "thinking"):
                index = ev.index or 0
                item_id = self._block_id(self.stream_msg, index)
                kind = "assistant_message" if btype == "text" else "reasoning"
                if self._start_item(events, item_id, kind, self.stream_msg) is not None:
                    self.blocks[(self.stream_msg, index)] = item_id
            elif btype == "tool_use" and block is not None and block.id is not None:
                # The call starts now; its input streams as input_json_delta and arrives whole
                # with the `assistant` line (then item.updated).
                name = block.name or "tool"
                self._start_item(events, block.id, item_kind_of_tool(name), block.id, title=name,
                                 data={"tool": name})
        elif etype == "content_block_delta" and self.stream_msg:
            block_item_id = self.blocks.get((self.stream_msg, ev.index or 0))
            item = self.items.get(block_item_id) if block_item_id else None
            delta = ev.delta
            if item is None or delta is None:
                return
            if delta.type == "text_delta":
                self._delta(events, item, delta.text or "")
            elif delta.type == "thinking_delta":
                self._delta(events, item, delta.thinking or "")

    def _check_reroute(self, seen: str, events: list[EventBase]) -> None:
        """``model.rerouted`` once per model the CLI answers with that is neither the model asked
        for nor what that alias resolves to (``system/init`` and each ``assistant`` message name
        the model that really answered)."""
        asked = self.asked_model
        if not asked or seen in (asked, self.aliases.get(asked)) or seen.split("[", 1)[0] == asked.split("[", 1)[0]:
            return
        if (asked, seen) in self.reroutes:
            return
        self.reroutes.add((asked, seen))
        events.append(ModelRerouted(**self.identity, turn_id=self.turn.turn_id, from_model=asked, to_model=seen,
                                    reason="Claude Code answered with another model than the one asked for"))

    def _assistant(self, message: AssistantMessage, events: list[EventBase]) -> None:
        msg_id = message.id or f"m{uuid.uuid4().hex[:8]}"
        if message.model is not None and message.model != "<synthetic>":
            self._check_reroute(message.model, events)
        for block in message.content:
            # Protocol fact: each content block comes as its own `assistant` line with the same
            # message id, in block order; the n-th line is block n.
            index = self.block_count.get(msg_id, 0)
            self.block_count[msg_id] = index + 1
            btype = block.type
            if btype in ("text", "thinking"):
                text = (block.text if btype == "text" else block.thinking) or ""
                item_id = self.blocks.pop((msg_id, index), None) or self._block_id(msg_id, index)
                item = self.items.get(item_id)
                if item is None:
                    item = self._start_item(events, item_id, "assistant_message" if btype == "text" else "reasoning",
                                            msg_id)
                    if item is None:
                        continue
                if not item.streamed:
                    self._delta(events, item, text)
                streamed = "".join(item.text)
                self._complete(events, item, text=text if text.startswith(streamed) else streamed)
            elif btype == "tool_use":
                tool_id = block.id or f"{msg_id}:{index}"
                name = block.name or "tool"
                inp: JsonObject = block.input if block.input is not None else {}
                kind = item_kind_of_tool(name)
                title = tool_title(name, inp)
                data: JsonObject = {"tool": name, "input": inp}
                if kind == "mcp_tool_call":
                    data = mcp_call_data(name, inp, self.mcp.names)
                    self.mcp_calls[tool_id] = data
                if tool_id in self.items:
                    events.append(ItemUpdated(**self.identity, turn_id=self.turn.turn_id, item_id=tool_id, kind=kind,  # type: ignore[arg-type]
                                              title=title, data=data, provider_refs=self._refs(item=tool_id)))
                else:
                    self._start_item(events, tool_id, kind, tool_id, title=title, data=data)

    def _user(self, msg: User, events: list[EventBase]) -> None:
        content = msg.message.content
        if not isinstance(content, list):
            return
        extra = msg.tool_use_result
        for block in content:
            if block.type != "tool_result":
                continue
            tool_id = block.tool_use_id
            item = self.items.get(tool_id) if tool_id is not None else None
            if item is None:
                continue
            is_error = bool(block.is_error)
            status = "declined" if tool_id in self.declined else ("failed" if is_error else "completed")
            data: JsonObject = {**self.mcp_calls.pop(item.item_id, {}), "is_error": is_error}
            if isinstance(extra, dict):
                data.update({k: extra[k] for k in ("stdout", "stderr", "interrupted") if k in extra})
            self._complete(events, item, status=status, text=result_text(block.content), data=data)

    def _result(self, msg: Result, events: list[EventBase]) -> None:
        if self.turn.turn_id is None:
            return  # a late result of a turn the driver already ended (interrupt timeout)
        raw = msg.usage
        turn_usage = None
        if raw is not None:
            fresh = raw.input_tokens or 0
            cache_read = raw.cache_read_input_tokens or 0
            cache_made = raw.cache_creation_input_tokens or 0
            out = raw.output_tokens or 0
            inp = fresh + cache_read + cache_made
            turn_usage = TokenUsage(input_tokens=inp, output_tokens=out, cached_input_tokens=cache_read,
                                    total_tokens=inp + out)
            u = self.usage
            window = None
            for m in (msg.modelUsage or {}).values():
                if m.contextWindow:
                    window = m.contextWindow
            cost = msg.total_cost_usd
            # Protocol fact: total_cost_usd is cumulative per process; usage is per turn.
            total_cost = self.cost_base + cost if cost is not None else u.cost
            self.usage = TokenUsage(
                input_tokens=(u.input_tokens or 0) + inp, output_tokens=(u.output_tokens or 0) + out,
                cached_input_tokens=(u.cached_input_tokens or 0) + cache_read,
                total_tokens=(u.total_tokens or 0) + inp + out,
                context_window=window or u.context_window,
                cost=max(total_cost, u.cost or 0.0) if total_cost is not None else None,
                currency="USD" if total_cost is not None else None,
            )
            self.record.state.usage = self.usage
            events.append(ThreadTokenUsageUpdated(**self.identity, turn_id=self.turn.turn_id, usage=self.usage))
        is_error = bool(msg.is_error)
        terminal = msg.terminal_reason
        state: TurnState
        if self.turn.interrupt_requested and (is_error or (terminal is not None and terminal.startswith("aborted"))):
            state, stop, error = "interrupted", terminal or msg.subtype, None
        elif is_error:
            errors = msg.errors
            error = msg.result or ("; ".join(map(str, errors)) if errors else str(msg.subtype))
            if msg.api_error_status:
                error = f"model API error {msg.api_error_status}: {error}"
            state, stop = "failed", msg.stop_reason or msg.subtype
        else:
            state, stop, error = "completed", msg.stop_reason, None
        self.turns_done += 1
        self.end_turn(events, state, stop_reason=stop, error=error, usage=turn_usage)
        self.publish(status="ready", active_turn_id=None, resume_cursor=self._cursor())

    # MCP readback ----------------------------------------------------------------------------------

    def _mcp_report(self, name: str, status: JsonValue, detail: str | None, tools: int | None,
                    events: list[EventBase]) -> bool:
        """Map one native status; True while the server is still ``pending``."""
        turn_id = self.turn.turn_id
        if status == "connected":
            events += self.mcp.report(name, "connected", tools=tools, turn_id=turn_id)
        elif status == "failed":
            # system/init names no reason; keep the one mcp_status gave.
            detail = detail or self.mcp.detail.get(name) or "Claude Code could not start it"
            events += self.mcp.report(name, "failed", detail=detail, turn_id=turn_id)
        elif status == "pending":
            return True
        else:  # needs-auth, disabled: loaded but unusable
            events += self.mcp.report(name, "not_connected", detail=f"Claude Code reports {status}", turn_id=turn_id)
        return False

    def _mcp_status(self, answer: McpStatusAnswer, events: list[EventBase]) -> None:
        # control_request mcp_status -> {mcpServers: [{name, status, error?, tools?: [{name}]...}]}
        listed = _named(answer.mcpServers)
        for entry, name in listed:
            count = len(entry.tools) if entry.tools is not None else None
            error = entry.error if isinstance(entry.error, str) else None
            self._mcp_report(name, entry.status, error, count, events)
        events += self.mcp.absent((name for _, name in listed), turn_id=self.turn.turn_id,
                                  detail="Claude Code did not load this server")
        # A server still pending: the next turn's system/init reports it again.

    def _mcp_init(self, msg: SystemInit, events: list[EventBase]) -> None:
        # system/init carries {mcp_servers: [{name, status}], tools: [..., "mcp__<server>__<tool>"]}
        if msg.mcp_servers is None:
            return
        tools = [t for t in msg.tools or () if isinstance(t, str)] if msg.tools is not msgspec.UNSET else []
        pending = False
        listed = _named(msg.mcp_servers)
        for entry, name in listed:
            count = sum(1 for t in tools if t.startswith(f"mcp__{name}__"))
            pending |= self._mcp_report(name, entry.status, None, count, events)
        events += self.mcp.absent([name for _, name in listed], turn_id=self.turn.turn_id,
                                  detail="Claude Code did not load this server")
        if pending:
            self._control("mcp_status")

    # requests ------------------------------------------------------------------------------------

    def _control_response(self, response: Response, events: list[EventBase]) -> None:
        subtype = self.ctl_pending.pop(response.request_id or "", None)
        if subtype == "mcp_status" and response.subtype == "success":
            self._mcp_status(decode_mcp_answer(response.response), events)
            return
        if response.subtype == "error":
            events.append(RuntimeWarningEvent(
                **self.identity, turn_id=self.turn.turn_id, code="claude.control_error",
                message=f"Claude Code refused control request {subtype or '?'!r}: {response.error}",
            ))

    def _control_request(self, msg: ControlRequest, events: list[EventBase]) -> None:
        native = str(msg.request_id)
        req = msg.request
        if req.subtype != "can_use_tool":
            self._write({"type": "control_response", "response": {
                "subtype": "error", "request_id": native,
                "error": f"Unsupported control request subtype: {req.subtype}"}})
            return
        inp: JsonObject = req.input if req.input is not None else {}
        if self.turn.turn_id is None or self.aborted:
            self._answer_native(native, _DENY_INTERRUPTED)
            return
        tool = req.tool_name or "tool"
        tool_use_id = req.tool_use_id
        kind = item_kind_of_tool(tool)
        if tool_use_id and tool_use_id not in self.items:
            self._start_item(events, tool_use_id, kind, tool_use_id, title=tool_title(tool, inp),
                             data={"tool": tool, "input": inp})
        suggestions = req.permission_suggestions or []
        request_id = self.requests.new_id(self.turn.turn_id)
        decisions = ("accept", "accept_for_session", "decline", "cancel") if suggestions else ("accept", "decline", "cancel")
        data: JsonObject = {"tool": tool, "input": inp}
        if suggestions:
            data["permission_suggestions"] = suggestions
        if req.blocked_path:
            data["blocked_path"] = req.blocked_path
        request_kind = request_kind_of_item(kind)
        opened = RequestOpened(
            **self.identity, turn_id=self.turn.turn_id, item_id=tool_use_id, request_id=request_id,
            kind=request_kind, title=req.description or req.display_name or tool,  # type: ignore[arg-type]
            detail=tool_title(tool, inp), decisions=decisions, data=data,  # type: ignore[arg-type]
            # can_use_tool names no cwd: the session's is the one Claude Code was started in.
            subject=input_subject(request_kind, tool, inp, self.start_input.cwd),
            provider_refs=self._refs(item=tool_use_id, request=native),
        )
        self.open_request(events, opened, _Pending(native, inp, suggestions, tool_use_id),
                          auto="accept" if self.auto_allow else None)

    def _answer_native(self, native: str, response: JsonObject) -> None:
        try:
            self._write({"type": "control_response",
                         "response": {"subtype": "success", "request_id": native, "response": response}})
        except PaddockError as exc:
            log.debug("permission answer not delivered on thread %s: %s", self.thread_id, exc)

    def answer_request(self, native: _Pending, decision: str) -> None:
        """Hook: accept -> allow (+ ``updatedInput``), accept_for_session -> allow with the CLI's
        permission suggestions, decline -> deny, cancel -> deny and interrupt."""
        if decision == "accept":
            response: JsonObject = {"behavior": "allow", "updatedInput": native.input}
        elif decision == "accept_for_session":
            response = {"behavior": "allow", "updatedInput": native.input}
            if native.suggestions:
                response["updatedPermissions"] = native.suggestions
        else:
            response = {"behavior": "deny", "message": "The user declined this action." if decision == "decline"
                        else "The user cancelled this action.", "interrupt": decision == "cancel"}
            if native.tool_use_id:
                self.declined.add(native.tool_use_id)
        self._answer_native(native.native_id, response)

    def cancel_request(self, native: _Pending) -> None:
        """Hook: deny and interrupt, while the CLI lives."""
        if self.link.exit_info is None:
            self._answer_native(native.native_id, _DENY_INTERRUPTED)
