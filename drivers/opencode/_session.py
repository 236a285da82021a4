"""OpencodeSessionActor: one host thread bound to one OpenCode session (``ses_…``) on the
instance's server.

Thread: every method runs inside the actor, on a worker of the shared dispatcher (one message at
a time; see ``paddock.actors.DispatchActor``); its HTTP calls wait inside ``blocking()``, so the
pool runs other sessions meanwhile. The SSE reader thread only ``tell``\\ s it
its session's events (:class:`ServerEvents`); the server link tells :class:`ServerDown` and
:class:`ServerUp`; host operations arrive as ``ask`` messages from the adapter, with the caller's
timeout. HTTP calls made here are control operations, each bounded by ``request_timeout``
(``prompt_async`` answers 204 at once; the turn's progress arrives on the stream).
"""

from __future__ import annotations

import logging
from typing import Any

from paddock.actors import SessionActor, SessionRecord
from paddock.contract import (
    EventBase,
    PaddockError,
    ProviderRefs,
    RequestError,
    RequestOpened,
    ResumeCursor,
    RuntimeWarningEvent,
    SendTurnInput,
    Session,
    SessionConfigured,
    SessionStarted,
    SessionStateChanged,
    ThreadMetadataUpdated,
    ThreadTokenUsageUpdated,
    TokenUsage,
    TurnAborted,
    TurnStartResult,
    TurnState,
    UserInputQuestion,
    UserInputRequested,
    UserInputResolved,
    ValidationError,
    mcp_secrets,
)
from paddock.drivers._mcp_native import McpReadback
from paddock.supervisors import ChildContext

from ._models import file_parts
from ._config import model_ref, permission_rules
from ._cursor import cursor_for, decode_cursor
from ._mcp import mcp_entry, report_status, tool_counts
from ._messages import NativeMessages, OpencodeState, SessionSettings
from ._server import ServerDown, ServerEvents, ServerLink, ServerUp
from ._translate import (
    Signal,
    Translator,
    error_message,
    permission_subject,
    question_answers,
    questions_of,
    reply_of_decision,
    request_kind_of_permission,
)

__all__ = ["OpencodeSessionActor"]

log = logging.getLogger("paddock.drivers.opencode")


class _Ask:
    """A permission ask awaiting the host: the native ``per_…`` id and its tool item."""

    __slots__ = ("native_id", "item_id")

    def __init__(self, native_id: str, item_id: str | None) -> None:
        self.native_id = native_id
        self.item_id = item_id


class _Question:
    __slots__ = ("native_id", "questions")

    def __init__(self, native_id: str, questions: tuple[UserInputQuestion, ...]) -> None:
        self.native_id = native_id
        self.questions = questions


