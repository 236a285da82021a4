"""Codex app-server notifications -> canonical events, for one thread.

Pure functions and one small stateful :class:`Translator` per thread (native ids, the items of
the running turn, the last token total). The mapping follows T3 Code's Codex provider layer
(``codex-app-server.md``): ``item/started``/``item/completed`` -> ``item.*`` (item types by
:data:`ITEM_KINDS`), the ``item/*`` deltas -> ``content.delta`` (:data:`DELTA_STREAMS`),
``turn/plan/updated`` -> ``turn.plan.updated``, ``turn/diff/updated`` -> ``turn.diff.updated``,
``thread/tokenUsage/updated`` -> ``thread.token-usage.updated`` (the cumulative ``total``),
``error`` -> ``runtime.warning`` when a retry follows, else ``runtime.error``,
``account/rateLimits/updated`` (when it knows anything) -> ``account.rate-limits.updated``, and the turn's
own ``turn/completed`` -> ``turn.completed``.

Thread: a translator is used on its session actor's thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from paddock.contract import (
    AccountRateLimitsUpdated,
    ModelRerouted,
    ContentDelta,
    EventBase,
    EventIdentity,
    FileEdit,
    ItemCompleted,
    ItemKind,
    ItemStarted,
    JsonObject,
    JsonValue,
    PlanStep,
    ProviderRefs,
    RuntimeErrorEvent,
    RuntimeWarningEvent,
    ThreadStateChanged,
    ThreadTokenUsageUpdated,
    TokenUsage,
    TurnDiffUpdated,
    TurnPlanUpdated,
    json_object,
    json_str,
)

from paddock.drivers._subjects import edit, patch

from . import _wire as w

__all__ = [
    "DELTA_STREAMS",
    "ITEM_KINDS",
    "ITEM_STATUSES",
    "ItemFields",
    "TRANSLATED",
    "TURN_STATES",
    "Translator",
    "item_fields",
    "turn_error_text",
    "usage_of",
]

ITEM_KINDS: dict[str, ItemKind] = {
    "userMessage": "user_message",
    "agentMessage": "assistant_message",
    "reasoning": "reasoning",
    "plan": "plan",
    "commandExecution": "command",
    "fileChange": "file_change",
    "mcpToolCall": "mcp_tool_call",
    "dynamicToolCall": "tool_call",
    "collabAgentToolCall": "tool_call",
    "webSearch": "web_search",
    "imageView": "file_read",
}
"""``ThreadItem.type`` -> canonical item kind (anything else is ``other``)."""

ITEM_STATUSES: dict[str, str] = {
    "inProgress": "in_progress",
    "completed": "completed",
    "failed": "failed",
    "declined": "declined",
}

TURN_STATES: dict[str, str] = {"completed": "completed", "interrupted": "interrupted", "failed": "failed"}
"""``Turn.status`` of ``turn/completed`` -> canonical turn state."""

DELTA_STREAMS: dict[str, str] = {
    "item/agentMessage/delta": "assistant_text",
    "item/reasoning/textDelta": "reasoning_text",
    "item/reasoning/summaryTextDelta": "reasoning_summary_text",
    "item/plan/delta": "plan_text",
    "item/commandExecution/outputDelta": "command_output",
    "item/fileChange/outputDelta": "file_change_output",
}
"""Delta notification -> canonical stream kind."""

_PLAN_STATUS = {"pending": "pending", "inProgress": "in_progress", "completed": "completed"}


def usage_of(u: w.TokenUsage) -> TokenUsage:
    """The cumulative ``total`` of a ``thread/tokenUsage/updated`` (monotonic per thread, also
    across a resume: Codex restores it from the rollout)."""
    t = u.total
    return TokenUsage(
        input_tokens=t.inputTokens, output_tokens=t.outputTokens, cached_input_tokens=t.cachedInputTokens,
        reasoning_tokens=t.reasoningOutputTokens, total_tokens=t.totalTokens, context_window=u.modelContextWindow,
    )


def turn_error_text(error: w.TurnError | None) -> str | None:
    """``turn.error`` as one sentence: its message, with ``codexErrorInfo`` when it says more."""
    if error is None:
        return None
    info = error.codexErrorInfo
    if info is None:
        return error.message or None
    label = info if isinstance(info, str) else next(iter(info), "") if isinstance(info, dict) else str(info)
    return f"{error.message} ({label})" if error.message else str(label)


def _text_of_content(content: JsonValue) -> str | None:
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else (json_str(p.get("text")) or "") if isinstance(p, dict) else "" for p in content]
        return "".join(parts) if parts else None
    return content if isinstance(content, str) else None


def file_edits(changes: tuple[JsonValue, ...]) -> list[FileEdit]:
    """A v2 ``fileChange`` item's changes as the files a request approves. ``diff`` holds the
    whole content for ``add`` and ``delete`` and a unified diff for ``update``
    (codex-app-server.md, recordings ``codex-transcript-patch-*``)."""
    out = []
    for change in changes:
        path = change.get("path") if isinstance(change, dict) else None
        if not isinstance(change, dict) or not isinstance(path, str):
            continue
        kind, diff = change.get("kind"), change.get("diff")
        kind_type = kind.get("type") if isinstance(kind, dict) else kind
        text = diff if isinstance(diff, str) else None
        if kind_type == "add":
            out.append(edit(path, None, text or ""))
        elif kind_type == "delete":
            out.append(edit(path, text or "", None))
        else:
            move = kind.get("move_path") if isinstance(kind, dict) else None
            out.append(patch(path, text, "move" if isinstance(move, str) else "update",
                             move_to=move if isinstance(move, str) else None))
    return out


def _change(change: JsonObject) -> JsonObject:
    kind = change.get("kind")
    return {"path": change.get("path"), "kind": kind.get("type") if isinstance(kind, dict) else kind}


class ItemFields(TypedDict):
    """What a canonical item event says of one native item."""

    kind: ItemKind
    title: str | None
    text: str | None
    data: JsonObject


def item_fields(item: w.Item) -> ItemFields:
    """``kind``, ``title``, ``text`` and ``data`` of a canonical item event for ``item``."""
    kind = ITEM_KINDS.get(item.type, "other")
    title: str | None = None
    text: str | None = None
    data: JsonObject = {"native_type": item.type}
    if kind == "assistant_message" or kind == "plan":
        text = item.text
    elif kind == "user_message":
        text = _text_of_content(item.content)
    elif kind == "reasoning":
        text = _text_of_content(item.content) or None
        if item.summary:
            data["summary"] = [s if isinstance(s, str) else s for s in item.summary]
    elif kind == "command":
        title = item.command
        data.update(command=item.command, cwd=item.cwd)
        if item.exitCode is not None:
            data["exit_code"] = item.exitCode
        if item.aggregatedOutput is not None:
            data["output"] = item.aggregatedOutput
    elif kind == "file_change":
        changes = [_change(c) for c in item.changes if isinstance(c, dict)]
        data["changes"] = list[JsonValue](changes)
        title = ", ".join(str(c["path"]) for c in changes) or None
    elif kind == "mcp_tool_call":
        title = f"{item.server}/{item.tool}" if item.server else item.tool
        data.update(server=item.server, tool=item.tool, arguments=item.arguments)
        if item.error is not None:
            data["error"] = item.error
        # The call's result as the model got it, as every driver reports it: the text blocks of
        # ``result.content`` (McpToolCallResult), else ``error.message`` (McpToolCallError).
        text = _text_of_content(json_object(item.result).get("content")) or json_str(json_object(item.error).get("message"))
    elif kind == "web_search":
        title = item.query
    elif kind == "tool_call":
        title = item.tool
    return {"kind": kind, "title": title, "text": text, "data": data}


class Translator:
    """The canonical view of one Codex thread. ``turn_id`` is our id of the running turn and
    ``native_turn_id`` Codex's (equal unless the host chose the id); notifications of another
    native turn (a late event of an ended turn) are dropped. ``interrupted`` stops new items of
    the running turn (grammar rule 6)."""

    def __init__(self, identity: EventIdentity) -> None:
        self.identity = identity
        self.native_thread_id: str | None = None
        self.turn_id: str | None = None
        self.native_turn_id: str | None = None
        self.interrupted = False
        self.usage: TokenUsage | None = None
        self.titles: dict[str, str] = {}
        """Item id -> title, for the requests that name an item of the running turn."""
        self.changes: dict[str, list[FileEdit]] = {}
        """``fileChange`` item id -> its files, for the approval that names the item."""
        self._open_items: set[str] = set()

    # turn bookkeeping (the session actor owns start and completion) ---------------------------

    def begin(self, turn_id: str, native_turn_id: str | None) -> None:
        self.turn_id, self.native_turn_id = turn_id, native_turn_id
        self.interrupted = False
        self._open_items.clear()
        self.titles.clear()
        self.changes.clear()

    def end(self) -> None:
        self.turn_id = self.native_turn_id = None
        self.interrupted = False
        self._open_items.clear()
        self.titles.clear()
        self.changes.clear()

    def _ours(self, native_turn: str | None) -> bool:
        return self.turn_id is not None and (native_turn is None or native_turn == self.native_turn_id)

    def refs(self, item: str | None = None, request: str | None = None) -> ProviderRefs:
        return ProviderRefs(thread=self.native_thread_id, turn=self.native_turn_id, item=item, request=request)

    # notifications --------------------------------------------------------------------------

    def delta(self, stream: str, d: w.Delta, out: list[EventBase]) -> None:
        # The hot path (one call per streamed chunk): checks inlined, identity fields by name.
        turn = d.turnId
        if (not d.delta or self.turn_id is None or (turn is not None and turn != self.native_turn_id)
                or d.itemId not in self._open_items):
            return
        ident = self.identity
        out.append(ContentDelta(driver=ident["driver"], instance_id=ident["instance_id"], thread_id=ident["thread_id"],
                                turn_id=self.turn_id, item_id=d.itemId, stream=stream, delta=d.delta))  # type: ignore[arg-type]

    def item_started(self, n: w.ItemNotification, out: list[EventBase]) -> None:
        if not self._ours(n.turnId) or self.interrupted:
            return
        f = item_fields(n.item)
        self._open_items.add(n.item.id)
        if f["title"]:
            self.titles[n.item.id] = f["title"]
        if n.item.type == "fileChange":
            self.changes[n.item.id] = file_edits(n.item.changes)
        out.append(ItemStarted(**self.identity, turn_id=self.turn_id, item_id=n.item.id, kind=f["kind"],
                               title=f["title"], status="in_progress", data=f["data"], provider_refs=self.refs(n.item.id)))

    def item_completed(self, n: w.ItemNotification, out: list[EventBase]) -> None:
        if not self._ours(n.turnId):
            return
        if n.item.id not in self._open_items:
            if self.interrupted:
                return
            self.item_started(n, out)  # an item Codex reports only once, completed
        self._open_items.discard(n.item.id)
        f = item_fields(n.item)
        status = ITEM_STATUSES.get(n.item.status or "completed", "completed")
        if status == "in_progress":
            status = "completed"
        out.append(ItemCompleted(**self.identity, turn_id=self.turn_id, item_id=n.item.id, kind=f["kind"],
                                 status=status, title=f["title"], text=f["text"], data=f["data"],  # type: ignore[arg-type]
                                 provider_refs=self.refs(n.item.id)))

    def plan(self, n: w.PlanUpdated, out: list[EventBase]) -> None:
        if not self._ours(n.turnId):
            return
        steps = tuple(PlanStep(step=p.step, status=_PLAN_STATUS.get(p.status, "pending")) for p in n.plan)  # type: ignore[arg-type]
        out.append(TurnPlanUpdated(**self.identity, turn_id=self.turn_id, steps=steps, explanation=n.explanation))

    def diff(self, n: w.TurnDiffUpdated, out: list[EventBase]) -> None:
        if not self._ours(n.turnId):
            return
        out.append(TurnDiffUpdated(**self.identity, turn_id=self.turn_id, diff=n.diff))

    def token_usage(self, n: w.TokenUsageNotification, out: list[EventBase]) -> None:
        usage = usage_of(n.tokenUsage)
        last = self.usage
        if last is not None and (usage.total_tokens or 0) < (last.total_tokens or 0):
            return  # never backwards within a thread (grammar rule 4)
        self.usage = usage
        turn_id = self.turn_id if self._ours(n.turnId) else None
        out.append(ThreadTokenUsageUpdated(**self.identity, turn_id=turn_id, usage=usage))

    def error(self, n: w.ErrorNotification, out: list[EventBase]) -> None:
        text = turn_error_text(n.error) or "the app-server reported an error"
        detail = {"codex_error_info": n.error.codexErrorInfo, "will_retry": n.willRetry}
        turn_id = self.turn_id if self._ours(n.turnId) else None
        if n.willRetry:
            out.append(RuntimeWarningEvent(**self.identity, turn_id=turn_id, code="codex.retrying", message=text, detail=detail))
        else:
            out.append(RuntimeErrorEvent(**self.identity, turn_id=turn_id, code="codex.error", message=text, detail=detail))

    def rate_limits(self, n: w.RateLimitsNotification, out: list[EventBase]) -> None:
        # account/rateLimits/updated: sent after every model response, all null unless the
        # response carried Codex's rate-limit headers (x-codex-primary-used-percent, ...).
        s = n.rateLimits
        windows = [{"name": name, "used_percent": float(win.usedPercent), "resets_at": win.resetsAt,
                    "window_minutes": win.windowDurationMins}
                   for name, win in (("primary", s.primary), ("secondary", s.secondary)) if win is not None]
        if not windows and s.credits is None and s.rateLimitReachedType is None and not s.spendControlReached:
            return  # nothing known: no event
        limits: dict[str, Any] = {"windows": windows,
                                  "status": "rejected" if s.rateLimitReachedType or s.spendControlReached else "allowed"}
        for key, value in (("limit_id", s.limitId), ("plan", s.planType), ("reached", s.rateLimitReachedType)):
            if value is not None:
                limits[key] = value
        if s.credits is not None:
            limits["credits"] = {"has_credits": s.credits.hasCredits, "unlimited": s.credits.unlimited,
                                 "balance": s.credits.balance}
        out.append(AccountRateLimitsUpdated(**self.identity, limits=limits))  # an account's, not the turn's

    def warning(self, n: w.WarningNotification, out: list[EventBase]) -> None:
        out.append(RuntimeWarningEvent(**self.identity, turn_id=self.turn_id, code="codex.warning", message=n.message))

    def rerouted(self, n: w.ModelReroutedNotification, out: list[EventBase]) -> None:
        # model/rerouted: Codex answers the turn with another model than the one asked for.
        turn_id = self.turn_id if self._ours(n.turnId) else None
        out.append(ModelRerouted(**self.identity, turn_id=turn_id, from_model=n.fromModel, to_model=n.toModel,
                                 reason=n.reason))

    def status(self, n: w.ThreadStatusChanged, out: list[EventBase]) -> None:
        state = {"active": "active", "idle": "idle"}.get(n.status.type)
        if state is not None:
            out.append(ThreadStateChanged(**self.identity, state=state))  # type: ignore[arg-type]


TRANSLATED: dict[str, Callable[[Translator, Any, list[EventBase]], None]] = {
    "item/started": Translator.item_started,
    "item/completed": Translator.item_completed,
    "thread/tokenUsage/updated": Translator.token_usage,
    "turn/plan/updated": Translator.plan,
    "turn/diff/updated": Translator.diff,
    "error": Translator.error,
    "warning": Translator.warning,
    "account/rateLimits/updated": Translator.rate_limits,
    "model/rerouted": Translator.rerouted,
    "thread/status/changed": Translator.status,
}
"""The notifications a translator turns into events on its own: method -> its handler, called
with the payload the router decoded (see ``_server``)."""
