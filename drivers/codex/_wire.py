"""The app-server's wire shapes (``@openai/codex`` 0.171.0, ``codex-app-server.md``) as msgspec
Structs: what we decode from its notifications and requests, and what we send.

Inbound Structs ignore fields they do not name (the protocol adds fields often); a field we
read that the server leaves out takes its default. Outbound Structs omit unset fields, so what
we write is what ``tests/codex/test_schema.py`` validates against the schema the pinned binary
generates.
"""

from __future__ import annotations

import msgspec

from paddock.contract import JsonValue

__all__ = [
    "ClientInfo",
    "CommandApprovalParams",
    "Delta",
    "ErrorNotification",
    "FileChangeApprovalParams",
    "InitializeCapabilities",
    "InitializeParams",
    "InitializeResult",
    "Item",
    "ItemNotification",
    "LegacyApprovalParams",
    "ModelEntry",
    "ModelListResult",
    "PermissionsApprovalParams",
    "PlanUpdated",
    "ResolvedNotification",
    "TextInput",
    "Thread",
    "ThreadIdOnly",
    "ThreadResult",
    "ThreadStatusChanged",
    "TokenUsageNotification",
    "Turn",
    "TurnDiffUpdated",
    "TurnError",
    "TurnNotification",
    "TurnResult",
    "UserInputParams",
    "WarningNotification",
    "ModelReroutedNotification",
    "ImageInput",
    "LocalImageInput",
]


class _In(msgspec.Struct, frozen=True, gc=False):
    pass


class _Out(msgspec.Struct, frozen=True, omit_defaults=True):
    pass


# -- outbound ---------------------------------------------------------------------------------


class ClientInfo(_Out, frozen=True):
    name: str
    title: str
    version: str


class InitializeCapabilities(_Out, frozen=True):
    experimentalApi: bool = False


class InitializeParams(_Out, frozen=True):
    clientInfo: ClientInfo
    capabilities: InitializeCapabilities


class TextInput(msgspec.Struct, frozen=True, kw_only=True):
    """One ``UserInput`` of ``turn/start`` / ``turn/steer`` (every field written: the schema
    requires ``text_elements``)."""

    type: str = "text"
    text: str
    text_elements: tuple[JsonValue, ...] = ()


class LocalImageInput(msgspec.Struct, frozen=True, kw_only=True):
    """A ``localImage`` ``UserInput``: Codex reads the file itself."""

    type: str = "localImage"
    path: str


class ImageInput(msgspec.Struct, frozen=True, kw_only=True):
    """An ``image`` ``UserInput`` by URL (a ``data:`` URL for bytes the host passed)."""

    type: str = "image"
    url: str


# -- inbound ----------------------------------------------------------------------------------


class InitializeResult(_In, frozen=True):
    userAgent: str = ""
    codexHome: str | None = None


class ThreadIdOnly(_In, frozen=True):
    """Every thread-scoped notification and request carries ``threadId`` (legacy v1 requests
    carry ``conversationId`` instead)."""

    threadId: str | None = None
    conversationId: str | None = None


class ThreadStatus(_In, frozen=True):
    type: str = "idle"
    activeFlags: tuple[str, ...] = ()


class TurnError(_In, frozen=True):
    message: str = ""
    codexErrorInfo: JsonValue = None
    additionalDetails: JsonValue = None


class Turn(_In, frozen=True):
    id: str
    status: str = "inProgress"
    error: TurnError | None = None
    items: tuple[JsonValue, ...] = ()


class Thread(_In, frozen=True):
    id: str
    path: str | None = None
    cwd: str | None = None
    status: ThreadStatus | None = None
    turns: tuple[Turn, ...] = ()
    forkedFromId: str | None = None


class ThreadResult(_In, frozen=True):
    """The answer to ``thread/start``, ``thread/resume`` and ``thread/fork``."""

    thread: Thread
    model: str | None = None
    modelProvider: str | None = None
    approvalPolicy: JsonValue = None
    sandbox: JsonValue = None


class TurnResult(_In, frozen=True):
    turn: Turn


class Item(_In, frozen=True):
    """One ``ThreadItem`` of any type; the fields of the types we map, all optional."""

    type: str
    id: str
    text: str | None = None
    status: str | None = None
    command: str | None = None
    cwd: str | None = None
    aggregatedOutput: str | None = None
    exitCode: int | None = None
    changes: tuple[JsonValue, ...] = ()
    summary: tuple[JsonValue, ...] = ()
    content: JsonValue = None
    server: str | None = None
    tool: str | None = None
    query: str | None = None
    arguments: JsonValue = None
    result: JsonValue = None
    error: JsonValue = None


class McpStartupStatus(_In, frozen=True):
    """``mcpServer/startupStatus/updated``: one MCP server of a thread (``threadId``; ``None``
    for a server of no thread) is ``starting``, ``ready``, ``failed`` (with ``error``) or
    ``cancelled``."""

    name: str
    status: str
    threadId: str | None = None
    error: str | None = None


class McpServerStatus(_In, frozen=True):
    """One entry of ``mcpServerStatus/list``: ``runtimeStatus`` notStarted | starting |
    connected | authenticationRequired | failed | cancelled | disabled (``None``: unknown)."""

    name: str
    runtimeStatus: str | None = None
    tools: dict[str, JsonValue] = {}
    toolsError: str | None = None


