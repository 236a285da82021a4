"""Translate ACP ``session/update`` payloads into canonical events, one session at a time.

Pure state, no I/O and no threads: :class:`Translator` is owned by one session actor and only
called on that actor's thread. Every method returns the events to emit, in native order.

Mapping (ACP v1 stable kinds):
- ``agent_message_chunk`` -> ``item.started(assistant_message)`` on the first non-empty chunk of a
  message, then ``content.delta(assistant_text)``; the item completes at the next item boundary
  (a new ``messageId``, a tool call) or at turn end with ``text`` = its concatenated deltas;
- ``agent_thought_chunk`` -> the same with a ``reasoning`` item and ``reasoning_text`` deltas;
- ``tool_call`` / ``tool_call_update`` -> ``item.started`` / ``item.updated`` / ``item.completed``
  with the kind mapped from ToolKind; an update for an id never announced creates the item first;
- ``plan`` -> ``turn.plan.updated``; ``usage_update`` and the prompt result's ``usage`` ->
  ``thread.token-usage.updated`` (cumulative, never backwards);
- ``current_mode_update``, ``config_option_update``, ``available_commands_update`` ->
  ``session.configured``; ``session_info_update`` -> ``thread.metadata.updated``;
- ``user_message_chunk`` is never a turn: it only appears when ``session/load`` replays history.
  Content and tool updates outside a running turn (load replay, or late updates after the
  prompt result) are dropped, because the grammar forbids items after ``turn.completed``.
"""

from __future__ import annotations

import logging
from typing import Literal

import msgspec

from paddock.contract import (
    ContentDelta,
    EventBase,
    EventIdentity,
    ItemCompleted,
    ItemKind,
    ItemStatus,
    ItemStarted,
    ItemUpdated,
    JsonObject,
    JsonValue,
    PlanStep,
    ProviderRefs,
    SessionConfigured,
    StreamKind,
    ThreadMetadataUpdated,
    ThreadTokenUsageUpdated,
    TokenUsage,
    TurnAborted,
    TurnPlanUpdated,
    TurnState,
)

from paddock.actors import TurnTracker

from . import _wire as w

__all__ = ["TOOL_ITEM_KINDS", "Translator", "item_kind_of_tool", "stop_reason_state"]

log = logging.getLogger(__name__)
_replace = msgspec.structs.replace

TOOL_ITEM_KINDS: dict[str, ItemKind] = {
    "execute": "command",
    "edit": "file_change",
    "delete": "file_change",
    "move": "file_change",
    "read": "file_read",
    "search": "search",
    "fetch": "web_search",
}
_TOOL_STATUS: dict[str, ItemStatus] = {"pending": "pending", "in_progress": "in_progress", "completed": "completed", "failed": "failed"}
_PLAN_STATUS: dict[str, Literal["pending", "in_progress", "completed"]] = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}
_COMMAND_TEXT_LIMIT = 200


def item_kind_of_tool(tool_kind: str | None) -> ItemKind:
    """The canonical item kind for an ACP ToolKind (``other``, ``think``, unknown -> tool_call)."""
    return TOOL_ITEM_KINDS.get(tool_kind or "", "tool_call")


def stop_reason_state(stop_reason: str, interrupt_requested: bool) -> TurnState:
    """The turn state for a prompt's StopReason: ``cancelled`` is ``interrupted`` when the host
    asked for it, else ``cancelled``; every other reason ends the turn normally."""
    if stop_reason == "cancelled":
        return "interrupted" if interrupt_requested else "cancelled"
    return "completed"


class _Tool:
    __slots__ = ("item_id", "kind", "tool_kind", "title", "status", "declined", "text", "streamed")

    def __init__(self, item_id: str, tool_kind: str | None, title: str | None) -> None:
        self.item_id = item_id
        self.tool_kind = tool_kind
        self.kind = item_kind_of_tool(tool_kind)
        self.title = title
        self.status: ItemStatus = "pending"
        self.declined = False
        self.text: str | None = None
        self.streamed = ""


_COALESCE = 256  # parts per stream beyond which a batch's end joins them into one chunk


