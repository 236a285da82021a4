"""OpenCode ``/event`` events -> canonical events, for one session (pure: no I/O, no threads).

A :class:`Translator` is fed the events of its session (already demultiplexed by ``sessionID``)
in stream order. It appends item, content and warning events to the caller's list and returns the
:class:`Signal`\\ s its owner must act on (a permission or question to open, a request answered
elsewhere, the end of the turn). It drops everything while no turn runs (grammar rule 2).

Protocol facts it relies on (opencode-server.md sections 3-4):

- a turn's events start with ``message.updated`` of a NEW user message; assistant messages name
  it as ``parentID``. Parts of other messages (the tail of an aborted turn, late updates of an old
  user message) arrive interleaved with a next turn and are not this turn's: an assistant
  message answering a user message of an earlier turn, or seen in an earlier turn, is dropped;
- ``session.idle`` (and ``session.status idle``) may come twice (abort, API errors); a turn ends
  at the first idle after its first ``busy``;
- the text of a part arrives as ``message.part.delta`` (field ``text``) between an empty and a
  full ``message.part.updated``; the full text can also arrive without deltas;
- tool parts go ``pending`` -> ``running`` -> ``completed`` | ``error``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from paddock.contract import (
    ContentDelta,
    EventBase,
    EventIdentity,
    ItemCompleted,
    ItemKind,
    ItemStarted,
    ItemUpdated,
    JsonObject,
    JsonValue,
    ProviderRefs,
    RequestKind,
    RequestSubject,
    RuntimeWarningEvent,
    StreamKind,
    TokenUsage,
    UserInputOption,
    UserInputQuestion,
    json_object,
    json_str,
)
from paddock.drivers._subjects import input_subject, tool_subject

from ._mcp import mcp_tool_of

__all__ = [
    "Signal",
    "Translator",
    "error_message",
    "item_kind_of_tool",
    "permission_subject",
    "question_answers",
    "questions_of",
    "reply_of_decision",
    "request_kind_of_permission",
    "usage_of_tokens",
]

_TOOL_KINDS: dict[str, ItemKind] = {
    "bash": "command",
    "edit": "file_change",
    "write": "file_change",
    "patch": "file_change",
    "multiedit": "file_change",
    "apply_patch": "file_change",
    "read": "file_read",
    "glob": "search",
    "grep": "search",
    "list": "search",
    "codesearch": "search",
    "webfetch": "web_search",
    "websearch": "web_search",
}

# Every permission name of the pinned server maps to a request kind: an ask the host never sees
# hangs the turn (T3 Code's note on `skill` and `websearch`).
_PERMISSION_KINDS: dict[str, RequestKind] = {
    "bash": "command",
    "edit": "file_change",
    "write": "file_change",
    "patch": "file_change",
    "read": "file_read",
    "external_directory": "file_read",
    "webfetch": "tool",
    "websearch": "tool",
    "codesearch": "tool",
    "doom_loop": "tool",
    "task": "tool",
    "skill": "tool",
}

_REPLIES = {"accept": "once", "accept_for_session": "always", "decline": "reject", "cancel": "reject"}
_DECISIONS_OF_REPLY = {"once": "accept", "always": "accept_for_session", "reject": "decline"}


def item_kind_of_tool(tool: str) -> ItemKind:
    """The item kind of an OpenCode tool name (MCP tools are ``<server>_<tool>``: tool_call)."""
    return _TOOL_KINDS.get(tool.lower(), "tool_call")


def request_kind_of_permission(permission: str) -> RequestKind:
    return _PERMISSION_KINDS.get(permission, "permission")


def permission_subject(permission: str, metadata: JsonObject, patterns: list[str], cwd: str | None) -> RequestSubject:
    """What a ``permission.asked`` approves: ``bash`` carries ``metadata.command``; ``edit`` (the
    edit, write and patch tools) carries ``metadata.filepath`` and a unified ``metadata.diff``
    (opencode-server.md, opencode-transcript); any other permission is the tool with its
    metadata (and patterns). The command runs in the session's directory."""
    kind = request_kind_of_permission(permission)
    if kind in ("command", "file_change"):
        return input_subject(kind, permission, metadata, cwd)
    return tool_subject(permission, {**metadata, "patterns": list[JsonValue](patterns)} if patterns else metadata)


def reply_of_decision(decision: str) -> str:
    """accept -> ``once``, accept_for_session -> ``always``, decline and cancel -> ``reject``."""
    return _REPLIES[decision]


