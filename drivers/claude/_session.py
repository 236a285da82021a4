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
from typing import Any

import msgspec

from paddock.actors import ExitInfo, ProcessRestarting, SessionActor, SessionRecord
from paddock.contract import (
    ContentDelta,
    EventBase,
    ItemCompleted,
    ItemStarted,
    ItemUpdated,
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

__all__ = ["ClaudeSessionActor"]

log = logging.getLogger(__name__)

_encode = msgspec.json.Encoder().encode
_INTERRUPT = "interrupt_timeout"  # turn timer: the CLI never ended the interrupted turn
_DENY_INTERRUPTED = {"behavior": "deny", "message": "The turn was interrupted.", "interrupt": True}


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

    def __init__(self, native_id: str, inp: dict[str, Any], suggestions: list[Any], tool_use_id: str | None) -> None:
        self.native_id = native_id
        self.input = inp
        self.suggestions = suggestions
        self.tool_use_id = tool_use_id


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
        self.mcp_calls: dict[str, dict[str, Any]] = {}  # tool_use id -> item data of an MCP call

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

    def _write(self, message: dict[str, Any]) -> None:
        handle = self.link.handle
        if handle is None or self.link.exit_info is not None:
            raise self.closed_error("the Claude Code process has exited")
        # Never blocks the actor: a CLI that stopped reading fails the write once its bound is full.
        handle.write_lines([_encode(message)])

    def _control(self, subtype: str, **fields: Any) -> str:
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
        init = self.link.init_response or {}
        answer = init.get("response") or {}
        events: list[EventBase] = []
        if x.resume_failed:
            events.append(RuntimeWarningEvent(**self.identity, code="claude.resume_failed", message=x.resume_detail or ""))
        events.append(SessionStarted(
            **self.identity, cwd=inp.cwd, model=self.model, runtime_mode=inp.runtime_mode,
            interaction_mode=inp.interaction_mode, resumed=x.resumed,
            resume_failed=x.resume_failed, detail=x.resume_detail,
            provider_refs=self._refs(),
        ))
        config: dict[str, Any] = {"session_id": self.session_id, "permission_mode": self.permission_mode}
        if "pid" in answer:
            config["pid"] = answer["pid"]
        models = [m.get("value") for m in answer.get("models") or () if isinstance(m, dict) and m.get("value")]
        if models:
            config["models"] = models
            if self.record.report_models is not None:
                self.record.report_models(catalog_of(answer))
        self.aliases = resolved_models(answer)
        if isinstance(answer.get("output_style"), str):
            config["output_style"] = answer["output_style"]
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
                events.append(RuntimeWarningEvent(**self.identity, turn_id=self.turn.turn_id, code="claude.message_failed",
                                                  message=f"a Claude Code message could not be handled: {exc!r}"))
        self.emit(events)

    def _message(self, msg: dict[str, Any], events: list[EventBase]) -> None:
        kind = msg.get("type")
        if kind == "stream_event":
            if self.turn.turn_id is not None:
                self._stream_event(msg.get("event") or {}, events)
        elif kind == "assistant":
            if self.turn.turn_id is not None:
                self._assistant(msg.get("message") or {}, events)
        elif kind == "user":
            if self.turn.turn_id is not None and not msg.get("isReplay"):
                self._user(msg, events)
        elif kind == "result":
            self._result(msg, events)
        elif kind == "system":
            self._system(msg, events)
        elif kind == "control_request":
            self._control_request(msg, events)
        elif kind == "control_response":
            self._control_response(msg.get("response") or {}, events)
        elif kind == "control_cancel_request":
            native = msg.get("request_id")
            for rid in self.requests.take_where(lambda p: p.native_id == native):
                events.append(self.resolved(rid, "cancelled"))

    def _system(self, msg: dict[str, Any], events: list[EventBase]) -> None:
        sub = msg.get("subtype")
        if sub == "init":
            sid = msg.get("session_id")
            if isinstance(sid, str) and sid and sid != self.session_id:
                self.session_id = sid
                self.record.state.session_id = sid
            if isinstance(msg.get("model"), str):
                self._check_reroute(msg["model"], events)
                self.model = msg["model"]
            if self.mcp:
                self._mcp_init(msg, events)
            if not self.configured:
                self.configured = True
                config: dict[str, Any] = {k: msg[k] for k in ("session_id", "model", "permissionMode", "cwd", "claude_code_version",
                                              "tools", "output_style") if k in msg}
                events.append(SessionConfigured(**self.identity, turn_id=self.turn.turn_id, config=config,
                                                provider_refs=self._refs()))
        elif sub == "compact_boundary" and self.turn.turn_id is not None:
            # Claude Code's compaction (`/compact`, or its own when the context fills) ends with
            # this message: {"subtype": "compact_boundary", "uuid", "compact_metadata": {"trigger", ...}}.
            uid = str(msg.get("uuid") or f"compact-{uuid.uuid4().hex[:12]}")
            meta = msg.get("compact_metadata")
            data = {"native_type": "compact_boundary", **({"compact_metadata": meta} if isinstance(meta, dict) else {})}
            item = self._start_item(events, uid, "other", uid, title="conversation compacted", data=data)
            if item is not None:
                self._complete(events, item, data=data)
        elif sub == "api_retry":
            events.append(RuntimeWarningEvent(
                **self.identity, turn_id=self.turn.turn_id, code="claude.api_retry",
                message=f"the model API failed ({msg.get('error_status')} {msg.get('error')}); retry "
                        f"{msg.get('attempt')} of {msg.get('max_retries')}",
                detail={k: msg[k] for k in ("attempt", "max_retries", "retry_delay_ms", "error_status", "error") if k in msg},
            ))

    # items ---------------------------------------------------------------------------------------

    def _start_item(self, events: list, item_id: str, kind: str, native: str | None, *, title: str | None = None,
                    data: dict[str, Any] | None = None) -> _Item | None:
        if self.aborted or item_id in self.items:
            return self.items.get(item_id)  # no new item after turn.aborted (grammar rule 6)
        item = _Item(item_id, kind, native)
        self.items[item_id] = item
        events.append(ItemStarted(**self.identity, turn_id=self.turn.turn_id, item_id=item_id, kind=kind, title=title,  # type: ignore[arg-type]
                                  data=data, provider_refs=self._refs(item=native)))
        return item

    def _complete(self, events: list, item: _Item, *, status: str = "completed", text: str | None = None,
                  data: dict[str, Any] | None = None) -> None:
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

    def _stream_event(self, ev: dict[str, Any], events: list[EventBase]) -> None:
        etype = ev.get("type")
        if etype == "message_start":
            self.stream_msg = (ev.get("message") or {}).get("id")
        elif etype == "content_block_start" and self.stream_msg:
            block = ev.get("content_block") or {}
            btype = block.get("type")
            if btype in ("text", "thinking"):
                index = int(ev.get("index") or 0)
                item_id = self._block_id(self.stream_msg, index)
                kind = "assistant_message" if btype == "text" else "reasoning"
                if self._start_item(events, item_id, kind, self.stream_msg) is not None:
                    self.blocks[(self.stream_msg, index)] = item_id
            elif btype == "tool_use" and isinstance(block.get("id"), str):
                # The call starts now; its input streams as input_json_delta and arrives whole
                # with the `assistant` line (then item.updated).
                name = str(block.get("name") or "tool")
                self._start_item(events, block["id"], item_kind_of_tool(name), block["id"], title=name,
                                 data={"tool": name})
        elif etype == "content_block_delta" and self.stream_msg:
            block_item_id = self.blocks.get((self.stream_msg, int(ev.get("index") or 0)))
            item = self.items.get(block_item_id) if block_item_id else None
            if item is None:
                return
            delta = ev.get("delta") or {}
            if delta.get("type") == "text_delta":
                self._delta(events, item, delta.get("text") or "")
            elif delta.get("type") == "thinking_delta":
                self._delta(events, item, delta.get("thinking") or "")

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

    def _assistant(self, message: dict[str, Any], events: list[EventBase]) -> None:
        msg_id = message.get("id") or f"m{uuid.uuid4().hex[:8]}"
        if isinstance(message.get("model"), str) and message["model"] != "<synthetic>":
            self._check_reroute(message["model"], events)
        for block in message.get("content") or ():
            if not isinstance(block, dict):
                continue
            # Protocol fact: each content block comes as its own `assistant` line with the same
            # message id, in block order; the n-th line is block n.
            index = self.block_count.get(msg_id, 0)
            self.block_count[msg_id] = index + 1
            btype = block.get("type")
            if btype in ("text", "thinking"):
                text = block.get("text") if btype == "text" else block.get("thinking")
                text = text if isinstance(text, str) else ""
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
                tool_id = block.get("id") or f"{msg_id}:{index}"
                name = block.get("name") or "tool"
                block_input = block.get("input")
                inp: dict[str, Any] = block_input if isinstance(block_input, dict) else {}
                kind = item_kind_of_tool(name)
                title, data = tool_title(name, inp), {"tool": name, "input": inp}
                if kind == "mcp_tool_call":
                    data = mcp_call_data(name, inp, self.mcp.names)
                    self.mcp_calls[tool_id] = data
                if tool_id in self.items:
                    events.append(ItemUpdated(**self.identity, turn_id=self.turn.turn_id, item_id=tool_id, kind=kind,  # type: ignore[arg-type]
                                              title=title, data=data, provider_refs=self._refs(item=tool_id)))
                else:
                    self._start_item(events, tool_id, kind, tool_id, title=title, data=data)

    def _user(self, msg: dict[str, Any], events: list[EventBase]) -> None:
        content = (msg.get("message") or {}).get("content")
        if not isinstance(content, list):
            return
        extra = msg.get("tool_use_result")
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_id = block.get("tool_use_id")
            item = self.items.get(tool_id) if isinstance(tool_id, str) else None
            if item is None:
                continue
            is_error = bool(block.get("is_error"))
            status = "declined" if tool_id in self.declined else ("failed" if is_error else "completed")
            data: dict[str, Any] = {**self.mcp_calls.pop(item.item_id, {}), "is_error": is_error}
            if isinstance(extra, dict):
                data.update({k: extra[k] for k in ("stdout", "stderr", "interrupted") if k in extra})
            self._complete(events, item, status=status, text=result_text(block.get("content")), data=data)

    def _result(self, msg: dict[str, Any], events: list[EventBase]) -> None:
        if self.turn.turn_id is None:
            return  # a late result of a turn the driver already ended (interrupt timeout)
        raw = msg.get("usage") if isinstance(msg.get("usage"), dict) else {}
        turn_usage = None
        if raw:
            fresh = int(raw.get("input_tokens") or 0)
            cache_read = int(raw.get("cache_read_input_tokens") or 0)
            cache_made = int(raw.get("cache_creation_input_tokens") or 0)
            out = int(raw.get("output_tokens") or 0)
            inp = fresh + cache_read + cache_made
            turn_usage = TokenUsage(input_tokens=inp, output_tokens=out, cached_input_tokens=cache_read,
                                    total_tokens=inp + out)
            u = self.usage
            window = None
            for m in (msg.get("modelUsage") or {}).values():
                if isinstance(m, dict) and m.get("contextWindow"):
                    window = int(m["contextWindow"])
            cost = msg.get("total_cost_usd")
            # Protocol fact: total_cost_usd is cumulative per process; usage is per turn.
            total_cost = self.cost_base + float(cost) if isinstance(cost, (int, float)) else u.cost
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
        is_error = bool(msg.get("is_error"))
        terminal = msg.get("terminal_reason")
        state: TurnState
        if self.turn.interrupt_requested and (is_error or (isinstance(terminal, str) and terminal.startswith("aborted"))):
            state, stop, error = "interrupted", terminal or msg.get("subtype"), None
        elif is_error:
            errors = msg.get("errors")
            error = msg.get("result") if isinstance(msg.get("result"), str) and msg.get("result") else (
                "; ".join(map(str, errors)) if isinstance(errors, list) and errors else str(msg.get("subtype")))
            if msg.get("api_error_status"):
                error = f"model API error {msg['api_error_status']}: {error}"
            state, stop = "failed", msg.get("stop_reason") or msg.get("subtype")
        else:
            state, stop, error = "completed", msg.get("stop_reason"), None
        self.turns_done += 1
        self.end_turn(events, state, stop_reason=stop, error=error, usage=turn_usage)
        self.publish(status="ready", active_turn_id=None, resume_cursor=self._cursor())

    # MCP readback ----------------------------------------------------------------------------------

    def _mcp_report(self, name: str, status: object, detail: str | None, tools: int | None,
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

    def _mcp_status(self, answer: dict[str, Any], events: list[EventBase]) -> None:
        # control_request mcp_status -> {mcpServers: [{name, status, error?, tools?: [{name}]...}]}
        listed = [s for s in answer.get("mcpServers") or () if isinstance(s, dict) and isinstance(s.get("name"), str)]
        for entry in listed:
            tools = entry.get("tools")
            count = len(tools) if isinstance(tools, list) else None
            error = entry.get("error") if isinstance(entry.get("error"), str) else None
            self._mcp_report(entry["name"], entry.get("status"), error, count, events)
        events += self.mcp.absent((s["name"] for s in listed), turn_id=self.turn.turn_id,
                                  detail="Claude Code did not load this server")
        # A server still pending: the next turn's system/init reports it again.

    def _mcp_init(self, msg: dict[str, Any], events: list[EventBase]) -> None:
        # system/init carries {mcp_servers: [{name, status}], tools: [..., "mcp__<server>__<tool>"]}
        servers = msg.get("mcp_servers")
        if not isinstance(servers, list):
            return
        tools = [t for t in msg.get("tools") or () if isinstance(t, str)]
        pending = False
        for entry in servers:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                continue
            name = entry["name"]
            count = sum(1 for t in tools if t.startswith(f"mcp__{name}__"))
            pending |= self._mcp_report(name, entry.get("status"), None, count, events)
        listed = [str(s["name"]) for s in servers if isinstance(s, dict) and isinstance(s.get("name"), str)]
        events += self.mcp.absent(listed, turn_id=self.turn.turn_id, detail="Claude Code did not load this server")
        if pending:
            self._control("mcp_status")

    # requests ------------------------------------------------------------------------------------

    def _control_response(self, response: dict[str, Any], events: list[EventBase]) -> None:
        subtype = self.ctl_pending.pop(str(response.get("request_id")), None)
        if subtype == "mcp_status" and response.get("subtype") == "success":
            self._mcp_status(response.get("response") or {}, events)
            return
        if response.get("subtype") == "error":
            events.append(RuntimeWarningEvent(
                **self.identity, turn_id=self.turn.turn_id, code="claude.control_error",
                message=f"Claude Code refused control request {subtype or '?'!r}: {response.get('error')}",
            ))

    def _control_request(self, msg: dict[str, Any], events: list[EventBase]) -> None:
        native = str(msg.get("request_id"))
        req = msg.get("request") or {}
        if req.get("subtype") != "can_use_tool":
            self._write({"type": "control_response", "response": {
                "subtype": "error", "request_id": native,
                "error": f"Unsupported control request subtype: {req.get('subtype')}"}})
            return
        req_input = req.get("input")
        inp: dict[str, Any] = req_input if isinstance(req_input, dict) else {}
        if self.turn.turn_id is None or self.aborted:
            self._answer_native(native, _DENY_INTERRUPTED)
            return
        tool = str(req.get("tool_name") or "tool")
        tool_use_id = req.get("tool_use_id") if isinstance(req.get("tool_use_id"), str) else None
        kind = item_kind_of_tool(tool)
        if tool_use_id and tool_use_id not in self.items:
            self._start_item(events, tool_use_id, kind, tool_use_id, title=tool_title(tool, inp),
                             data={"tool": tool, "input": inp})
        req_suggestions = req.get("permission_suggestions")
        suggestions: list[Any] = req_suggestions if isinstance(req_suggestions, list) else []
        request_id = self.requests.new_id(self.turn.turn_id)
        decisions = ("accept", "accept_for_session", "decline", "cancel") if suggestions else ("accept", "decline", "cancel")
        data: dict[str, Any] = {"tool": tool, "input": inp}
        if suggestions:
            data["permission_suggestions"] = suggestions
        if req.get("blocked_path"):
            data["blocked_path"] = req["blocked_path"]
        request_kind = request_kind_of_item(kind)
        opened = RequestOpened(
            **self.identity, turn_id=self.turn.turn_id, item_id=tool_use_id, request_id=request_id,
            kind=request_kind, title=req.get("description") or req.get("display_name") or tool,  # type: ignore[arg-type]
            detail=tool_title(tool, inp), decisions=decisions, data=data,  # type: ignore[arg-type]
            # can_use_tool names no cwd: the session's is the one Claude Code was started in.
            subject=input_subject(request_kind, tool, inp, self.start_input.cwd),
            provider_refs=self._refs(item=tool_use_id, request=native),
        )
        self.open_request(events, opened, _Pending(native, inp, suggestions, tool_use_id),
                          auto="accept" if self.auto_allow else None)

    def _answer_native(self, native: str, response: dict[str, Any]) -> None:
        try:
            self._write({"type": "control_response",
                         "response": {"subtype": "success", "request_id": native, "response": response}})
        except PaddockError as exc:
            log.debug("permission answer not delivered on thread %s: %s", self.thread_id, exc)

    def answer_request(self, native: _Pending, decision: str) -> None:
        """Hook: accept -> allow (+ ``updatedInput``), accept_for_session -> allow with the CLI's
        permission suggestions, decline -> deny, cancel -> deny and interrupt."""
        if decision == "accept":
            response: dict[str, Any] = {"behavior": "allow", "updatedInput": native.input}
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