class OpencodeSessionActor(SessionActor[_Ask, OpencodeState]):
    """One OpenCode session (see the module docstring); ``link`` is the instance's server."""

    def __init__(self, record: SessionRecord[OpencodeState], link: ServerLink, settings: SessionSettings, *,
                 context: ChildContext | None = None) -> None:
        super().__init__(record, context=context)
        self.link = link
        self.settings = settings
        self.start_input = record.input
        self.cwd: str = self.start_input.cwd
        self.session_id: str | None = record.state.session_id
        self.usage: TokenUsage = record.state.usage or TokenUsage()
        self.tr = Translator(self.identity, self.session_id or "")
        self.questions: dict[str, _Question] = {}
        self.asked: set[str] = set()  # per_… ids seen (each opens at most one request)
        self.question_seq = 0
        self.mcp = McpReadback(self.identity, self.start_input.mcp_servers)
        self.tr.mcp_servers = self.mcp.names
        self.opened = False
        self.finished = False
        self.turns_done = 0
        self.abort_answered = True  # the last abort call was answered (the interrupt timer's warning says which)

    # lifecycle -----------------------------------------------------------------------------------

    def on_shutdown(self, deadline: float) -> None:
        self._end(stopped=True)

    def on_terminate(self, reason) -> None:  # type: ignore[no-untyped-def]
        self._end(stopped=not reason.abnormal,
                  detail=f"the session actor failed: {reason.error!r}" if reason.abnormal else None)

    def _end(self, *, stopped: bool, detail: str | None = None) -> None:
        """Finish the session once: the running turn (aborted natively), open requests and
        questions, ``session.exited``. The OpenCode session itself stays on the server (the
        cursor resumes it)."""
        if self.finished:
            return
        self.finished = True
        self.record.closed = True
        if self.session_id is not None:
            self.link.unregister(self.session_id, self.actor_ref)
        if not self.opened:
            self.publish(status="stopped")
            return
        events: list[EventBase] = []
        if self.turn.in_turn:
            self._post_quietly("POST", f"/session/{self.session_id}/abort")
        self._resolve_questions(events, "cancelled", answer=True)
        self.end_turn(events, "cancelled" if stopped else "failed",
                      error="the session was stopped" if stopped else detail, answer=True)
        events.append(self.session_exited("stopped" if stopped else (detail or "the session ended"),
                                          recoverable=self.session_id is not None))
        self.publish(status="stopped" if stopped else "error", active_turn_id=None,
                     last_error=None if stopped else detail)
        self.emit(events)

    # dispatch ------------------------------------------------------------------------------------

    def on_receive(self, message: object) -> object:
        if isinstance(message, ServerEvents):
            self._events(message.events)
            return None
        if isinstance(message, ServerDown):
            self._server_down(message)
            return None
        if isinstance(message, ServerUp):
            self._server_up(message)
            return None
        if isinstance(message, NativeMessages):
            return self._native_messages(message.limit)
        return super().on_receive(message)

    # helpers -------------------------------------------------------------------------------------

    def _params(self) -> dict[str, str]:
        return {"directory": self.cwd}

    def _call(self, method: str, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        """One JSON call on the server (``timeout``: else ``request_timeout``), as a typed error
        naming this thread when it fails."""
        transport = self.link.require()
        try:
            return transport.json(method, path, body, params=self._params(),
                                  timeout=self.settings.request_timeout if timeout is None else timeout)
        except PaddockError as exc:
            if exc.thread_id is None:
                exc.thread_id = self.thread_id
            raise

    def _post_quietly(self, method: str, path: str, body: Any = None, *, timeout: float | None = None) -> bool:
        try:
            self._call(method, path, body, timeout=timeout)
            return True
        except PaddockError as exc:
            log.debug("%s %s on thread %s failed: %s", method, path, self.thread_id, exc)
            return False

    def _refs(self, request: str | None = None, item: str | None = None) -> ProviderRefs:
        return ProviderRefs(thread=self.session_id, request=request, item=item)

    def _cursor(self) -> ResumeCursor:
        assert self.session_id is not None
        return cursor_for(self.settings.driver, self.session_id, self.cwd, self.usage)

    # open ----------------------------------------------------------------------------------------

    def open_session(self) -> Session:
        if self.finished:
            raise self.closed_error()
        if self.opened:
            return self.record.session
        inp = self.start_input
        events: list[EventBase] = []
        resumed, resume_failed, detail = False, False, None
        title = f"{self.settings.title_prefix} {self.thread_id}"[:200]
        if inp.resume_cursor is not None:
            sid, cwd, usage = decode_cursor(inp.resume_cursor, self.settings.driver)
            if cwd != self.cwd:
                resume_failed = True
                detail = (f"the resume cursor was made in {cwd!r}, not {self.cwd!r}; it is invalid here, so a new "
                          "OpenCode session starts")
            else:
                try:
                    info = self._call("GET", f"/session/{sid}")
                    if not isinstance(info, dict) or info.get("id") != sid:
                        raise RequestError("GET /session", None, "the server answered without the session")
                    # The rules of this start's runtime mode, not those the session was made with.
                    self._call("PATCH", f"/session/{sid}", {"permission": permission_rules(inp.runtime_mode)})
                    resumed = True
                    self.session_id = sid
                    title = info.get("title") or title
                    if usage is not None:
                        self.usage = usage
                except PaddockError as exc:
                    resume_failed = True
                    detail = f"resume failed, started a new OpenCode session: {exc}"
            if resume_failed:
                events.append(RuntimeWarningEvent(**self.identity, code="opencode.resume_failed", message=detail or ""))
        if self.session_id is None:
            # An explicit title: without one the server makes a title-generation model call.
            body: dict[str, Any] = {"title": title, "permission": permission_rules(inp.runtime_mode)}
            info = self._call("POST", "/session", body)
            if not isinstance(info, dict) or not isinstance(info.get("id"), str):
                raise RequestError("POST /session", None, "the server answered without a session id", **self.where())
            self.session_id = info["id"]
        assert self.session_id is not None
        self.tr.session_id = self.session_id
        self.link.register(self.session_id, self.actor_ref)
        x = self.record.state
        x.session_id, x.resumed, x.usage = self.session_id, resumed, self.usage
        self.opened = True
        events.append(SessionStarted(
            **self.identity, cwd=self.cwd, model=inp.model, runtime_mode=inp.runtime_mode,
            interaction_mode=inp.interaction_mode, resumed=resumed, resume_failed=resume_failed, detail=detail,
            provider_refs=self._refs(),
        ))
        config: dict[str, Any] = {"session_id": self.session_id, "server": "spawned" if self.link.spawned else "external"}
        if self.link.version:
            config["version"] = self.link.version
        events.append(SessionConfigured(**self.identity, config=config, provider_refs=self._refs()))
        events.append(ThreadMetadataUpdated(**self.identity, title=title, provider_refs=self._refs()))
        if self.mcp:
            events += self._mcp_add()
        self.emit(events)
        return self.publish(status="ready", resume_cursor=self._cursor(), resumed=resumed)

    def _mcp_add(self) -> list[EventBase]:
        """Add the session's MCP servers to the server for this directory (``POST /mcp``), then
        read back what loaded (``GET /mcp``, tool counts from ``GET /experimental/tool/ids``).
        A refused add is that server ``failed``, with the server's reason (secrets masked)."""
        events: list[EventBase] = []
        secrets = mcp_secrets(self.start_input.mcp_servers)
        for server in self.start_input.mcp_servers:
            try:
                self._call("POST", "/mcp", {"name": server.name, "config": mcp_entry(server)})
            except PaddockError as exc:
                reason = str(exc)
                for secret in secrets:
                    reason = reason.replace(secret, "***")
                events += self.mcp.report(server.name, "failed", detail=f"OpenCode refused it: {reason}")
        try:
            status = self._call("GET", "/mcp")
        except PaddockError as exc:
            log.debug("GET /mcp failed on thread %s: %s", self.thread_id, exc)
            return events
        try:
            tools = tool_counts(self._call("GET", "/experimental/tool/ids"), self.mcp.names)
        except PaddockError:
            tools = {}  # the count is optional; the status is not
        return events + report_status(self.mcp, status, tools, self.turn.turn_id)

    def _native_messages(self, limit: int | None) -> list[dict[str, Any]]:
        """The session's messages on the server, oldest first: ``{id, role, text}``."""
        path = f"/session/{self.session_id}/message"
        raw = self._call("GET", path + (f"?limit={int(limit)}" if limit else ""))
        out = []
        for entry in raw if isinstance(raw, list) else ():
            info = entry.get("info") if isinstance(entry, dict) else None
            if not isinstance(info, dict):
                continue
            text = "".join(p.get("text") or "" for p in entry.get("parts") or ()
                           if isinstance(p, dict) and p.get("type") == "text" and not p.get("synthetic"))
            out.append({"id": info.get("id"), "role": info.get("role"), "text": text})
        return out

    def fork(self, at_turn: int | None) -> ResumeCursor:
        """Hook (``Fork``): ``/session/{id}/fork`` (a new session with the same history; the
        driver forks whole sessions, ``sessions.fork_kind == "native"``, so ``at_turn`` is None)."""
        if self.turn.in_turn:
            raise ValidationError("fork_thread", f"turn {self.turn.turn_id!r} is still running; fork between turns",
                                  **self.where())
        info = self._call("POST", f"/session/{self.session_id}/fork", {})
        if not isinstance(info, dict) or not isinstance(info.get("id"), str):
            raise RequestError("POST /session/fork", None, "the server answered without a session id", **self.where())
        return cursor_for(self.settings.driver, str(info["id"]), self.cwd)

    def compact(self) -> TurnStartResult:
        """Hook (``Compact``): ``/session/{id}/summarize`` with the session's model, run as a turn
        of its own: OpenCode writes the summary as an assistant message (streamed like a reply)
        and goes idle, which ends the turn. The call answers once the summary is written."""
        if self.turn.in_turn:
            raise ValidationError("compact_thread", f"turn {self.turn.turn_id!r} is still running; compact between "
                                  "turns", **self.where())
        model = model_ref(self.record.session.model, endpoint=self.settings.endpoint)
        if model is None:
            raise ValidationError("compact_thread", "the session has no model as provider/model to summarize with",
                                  **self.where())
        turn_id = self.turn.new_id(None)
        self.emit([self.turn.start(turn_id, input_text=None, model=self.record.session.model,
                                   provider_refs=self._refs())])
        self.tr.start(turn_id)
        return self._post_turn(turn_id, "summarize", model, "the compaction")

    # turns ---------------------------------------------------------------------------------------

    def start_turn(self, inp: SendTurnInput, turn_id: str) -> TurnStartResult:
        if self.finished:
            raise self.closed_error()
        self.link.require()
        # A stopped server accepts the connection and answers nothing: refuse at once. (A dead
        # one refuses the connection: the POST fails typed.) An external server is not ours.
        self.refuse_unreachable(self.link.handle, "the OpenCode server", gone=False)
        body: dict[str, Any] = {"parts": [{"type": "text", "text": inp.text}, *file_parts(inp.attachments)]}
        model = model_ref(inp.model, endpoint=self.settings.endpoint)
        if model is not None:
            body["model"] = model
        if self.settings.agent:
            body["agent"] = self.settings.agent
        started = self.turn.start(turn_id, input_text=inp.text, model=inp.model or self.start_input.model,
                                  interaction_mode=inp.interaction_mode or self.start_input.interaction_mode,
                                  provider_refs=self._refs())
        self.tr.start(turn_id)
        self.emit([started])
        return self._post_turn(turn_id, "prompt_async", body, "the prompt")

    def _post_turn(self, turn_id: str, endpoint: str, body: Any, what: str) -> TurnStartResult:
        """POST the request that runs turn ``turn_id`` (already started); a refusal ends the turn
        ``failed`` and is raised (thread: the session actor)."""
        try:
            self._call("POST", f"/session/{self.session_id}/{endpoint}", body)
        except PaddockError as exc:
            events: list[EventBase] = []
            self.end_turn(events, "failed", error=f"{what} was not accepted: {exc}")
            self.emit(events)
            self.publish(status="ready", active_turn_id=None)
            raise
        cursor = self._cursor()
        self.publish(status="running", active_turn_id=turn_id, resume_cursor=cursor)
        return TurnStartResult(thread_id=self.thread_id, turn_id=turn_id, resume_cursor=cursor)

    def cancel_turn(self, events: list[EventBase]) -> None:
        self.tr.interrupt_requested = True
        self._resolve_questions(events, "cancelled", answer=True)
        # Bounded by interrupt_timeout: a server that does not answer (stopped, hung) must not
        # hold the host's interrupt_turn for a whole request_timeout; the turn then ends at once.
        ok = self._post_quietly("POST", f"/session/{self.session_id}/abort",
                                timeout=min(self.settings.request_timeout, self.settings.interrupt_timeout))
        self.abort_answered = ok
        events.append(TurnAborted(**self.identity, turn_id=self.turn.turn_id, reason="interrupted by the host"
                                  if ok else "interrupted by the host (the abort call failed; ending the turn)"))
        # The turn ends interrupted at the server's next idle; if that never comes, the timer does.
        self.schedule_turn_timer("interrupt", self.settings.interrupt_timeout if ok else 0.0)

    def on_turn_timer(self, name: str, turn_id: str) -> None:
        if name != "interrupt":
            return
        said = (f"OpenCode did not end the turn within {self.settings.interrupt_timeout:g} s of the abort"
                if self.abort_answered else
                f"OpenCode did not answer the abort within {self.settings.interrupt_timeout:g} s")
        events: list[EventBase] = [RuntimeWarningEvent(
            **self.identity, turn_id=turn_id, code="opencode.abort_unacknowledged",
            message=f"{said}; the runtime ended it")]
        self._complete_turn(events, "interrupted")
        self.emit(events)

    def close_turn(self, events: list[EventBase], state: TurnState, usage: object) -> TokenUsage | None:
        self._resolve_questions(events, "cancelled", answer=state != "completed")
        if self.mcp:
            events += self.mcp.first_turn_ended(self.turn.turn_id)
        self.tr.close(events, state)
        return usage if isinstance(usage, TokenUsage) else None

    def _complete_turn(self, events: list[EventBase], state: TurnState, *, error: str | None = None,
                stop_reason: str | None = None, usage: TokenUsage | None = None, requests: str = "cancelled") -> None:
        if usage is not None:
            u = self.usage
            self.usage = TokenUsage(
                input_tokens=(u.input_tokens or 0) + (usage.input_tokens or 0),
                output_tokens=(u.output_tokens or 0) + (usage.output_tokens or 0),
                cached_input_tokens=(u.cached_input_tokens or 0) + (usage.cached_input_tokens or 0),
                reasoning_tokens=(u.reasoning_tokens or 0) + (usage.reasoning_tokens or 0),
                total_tokens=(u.total_tokens or 0) + (usage.total_tokens or 0),
                cost=(u.cost or 0.0) + usage.cost if usage.cost is not None else u.cost,
                currency="USD" if usage.cost is not None or u.cost is not None else None,
            )
            self.record.state.usage = self.usage
            events.append(ThreadTokenUsageUpdated(**self.identity, turn_id=self.turn.turn_id, usage=self.usage))
        self.end_turn(events, state, error=error, stop_reason=stop_reason, usage=usage, requests=requests,
                      answer=requests == "cancelled")
        self.turns_done += 1
        self.publish(status="ready", active_turn_id=None, resume_cursor=self._cursor())

    # the stream ----------------------------------------------------------------------------------

    def _events(self, batch: list[dict[str, Any]]) -> None:
        if self.finished:
            return
        events: list[EventBase] = []
        feed = self.tr.feed
        for event in batch:
            for signal in feed(event, events):
                self._signal(signal, events)
        self.emit(events)

    def _signal(self, signal: Signal, events: list[EventBase]) -> None:
        kind = signal.kind
        if kind == "idle":
            self._complete_turn(events, signal.state or "completed", error=signal.error, stop_reason=signal.stop_reason,
                         usage=signal.usage)
        elif kind == "permission":
            self._permission(signal, events)
        elif kind == "permission_replied":
            native = signal.native
            for request_id in self.requests.take_where(lambda ask: ask.native_id == native):
                events.append(self.resolved(request_id, "answered", signal.decision))
        elif kind == "question":
            self._question(signal, events)
        elif kind == "question_done":
            for request_id, q in list(self.questions.items()):
                if q.native_id == signal.native:
                    del self.questions[request_id]
                    events.append(UserInputResolved(**self.identity, turn_id=self.turn.turn_id, request_id=request_id,
                                                    resolution="answered", provider_refs=self._refs(request=q.native_id)))

    def _permission(self, signal: Signal, events: list[EventBase]) -> None:
        props = signal.data or {}
        native = str(signal.native)
        if native in self.asked:
            return  # the server re-announced an ask we hold
        self.asked.add(native)
        permission = str(props.get("permission") or "permission")
        patterns = [p for p in props.get("patterns") or () if isinstance(p, str)]
        raw_metadata = props.get("metadata")
        metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
        command = metadata.get("command")
        detail = command if isinstance(command, str) else ", ".join(patterns) or None
        request_id = self.requests.new_id(self.turn.turn_id)
        # accept_for_session answers `always`, which OpenCode turns into the `always` patterns.
        always = [p for p in props.get("always") or () if isinstance(p, str)]
        decisions = ("accept", "accept_for_session", "decline", "cancel") if always else ("accept", "decline", "cancel")
        opened = RequestOpened(
            **self.identity, turn_id=self.turn.turn_id, item_id=signal.item_id, request_id=request_id,
            kind=request_kind_of_permission(permission), title=permission, detail=detail,
            decisions=decisions,  # type: ignore[arg-type]
            data={"permission": permission, "patterns": patterns, "always": always, "metadata": metadata},
            subject=permission_subject(permission, metadata, patterns, self.start_input.cwd),
            provider_refs=self._refs(request=native, item=signal.item_id),
        )
        auto = "accept" if self.start_input.runtime_mode == "full-access" else None
        self.open_request(events, opened, _Ask(native, signal.item_id), auto=auto)

    def answer_request(self, native: _Ask, decision: str) -> None:
        if decision in ("decline", "cancel"):
            self.tr.decline(native.item_id)
        body: dict[str, Any] = {"reply": reply_of_decision(decision)}
        if decision == "decline":
            body["message"] = "The user declined this action."
        self._call("POST", f"/permission/{native.native_id}/reply", body)

    def cancel_request(self, native: _Ask) -> None:
        self.tr.decline(native.item_id)
        self._post_quietly("POST", f"/permission/{native.native_id}/reply", {"reply": "reject"})

    def _question(self, signal: Signal, events: list[EventBase]) -> None:
        native = str(signal.native)
        if any(q.native_id == native for q in self.questions.values()):
            return
        questions = questions_of(signal.data or {})
        self.question_seq += 1
        request_id = f"{self.turn.turn_id}:input{self.question_seq}"
        self.questions[request_id] = _Question(native, questions)
        events.append(UserInputRequested(**self.identity, turn_id=self.turn.turn_id, request_id=request_id,
                                         questions=questions, provider_refs=self._refs(request=native)))

    def answer_user_input(self, request_id: str, answers: dict[str, Any]) -> None:
        q = self.questions.pop(request_id, None)
        if q is None:
            raise RequestError("respond_to_user_input", None, f"no open user-input request {request_id!r} (unknown "
                               "or already resolved)", **self.where())
        if not isinstance(answers, dict):
            self.questions[request_id] = q
            raise ValidationError("respond_to_user_input", "answers must map question ids to answers", **self.where())
        self._call("POST", f"/question/{q.native_id}/reply", {"answers": question_answers(q.questions, answers)})
        self.emit([UserInputResolved(**self.identity, turn_id=self.turn.turn_id, request_id=request_id,
                                     resolution="answered", answers=answers, provider_refs=self._refs(request=q.native_id))])

    def _resolve_questions(self, events: list[EventBase], resolution: str, *, answer: bool) -> None:
        for request_id, q in list(self.questions.items()):
            del self.questions[request_id]
            if answer:
                self._post_quietly("POST", f"/question/{q.native_id}/reject")
            events.append(UserInputResolved(**self.identity, turn_id=self.turn.turn_id, request_id=request_id,
                                            resolution=resolution, provider_refs=self._refs(request=q.native_id)))  # type: ignore[arg-type]

    # the server going away and coming back ----------------------------------------------------------

    def _server_down(self, message: ServerDown) -> None:
        if self.finished or not self.opened:
            return
        events: list[EventBase] = []
        if message.info is not None:
            # The process died: its turn cannot finish and its asks are gone with it.
            self.hung_warning(events, message.info)  # its shim killed it: stopped for hang_timeout
            self._resolve_questions(events, "expired", answer=False)
            self.end_turn(events, "failed", error=message.detail, requests="expired")
            if self.turn.turn_id is None:
                self.publish(active_turn_id=None)
            events.append(SessionStateChanged(**self.identity, state="starting",
                                              reason=f"{message.detail}; the supervisor restarts it"))
            self.publish(status="starting", last_error=message.detail)
        else:
            events.append(RuntimeWarningEvent(**self.identity, turn_id=self.turn.turn_id, code="opencode.stream_lost",
                                              message=message.detail))
        self.emit(events)

    def _server_up(self, message: ServerUp) -> None:
        if self.finished or not self.opened:
            return
        events: list[EventBase] = []
        if message.restarted:
            self.redeliver_preamble()  # a new server process: the next turn is a new live session's first
            events.append(SessionStateChanged(**self.identity, state="ready",
                                              reason="the OpenCode server restarted"))
            if self.mcp:
                self.mcp.restarted()
                events += self._mcp_add()  # a new server process has none of them
            self.publish(status="running" if self.turn.in_turn else "ready", last_error=None)
        elif self.turn.in_turn:
            # Events may have been lost while the stream was down: ask where the session is.
            self._resync(events)
        self.emit(events)

    def _resync(self, events: list[EventBase]) -> None:
        try:
            status = self._call("GET", "/session/status")
        except PaddockError:
            return
        if isinstance(status, dict) and self.session_id in status:
            return  # still busy: the rest of the turn arrives on the new connection
        if not self.tr.busy:
            # Not busy and never seen busy: the server has not taken the prompt up yet (or its
            # whole run fell into the gap, which the interrupt timer or a stop still ends).
            return
        state: TurnState = "interrupted" if self.turn.interrupt_requested else "completed"
        error = None
        try:
            last = self._call("GET", f"/session/{self.session_id}/message", None)
            info = last[-1].get("info") if isinstance(last, list) and last else None
            if isinstance(info, dict) and info.get("error") and state != "interrupted":
                state, error = "failed", error_message(info["error"])
        except PaddockError:
            pass
        events.append(RuntimeWarningEvent(**self.identity, turn_id=self.turn.turn_id, code="opencode.turn_resynced",
                                          message="the turn ended while the event stream was down; its end was read "
                                                  "from the server"))
        self._complete_turn(events, state, error=error)