def error_message(error: JsonValue) -> str:
    """``{name, data: {message, statusCode?}}`` -> one sentence (model API errors name the status)."""
    if not isinstance(error, dict):
        return "OpenCode reported an error"
    name = json_str(error.get("name")) or "Error"
    data = json_object(error.get("data"))
    message = json_str(data.get("message"))
    status = data.get("statusCode")
    text = f"{name}: {message}" if message else name
    if name == "APIError" and isinstance(status, int):
        text = f"model API error {status}: {message or name}"
    return text


def usage_of_tokens(tokens: JsonValue, cost: JsonValue = None) -> TokenUsage | None:
    """OpenCode's ``{input, output, reasoning, cache: {read, write}, total?}`` as TokenUsage
    (``input`` excludes the cached tokens; ours includes them)."""
    if not isinstance(tokens, dict):
        return None
    cache = json_object(tokens.get("cache"))
    fresh = _int(tokens.get("input"))
    read = _int(cache.get("read"))
    write = _int(cache.get("write"))
    out = _int(tokens.get("output"))
    reasoning = _int(tokens.get("reasoning"))
    inp = fresh + read + write
    total = tokens.get("total")
    return TokenUsage(input_tokens=inp, output_tokens=out, cached_input_tokens=read, reasoning_tokens=reasoning,
                      total_tokens=int(total) if isinstance(total, int) and total else inp + out + reasoning,
                      cost=float(cost) if isinstance(cost, (int, float)) else None,
                      currency="USD" if isinstance(cost, (int, float)) else None)


def questions_of(props: JsonObject) -> tuple[UserInputQuestion, ...]:
    """The questions of ``question.asked``; question ``i`` gets the id ``q<i>``."""
    out = []
    for index, q in enumerate(_list(props.get("questions"))):
        if not isinstance(q, dict):
            continue
        options = tuple(UserInputOption(label=str(o.get("label")), description=json_str(o.get("description")))
                        for o in _list(q.get("options")) if isinstance(o, dict) and o.get("label") is not None)
        out.append(UserInputQuestion(id=f"q{index}", question=str(q.get("question") or ""), header=json_str(q.get("header")),
                                     options=options, multi_select=bool(q.get("multiple"))))
    return tuple(out)


def question_answers(questions: tuple[UserInputQuestion, ...], answers: JsonObject) -> list[list[str]]:
    """Host answers (question id -> a label, a list of labels, or free text) in OpenCode's shape:
    one list of strings per question, in question order (an unanswered question gets ``[]``)."""
    out: list[list[str]] = []
    for q in questions:
        value = answers.get(q.id, answers.get(q.question))
        if value is None:
            out.append([])
        elif isinstance(value, (list, tuple)):
            out.append([str(v) for v in value])
        else:
            out.append([str(value)])
    return out


class Signal:
    """What the session actor must act on. ``kind``:

    - ``permission``: ``data`` is the ``permission.asked`` properties, ``item_id`` its tool item;
    - ``permission_replied``: ``native`` (``per_…``) was answered (``decision``) by someone else;
    - ``question``: ``data`` the ``question.asked`` properties;
    - ``question_done``: ``native`` (``que_…``) was answered or rejected elsewhere;
    - ``idle``: the turn ended: ``state`` (completed | failed | interrupted), ``error``,
      ``stop_reason``, ``usage`` (the turn's TokenUsage summed over its assistant messages).
    """

    __slots__ = ("kind", "native", "data", "item_id", "decision", "state", "error", "stop_reason", "usage")

    def __init__(self, kind: str, *, native: str | None = None, data: dict[str, Any] | None = None,
                 item_id: str | None = None, decision: str | None = None,
                 state: Literal["completed", "failed", "interrupted"] | None = None, error: str | None = None,
                 stop_reason: str | None = None, usage: TokenUsage | None = None) -> None:
        self.kind = kind
        self.native = native
        self.data = data
        self.item_id = item_id
        self.decision = decision
        self.state = state
        self.error = error
        self.stop_reason = stop_reason
        self.usage = usage

    def __repr__(self) -> str:
        return f"Signal({self.kind!r}, native={self.native!r}, state={self.state!r})"


class _Item:
    __slots__ = ("item_id", "kind", "stream", "text", "message_id", "tool", "declined")

    def __init__(self, item_id: str, kind: ItemKind, stream: StreamKind | None, message_id: str | None,
                 tool: str | None = None) -> None:
        self.item_id = item_id
        self.kind = kind
        self.stream = stream
        self.text: list[str] = []
        self.message_id = message_id
        self.tool = tool
        self.declined = False