class _Stream:
    """One streaming item. Its text is kept as ``chunks`` (joined runs of deltas) plus the
    ``parts`` of the current batch: :meth:`Translator.end_batch` joins the parts into a chunk at
    the end of a batch once there are more than ``_COALESCE`` of them, so an item of millions of
    deltas holds its text (about one byte per ASCII character), not one str object per delta."""

    __slots__ = ("chunks", "item_id", "kind", "stream", "message_id", "parts", "template")

    def __init__(self, item_id: str, kind: ItemKind, stream: StreamKind, message_id: str | None, template: ContentDelta) -> None:
        self.item_id = item_id
        self.kind = kind
        self.stream = stream
        self.message_id = message_id
        self.parts: list[str] = []
        self.chunks: list[str] = []
        # Hot path: each delta is a C-level copy of this template (kwargs construction is 4x slower).
        self.template = template

    def text(self) -> str:
        """The whole text so far: the joined chunks, then this batch's parts."""
        return "".join([*self.chunks, *self.parts])


def _content_text(content: list[JsonValue] | None) -> str | None:
    if not content:
        return None
    texts: list[str] = []
    for entry in content:
        if isinstance(entry, dict) and entry.get("type") == "content":
            block = entry.get("content")
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts) if texts else None


def _tool_data(fields: w.ToolCallFields) -> JsonObject:
    data: JsonObject = {"tool_call_id": fields.toolCallId}
    if fields.kind is not None:
        data["tool_kind"] = fields.kind
    if fields.rawInput not in (None, {}):
        data["input"] = fields.rawInput
    if fields.rawOutput is not None:
        data["output"] = fields.rawOutput
    if fields.locations:
        data["locations"] = [loc.path for loc in fields.locations]
    if fields.content:
        diffs: list[JsonValue] = [
            {"path": c.get("path"), "old_text": c.get("oldText"), "new_text": c.get("newText")}
            for c in fields.content
            if isinstance(c, dict) and c.get("type") == "diff"
        ]
        if diffs:
            data["diffs"] = diffs
        terminals = [c.get("terminalId") for c in fields.content if isinstance(c, dict) and c.get("type") == "terminal"]
        if terminals:
            data["terminals"] = terminals
    return data