class McpServerStatusList(_In, frozen=True):
    """``mcpServerStatus/list`` result (one page; ``nextCursor`` is ignored: a thread's own
    servers fit the default page)."""

    data: tuple[McpServerStatus, ...] = ()


class ItemNotification(_In, frozen=True):
    """``item/started`` and ``item/completed``."""

    item: Item
    threadId: str
    turnId: str | None = None


class Delta(_In, frozen=True):
    """Every ``item/*/delta``-like notification: agent text, reasoning, plan, command and file
    change output."""

    threadId: str
    itemId: str
    delta: str = ""
    turnId: str | None = None


class TurnNotification(_In, frozen=True):
    """``turn/started`` and ``turn/completed``."""

    threadId: str
    turn: Turn


class TurnDiffUpdated(_In, frozen=True):
    threadId: str
    turnId: str | None = None
    diff: str = ""


class PlanEntry(_In, frozen=True):
    step: str = ""
    status: str = "pending"


class PlanUpdated(_In, frozen=True):
    threadId: str
    turnId: str | None = None
    explanation: str | None = None
    plan: tuple[PlanEntry, ...] = ()


class UsageBreakdown(_In, frozen=True):
    totalTokens: int | None = None
    inputTokens: int | None = None
    cachedInputTokens: int | None = None
    outputTokens: int | None = None
    reasoningOutputTokens: int | None = None


class TokenUsage(_In, frozen=True):
    total: UsageBreakdown = UsageBreakdown()
    last: UsageBreakdown | None = None
    modelContextWindow: int | None = None


class TokenUsageNotification(_In, frozen=True):
    threadId: str
    tokenUsage: TokenUsage
    turnId: str | None = None


class ErrorNotification(_In, frozen=True):
    threadId: str
    error: TurnError
    willRetry: bool = False
    turnId: str | None = None


class ModelReroutedNotification(_In, frozen=True):
    threadId: str
    toModel: str
    turnId: str | None = None
    fromModel: str | None = None
    reason: str | None = None


class RateLimitWindow(_In, frozen=True):
    usedPercent: float = 0.0
    resetsAt: int | None = None
    """Unix seconds."""
    windowDurationMins: int | None = None


class CreditsSnapshot(_In, frozen=True):
    hasCredits: bool = False
    unlimited: bool = False
    balance: str | None = None


class RateLimitSnapshot(_In, frozen=True):
    limitId: str | None = None
    limitName: str | None = None
    primary: RateLimitWindow | None = None
    secondary: RateLimitWindow | None = None
    credits: CreditsSnapshot | None = None
    planType: str | None = None
    rateLimitReachedType: str | None = None
    spendControlReached: bool | None = None


class RateLimitsNotification(_In, frozen=True):
    """``account/rateLimits/updated``: a sparse rolling update of the account's windows, with no
    thread (``threadId`` is here for the router's check and is always ``None`` on the wire)."""

    rateLimits: RateLimitSnapshot = RateLimitSnapshot()
    threadId: str | None = None


class WarningNotification(_In, frozen=True):
    message: str = ""
    threadId: str | None = None


class ThreadStatusChanged(_In, frozen=True):
    threadId: str
    status: ThreadStatus


class ResolvedNotification(_In, frozen=True):
    """``serverRequest/resolved``: the server withdrew (or saw the answer to) one request."""

    threadId: str
    requestId: int | str


class CommandApprovalParams(_In, frozen=True):
    threadId: str
    itemId: str
    turnId: str | None = None
    command: str | None = None
    cwd: str | None = None
    reason: str | None = None
    approvalId: str | None = None
    availableDecisions: tuple[JsonValue, ...] | None = None


class FileChangeApprovalParams(_In, frozen=True):
    threadId: str
    itemId: str
    turnId: str | None = None
    reason: str | None = None
    grantRoot: str | None = None


class PermissionsApprovalParams(_In, frozen=True):
    threadId: str
    itemId: str
    turnId: str | None = None
    reason: str | None = None
    permissions: JsonValue = None


class LegacyApprovalParams(_In, frozen=True):
    """v1 ``execCommandApproval`` / ``applyPatchApproval``."""

    conversationId: str
    callId: str
    command: tuple[str, ...] = ()
    cwd: str | None = None
    reason: str | None = None
    approvalId: str | None = None
    fileChanges: dict[str, JsonValue] = {}


class UserInputOption(_In, frozen=True):
    label: str = ""
    description: str | None = None


class UserInputQuestion(_In, frozen=True):
    id: str
    question: str = ""
    header: str | None = None
    options: tuple[UserInputOption, ...] | None = None


class UserInputParams(_In, frozen=True):
    threadId: str
    itemId: str
    questions: tuple[UserInputQuestion, ...] = ()
    turnId: str | None = None


class ReasoningEffortOption(_In, frozen=True):
    reasoningEffort: str
    description: str | None = None


class ModelEntry(_In, frozen=True):
    id: str
    model: str | None = None
    displayName: str | None = None
    description: str | None = None
    hidden: bool = False
    isDefault: bool = False
    defaultReasoningEffort: str | None = None
    supportedReasoningEfforts: tuple[ReasoningEffortOption, ...] = ()
    inputModalities: tuple[str, ...] = ("text", "image")
    """Codex's default when the entry omits it (older catalogs): text and image."""


class ModelListResult(_In, frozen=True):
    data: tuple[ModelEntry, ...] = ()
    nextCursor: str | None = None