class Translator:
    """The per-turn state of one OpenCode session. Thread: its owner's (the session actor)."""

    def __init__(self, identity: EventIdentity, session_id: str) -> None:
        self.identity = identity
        self.session_id = session_id
        self.turn_id: str | None = None
        self.interrupt_requested = False
        self.mcp_servers: tuple[str, ...] = ()
        """The session's MCP server names: their tools (``<server>_<tool>``) are mcp_tool_call items."""
        self._seen_users: set[str] = set()
        self._seen_assistants: set[str] = set()
        self._reset()

    def _reset(self) -> None:
        self._users: set[str] = set()       # user messages of this turn
        self._assistants: set[str] = set()  # assistant messages of this turn
        self._items: dict[str, _Item] = {}  # part id -> open item
        self._done: set[str] = set()        # part ids completed in this turn
        self._calls: dict[str, str] = {}    # tool callID -> part id
        self._usage: dict[str, TokenUsage] = {}
        self._busy = False
        self._error: str | None = None
        self._aborted = False
        self._finish: str | None = None
        self._retry_attempt = 0

    # turn boundaries (called by the owner) -----------------------------------------------------

    def start(self, turn_id: str) -> None:
        self._reset()
        self.turn_id = turn_id
        self.interrupt_requested = False

    def close(self, events: list[EventBase], state: str) -> None:
        """Complete every open item (``cancelled`` unless the turn completed), then forget the turn."""
        status = "completed" if state == "completed" else ("failed" if state == "failed" else "cancelled")
        for item in list(self._items.values()):
            text = "".join(item.text) if item.stream is not None else None
            self._complete(events, item, status="declined" if item.declined else status, text=text)
        self.turn_id = None
        self._reset()

    def decline(self, item_id: str | None) -> None:
        """The host rejected the permission of tool item ``item_id``: it ends ``declined``."""
        item = self._items.get(item_id or "")
        if item is not None:
            item.declined = True

    def item_of_call(self, call_id: str | None) -> str | None:
        return self._calls.get(call_id or "")

    @property
    def busy(self) -> bool:
        return self._busy

    # the stream --------------------------------------------------------------------------------

    def feed(self, event: JsonObject, events: list[EventBase]) -> list[Signal]:
        etype = event.get("type")
        props = event.get("properties")
        if not isinstance(props, dict):
            return []
        if etype == "message.part.delta":
            self._part_delta(props, events)
        elif etype == "message.part.updated":
            part = props.get("part")
            if isinstance(part, dict):
                self._part(part, events)
        elif etype == "message.updated":
            info = props.get("info")
            if isinstance(info, dict):
                self._message(info, events)
        elif etype == "session.status":
            return self._status(props.get("status"), events)
        elif etype == "session.idle":
            return self._idle()
        elif etype == "session.error":
            if self.turn_id is not None:
                self._set_error(props.get("error"))
        elif etype == "permission.asked":
            if self.turn_id is not None:
                tool = json_object(props.get("tool"))
                return [Signal("permission", native=str(props.get("id")), data=props,
                               item_id=self._calls.get(str(tool.get("callID"))))]
        elif etype == "permission.replied":
            reply = props.get("reply")
            return [Signal("permission_replied", native=str(props.get("requestID")),
                           decision=_DECISIONS_OF_REPLY.get(reply if isinstance(reply, str) else "", "decline"))]
        elif etype == "question.asked":
            if self.turn_id is not None:
                return [Signal("question", native=str(props.get("id")), data=props)]
        elif etype in ("question.replied", "question.rejected"):
            return [Signal("question_done", native=str(props.get("requestID")))]
        return []

    def _refs(self, item: str | None = None) -> ProviderRefs:
        return ProviderRefs(thread=self.session_id, item=item)

    def _message(self, info: JsonObject, events: list[EventBase]) -> None:
        msg_id = info.get("id")
        if not isinstance(msg_id, str):
            return
        role = info.get("role")
        if role == "user":
            if self.turn_id is not None and msg_id not in self._seen_users:
                self._users.add(msg_id)
            self._seen_users.add(msg_id)
            return
        if role != "assistant" or self.turn_id is None:
            return
        if msg_id not in self._assistants:
            parent = info.get("parentID")
            if msg_id in self._seen_assistants or (parent in self._seen_users and parent not in self._users):
                return  # an assistant message of an earlier turn (the tail of an abort)
            # Ours: it answers this turn's prompt (or one not seen yet: the order of the user
            # and assistant message.updated events is not guaranteed under load).
            self._assistants.add(msg_id)
            self._seen_assistants.add(msg_id)
        usage = usage_of_tokens(info.get("tokens"), info.get("cost"))
        if usage is not None and (usage.total_tokens or usage.cost):
            self._usage[msg_id] = usage
        if info.get("error") is not None:
            self._set_error(info["error"])
        finish = info.get("finish")
        if isinstance(finish, str):
            self._finish = finish

    def _set_error(self, error: JsonValue) -> None:
        if isinstance(error, dict) and error.get("name") == "MessageAbortedError":
            self._aborted = True
        elif self._error is None:
            self._error = error_message(error)

    def _ours(self, message_id: JsonValue) -> bool:
        return self.turn_id is not None and message_id in self._assistants

    def _part_delta(self, props: JsonObject, events: list[EventBase]) -> None:
        if not self._ours(props.get("messageID")) or props.get("field") != "text":
            return
        part_id = props.get("partID")
        delta = props.get("delta")
        if not isinstance(part_id, str) or not isinstance(delta, str) or part_id in self._done:
            return
        item = self._items.get(part_id)
        if item is None:
            item = self._start(events, part_id, "assistant_message", "assistant_text", props.get("messageID"))
        self._delta(events, item, delta)

    def _part(self, part: JsonObject, events: list[EventBase]) -> None:
        if not self._ours(part.get("messageID")):
            return
        part_id = part.get("id")
        ptype = part.get("type")
        if not isinstance(part_id, str) or part_id in self._done:
            return
        if ptype in ("text", "reasoning"):
            if part.get("synthetic") or part.get("ignored"):
                return
            item = self._items.get(part_id)
            if item is None:
                kind: ItemKind = "assistant_message" if ptype == "text" else "reasoning"
                stream: StreamKind = "assistant_text" if ptype == "text" else "reasoning_text"
                item = self._start(events, part_id, kind, stream, part.get("messageID"))
            text = json_str(part.get("text")) or ""
            streamed = "".join(item.text)
            if len(text) > len(streamed) and text.startswith(streamed):
                self._delta(events, item, text[len(streamed):])
            time_ = json_object(part.get("time"))
            if time_.get("end") is not None:
                self._complete(events, item, text="".join(item.text))
        elif ptype == "tool":
            self._tool(part_id, part, events)

    def _tool(self, part_id: str, part: JsonObject, events: list[EventBase]) -> None:
        state = json_object(part.get("state"))
        status = state.get("status")
        tool = str(part.get("tool") or "tool")
        call_id = part.get("callID")
        item = self._items.get(part_id)
        inp = json_object(state.get("input"))
        title = json_str(state.get("title")) or _tool_title(tool, inp)
        data: JsonObject = {"tool": tool, "input": inp}
        kind = item_kind_of_tool(tool)
        mcp = mcp_tool_of(tool, self.mcp_servers)
        if mcp is not None:
            kind = "mcp_tool_call"
            data.update(server=mcp[0], tool=mcp[1], arguments=inp)
        if isinstance(call_id, str):
            data["call_id"] = call_id
        if item is None:
            item = self._start(events, part_id, kind, None, part.get("messageID"), tool=tool,
                               title=title, data=data)
            if isinstance(call_id, str):
                self._calls[call_id] = part_id
        if status == "running":
            events.append(ItemUpdated(**self.identity, turn_id=self.turn_id, item_id=part_id, kind=item.kind,
                                      title=title, status="in_progress", data=data, provider_refs=self._refs(part_id)))
        elif status == "completed":
            metadata = json_object(state.get("metadata"))
            done = dict(data)
            for key in ("exit", "truncated"):
                if key in metadata:
                    done[key] = metadata[key]
            output = state.get("output")
            self._complete(events, item, status="completed", title=title, text=output if isinstance(output, str) else None,
                           data=done)
        elif status == "error":
            error = state.get("error")
            self._complete(events, item, status="declined" if item.declined else "failed", title=title,
                           text=error if isinstance(error, str) else None, data={**data, "error": error})

    def _status(self, status: JsonValue, events: list[EventBase]) -> list[Signal]:
        if not isinstance(status, dict) or self.turn_id is None:
            return []
        stype = status.get("type")
        if stype == "busy":
            self._busy = True
        elif stype == "retry":
            self._busy = True
            attempt = _int(status.get("attempt"))
            if attempt > self._retry_attempt:
                self._retry_attempt = attempt
                events.append(RuntimeWarningEvent(
                    **self.identity, turn_id=self.turn_id, code="opencode.retry",
                    message=f"OpenCode retries the model call (attempt {attempt}): {status.get('message')}",
                    detail={"attempt": attempt, "message": status.get("message"), "next": status.get("next")},
                ))
        elif stype == "idle":
            return self._idle()
        return []

    def _idle(self) -> list[Signal]:
        if self.turn_id is None or not self._busy:
            return []  # a duplicate idle, or one from before this turn's prompt was taken up
        if self._aborted or self.interrupt_requested:
            state: Literal["completed", "failed", "interrupted"] = "interrupted"
        elif self._error is not None:
            state = "failed"
        else:
            state = "completed"
        usage = _sum(self._usage.values())
        signal = Signal("idle", state=state, error=self._error if state == "failed" else None,
                        stop_reason=self._finish, usage=usage)
        self._busy = False
        return [signal]

    # items ---------------------------------------------------------------------------------------

    def _start(self, events: list[EventBase], part_id: str, kind: ItemKind, stream: StreamKind | None,
               message_id: JsonValue, *, tool: str | None = None, title: str | None = None,
               data: JsonObject | None = None) -> _Item:
        item = _Item(part_id, kind, stream, message_id if isinstance(message_id, str) else None, tool)
        self._items[part_id] = item
        events.append(ItemStarted(**self.identity, turn_id=self.turn_id, item_id=part_id, kind=kind, title=title,
                                  data=data, provider_refs=self._refs(part_id)))
        return item

    def _delta(self, events: list[EventBase], item: _Item, text: str) -> None:
        # Text still in flight after the abort is dropped (and left out of the item's completed
        # text): once the turn is aborted nothing of it may stream (grammar rule 11).
        if not text or item.stream is None or self.interrupt_requested:
            return
        item.text.append(text)
        events.append(ContentDelta(**self.identity, turn_id=self.turn_id, item_id=item.item_id, stream=item.stream,
                                   delta=text))

    def _complete(self, events: list[EventBase], item: _Item, *, status: str = "completed", title: str | None = None,
                  text: str | None = None, data: JsonObject | None = None) -> None:
        self._items.pop(item.item_id, None)
        self._done.add(item.item_id)
        events.append(ItemCompleted(**self.identity, turn_id=self.turn_id, item_id=item.item_id, kind=item.kind,  # type: ignore[arg-type]
                                    status=status, title=title, text=text, data=data,  # type: ignore[arg-type]
                                    provider_refs=self._refs(item.item_id)))