class Translator:
    """One session's translation state: the running turn, its open items and the thread's
    cumulative usage. Call it from one thread only (the session actor's)."""

    def __init__(self, driver: str, instance_id: str, thread_id: str, *, turn: TurnTracker | None = None) -> None:
        """``turn`` is the session's :class:`~paddock.actors.TurnTracker` (the translator keeps
        its own when used alone)."""
        self.driver = driver
        self.instance_id = instance_id
        self.thread_id = thread_id
        self.native_session_id: str | None = None
        self.turn_evidence = False
        self._ack_interrupt = False
        self._message: _Stream | None = None
        self._thought: _Stream | None = None
        self._last_text = ""
        self._tools: dict[str, _Tool] = {}
        self._seq = 0
        self._usage = TokenUsage()
        self._turn_usage: TokenUsage | None = None
        self._env = EventIdentity(driver=driver, instance_id=instance_id, thread_id=thread_id)
        self.turn = turn if turn is not None else TurnTracker(self._env)

    # turn boundaries -----------------------------------------------------------------------------

    @property
    def turn_id(self) -> str | None:
        return self.turn.turn_id

    @property
    def in_turn(self) -> bool:
        return self.turn.turn_id is not None

    @property
    def interrupt_requested(self) -> bool:
        return self.turn.interrupt_requested

    @interrupt_requested.setter
    def interrupt_requested(self, value: bool) -> None:
        self.turn.interrupt_requested = value

    def start_turn(
        self, turn_id: str, *, model: str | None, interaction_mode: str | None, input_text: str | None = None
    ) -> list[EventBase]:
        self.turn_evidence = False
        self._ack_interrupt = False
        self._message = self._thought = None
        self._last_text = ""
        self._tools = {}
        self._turn_usage = None
        return [self.turn.start(turn_id, model=model, interaction_mode=interaction_mode, input_text=input_text)]

    def close_turn(self, state: TurnState, out: list[EventBase], usage: w.PromptUsage | None = None) -> TokenUsage | None:
        """Close the running turn's open items (and fold the prompt result's ``usage``), before its
        ``turn.completed``: with state ``interrupted`` a ``turn.aborted`` is last. Returns the
        turn's usage. No-op without a turn."""
        turn_id = self.turn_id
        if turn_id is None:
            return None
        self._close_streams(out)
        tool_status: ItemStatus = "completed" if state == "completed" else "failed" if state == "failed" else "cancelled"
        for tool in self._tools.values():
            if tool.status in ("completed", "failed"):
                continue
            status: ItemStatus = "declined" if tool.declined else tool_status
            out.append(
                ItemCompleted(**self._env, turn_id=turn_id, item_id=tool.item_id, kind=tool.kind,
                              status=status, title=tool.title, text=tool.text)
            )
        turn_usage = None
        if usage is not None:
            turn_usage = TokenUsage(
                input_tokens=usage.inputTokens,
                output_tokens=usage.outputTokens,
                cached_input_tokens=usage.cachedReadTokens,
                reasoning_tokens=usage.thoughtTokens,
                total_tokens=usage.totalTokens
                if usage.totalTokens is not None
                else ((usage.inputTokens or 0) + (usage.outputTokens or 0) or None),
            )
            out.extend(self._add_usage(turn_usage))
        if state == "interrupted":
            out.append(TurnAborted(**self._env, turn_id=turn_id, reason="interrupted by the host"))
        self._tools = {}
        return turn_usage

    def complete_turn(
        self,
        state: TurnState,
        *,
        stop_reason: str | None = None,
        error: str | None = None,
        usage: w.PromptUsage | None = None,
    ) -> list[EventBase]:
        """End the running turn: :meth:`close_turn`, then its one ``turn.completed``. No-op
        without a turn."""
        out: list[EventBase] = []
        turn_usage = self.close_turn(state, out, usage)
        done = self.turn.complete(state, stop_reason=stop_reason, error=error, usage=turn_usage)
        if done is not None:
            out.append(done)
        return out

    def last_message_text(self) -> str:
        """The text of the running turn's latest assistant message ("" when none)."""
        if self._message is not None:
            return self._message.text()
        return self._last_text

    def interrupt_acknowledged(self) -> None:
        """After this, no new item starts in the running turn (grammar rule 6)."""
        self._ack_interrupt = True

    # session/update ------------------------------------------------------------------------------

    def updates(self, updates: list[w.SessionUpdate | str]) -> list[EventBase]:
        out: list[EventBase] = []
        for update in updates:
            self.update(update, out)
        self.end_batch()
        return out

    def end_batch(self) -> None:
        """After a batch of :meth:`update` calls: join the open streams' many parts into one
        chunk each (bounded memory per delta, one join per batch instead of a check per delta)."""
        for stream in (self._message, self._thought):
            if stream is not None and len(stream.parts) > _COALESCE:
                stream.chunks.append("".join(stream.parts))
                stream.parts.clear()

    def update(self, u: w.SessionUpdate | str, out: list[EventBase]) -> None:
        # dispatched on the exact class (``type(u) is``: mypy narrows it, and it is the cheapest test)
        if type(u) is w.AgentMessageChunk:
            stream = self._message
            content = u.content
            if (
                stream is not None
                and content is not None
                and content.text
                and (u.messageId is None or u.messageId == stream.message_id)
            ):
                stream.parts.append(content.text)
                out.append(_replace(stream.template, delta=content.text))
                return
            self._chunk(u, out, thought=False)
        elif type(u) is w.AgentThoughtChunk:
            self._chunk(u, out, thought=True)
        elif isinstance(u, (w.ToolCallStart, w.ToolCallUpdate)):
            self._tool(u, out)
        elif type(u) is w.PlanUpdate:
            if self.turn_id is not None:
                self.turn_evidence = True
                steps = tuple(
                    PlanStep(step=e.content, status=_PLAN_STATUS.get(e.status or "", "pending"))
                    for e in u.entries
                )
                out.append(TurnPlanUpdated(**self._env, turn_id=self.turn_id, steps=steps))
        elif type(u) is w.UsageUpdate:
            if self.turn_id is not None:
                self.turn_evidence = True
            out.extend(
                self._add_usage(
                    TokenUsage(
                        context_window=u.size or None,
                        cost=u.cost.amount if u.cost else None,
                        currency=u.cost.currency if u.cost else None,
                    )
                )
            )
        elif type(u) is w.CurrentModeUpdate:
            out.append(SessionConfigured(**self._env, config={"current_mode": u.currentModeId}))
        elif type(u) is w.ConfigOptionUpdate:
            out.append(SessionConfigured(**self._env, config={"config_options": u.configOptions}))
        elif type(u) is w.AvailableCommandsUpdate:
            out.append(SessionConfigured(**self._env, config={"available_commands": _commands(u.availableCommands)}))
        elif type(u) is w.SessionInfoUpdate:
            meta = {"updated_at": u.updatedAt} if u.updatedAt else {}
            out.append(ThreadMetadataUpdated(**self._env, title=u.title, metadata=meta))
        elif type(u) is w.UserMessageChunk:
            pass  # only seen in session/load replay: history, not a turn
        else:
            log.debug("ignoring session/update kind %r on thread %s", w.update_kind(u), self.thread_id)

    def _chunk(self, u: w.AgentMessageChunk | w.AgentThoughtChunk, out: list[EventBase], *, thought: bool) -> None:
        turn_id = self.turn_id
        if turn_id is None:
            return
        self.turn_evidence = True
        text = u.content.text if u.content is not None else None
        if not text:
            return
        stream = self._thought if thought else self._message
        if stream is not None and u.messageId is not None and stream.message_id not in (None, u.messageId):
            self._close(stream, out)
            stream = None
        if stream is None:
            if self._ack_interrupt:
                return
            self._seq += 1
            item_id = f"{turn_id}:{'r' if thought else 'm'}{self._seq}"
            kind: ItemKind = "reasoning" if thought else "assistant_message"
            sk: StreamKind = "reasoning_text" if thought else "assistant_text"
            template = ContentDelta(**self._env, turn_id=turn_id, item_id=item_id, stream=sk, delta="")
            stream = _Stream(item_id, kind, sk, u.messageId, template)
            if thought:
                self._thought = stream
            else:
                self._message = stream
            refs = ProviderRefs(thread=self.native_session_id, item=u.messageId) if u.messageId else None
            out.append(ItemStarted(**self._env, turn_id=turn_id, item_id=item_id, kind=kind, provider_refs=refs))
        stream.parts.append(text)
        out.append(_replace(stream.template, delta=text))

    def _close(self, stream: _Stream, out: list[EventBase]) -> None:
        out.append(
            ItemCompleted(**self._env, turn_id=self.turn_id, item_id=stream.item_id, kind=stream.kind,
                          text=stream.text())
        )
        if stream is self._message:
            self._last_text = stream.text()
            self._message = None
        if stream is self._thought:
            self._thought = None

    def _close_streams(self, out: list[EventBase]) -> None:
        if self._thought is not None:
            self._close(self._thought, out)
        if self._message is not None:
            self._close(self._message, out)

    def ensure_tool(self, fields: w.ToolCallFields, out: list[EventBase]) -> _Tool | None:
        """The tool item for ``fields.toolCallId``, created (``item.started``) on first sight.
        ``None`` outside a turn, or when an interrupt was acknowledged and the id is new."""
        turn_id = self.turn_id
        if turn_id is None:
            return None
        tool = self._tools.get(fields.toolCallId)
        if tool is not None:
            return tool
        if self._ack_interrupt:
            return None
        self._close_streams(out)
        tool = _Tool(fields.toolCallId or f"{turn_id}:t{len(self._tools) + 1}", fields.kind, fields.title)
        tool.status = "in_progress" if fields.status == "in_progress" else "pending"
        self._tools[fields.toolCallId] = tool
        refs = ProviderRefs(thread=self.native_session_id, item=fields.toolCallId)
        out.append(
            ItemStarted(**self._env, turn_id=turn_id, item_id=tool.item_id, kind=tool.kind, title=tool.title,
                        status=tool.status,
                        data=_tool_data(fields), provider_refs=refs)
        )
        return tool

    def _command_output(self, tool: _Tool, text: str, *, final: bool, out: list[EventBase]) -> None:
        # ACP says tool content replaces the previous content. Agents stream command output
        # either cumulatively (each update holds everything so far) or piecewise (each update
        # holds the new piece); both become command_output deltas. The final content is
        # authoritative: only a suffix beyond what was streamed is still emitted.
        # Content sent before the command runs (pending) is a description, not output.
        streamed = tool.streamed
        if final and (not streamed or not text.startswith(streamed)):
            return
        if text.startswith(streamed):
            delta = text[len(streamed):]
        else:
            delta = text
        if delta:
            tool.streamed = streamed + delta
            out.append(ContentDelta(**self._env, turn_id=self.turn_id, item_id=tool.item_id,
                                    stream="command_output", delta=delta))

    def tool_kind_of(self, tool_call_id: str) -> str | None:
        tool = self._tools.get(tool_call_id)
        return tool.tool_kind if tool is not None else None

    def mark_declined(self, tool_call_id: str) -> None:
        tool = self._tools.get(tool_call_id)
        if tool is not None:
            tool.declined = True

    def _tool(self, u: w.ToolCallStart | w.ToolCallUpdate, out: list[EventBase]) -> None:
        if self.turn_id is None:
            return
        self.turn_evidence = True
        known = u.toolCallId in self._tools
        tool = self.ensure_tool(u, out)
        if tool is None or tool.status in ("completed", "failed"):
            return
        if u.kind is not None and u.kind != tool.tool_kind:
            tool.tool_kind = u.kind
            tool.kind = item_kind_of_tool(u.kind)
        if u.title is not None:
            tool.title = u.title
        text = _content_text(u.content)
        status = _TOOL_STATUS.get(u.status or "")
        if status == "in_progress":
            tool.status = status
        if text is not None:
            tool.text = text
            if tool.kind == "command" and tool.status == "in_progress":
                self._command_output(tool, text, final=status in ("completed", "failed"), out=out)
        if status in ("completed", "failed"):
            tool.status = status
            out.append(
                ItemCompleted(**self._env, turn_id=self.turn_id, item_id=tool.item_id, kind=tool.kind,
                              status=status, title=tool.title, text=tool.text, data=_tool_data(u))
            )
        elif known:
            if status is not None:
                tool.status = status
            out.append(
                ItemUpdated(**self._env, turn_id=self.turn_id, item_id=tool.item_id, kind=tool.kind,
                            title=tool.title, status=status, data=_tool_data(u))
            )

    # usage ---------------------------------------------------------------------------------------

    def _add_usage(self, delta: TokenUsage) -> list[EventBase]:
        """Fold per-turn token counts (added) and session-wide figures (max) into the thread's
        cumulative usage; emit only when it changed. Nothing ever decreases."""
        old = self._usage

        def add(a: int | None, b: int | None) -> int | None:
            return a if b is None else (b if a is None else a + b)

        def keep_max(a, b):
            return a if b is None else (b if a is None else max(a, b))

        new = TokenUsage(
            input_tokens=add(old.input_tokens, delta.input_tokens),
            output_tokens=add(old.output_tokens, delta.output_tokens),
            cached_input_tokens=add(old.cached_input_tokens, delta.cached_input_tokens),
            reasoning_tokens=add(old.reasoning_tokens, delta.reasoning_tokens),
            total_tokens=add(old.total_tokens, delta.total_tokens),
            context_window=delta.context_window or old.context_window,
            cost=keep_max(old.cost, delta.cost),
            currency=delta.currency or old.currency,
        )
        if new == old:
            return []
        self._usage = new
        return [ThreadTokenUsageUpdated(**self._env, turn_id=self.turn_id, usage=new)]

    @property
    def usage(self) -> TokenUsage:
        return self._usage

    def restore_usage(self, usage: TokenUsage) -> None:
        self._usage = usage


def _commands(commands: list[JsonValue]) -> list[JsonValue]:
    # qwen sends a 570 KB available_commands_update line: keep names and short descriptions only.
    out: list[JsonValue] = []
    for cmd in commands:
        if isinstance(cmd, dict) and isinstance(cmd.get("name"), str):
            desc = cmd.get("description")
            out.append({"name": cmd["name"], "description": desc[:_COMMAND_TEXT_LIMIT] if isinstance(desc, str) else None})
    return out