def _int(value: JsonValue) -> int:
    """A JSON number (or numeric string) as an int; 0 when absent or not a number."""
    return int(value) if isinstance(value, (int, float, str)) and value else 0


def _list(value: JsonValue) -> list[JsonValue]:
    """A JSON array; empty when absent or not an array."""
    return value if isinstance(value, list) else []


def _tool_title(tool: str, inp: JsonObject) -> str:
    for key in ("command", "filePath", "path", "pattern", "url", "query"):
        value = inp.get(key)
        if isinstance(value, str) and value:
            return f"{tool}: {value[:200]}"
    return tool


def _sum(usages: Iterable[TokenUsage]) -> TokenUsage | None:
    items = list(usages)
    if not items:
        return None
    total = TokenUsage(input_tokens=0, output_tokens=0, cached_input_tokens=0, reasoning_tokens=0, total_tokens=0)
    cost = None
    for u in items:
        total = TokenUsage(
            input_tokens=(total.input_tokens or 0) + (u.input_tokens or 0),
            output_tokens=(total.output_tokens or 0) + (u.output_tokens or 0),
            cached_input_tokens=(total.cached_input_tokens or 0) + (u.cached_input_tokens or 0),
            reasoning_tokens=(total.reasoning_tokens or 0) + (u.reasoning_tokens or 0),
            total_tokens=(total.total_tokens or 0) + (u.total_tokens or 0),
        )
        if u.cost is not None:
            cost = (cost or 0.0) + u.cost
    if cost is not None:
        total = TokenUsage(input_tokens=total.input_tokens, output_tokens=total.output_tokens,
                           cached_input_tokens=total.cached_input_tokens, reasoning_tokens=total.reasoning_tokens,
                           total_tokens=total.total_tokens, cost=cost, currency="USD")
    return total
