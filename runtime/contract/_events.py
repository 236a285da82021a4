"""The canonical event union.

Every event is a frozen msgspec Struct tagged on ``type`` and shares the envelope of
:class:`EventBase`. Drivers build events with ``seq=0`` and an empty ``event_id``; the EventHub
stamps both, and overwrites ``driver``, ``instance_id`` and ``thread_id`` with the identity of the
emitting actor, so a driver cannot mislabel them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypedDict, Union

import msgspec

from ._errors import ValidationError

__all__ = [
    "EVENT_TYPES",
    "AccountRateLimitsUpdated",
    "AccountUpdated",
    "AuthStatus",
    "BudgetWarning",
    "ConfigWarning",
    "CommandSubject",
    "ConfinementInfo",
    "ContentDelta",
    "DIFF_CHARS",
    "Decider",
    "DeprecationNotice",
    "Event",
    "EventBase",
    "EventIdentity",
    "TO_BE_STAMPED",
    "FileChangeSubject",
    "FileEdit",
    "FilesPersisted",
    "HookCompleted",
    "HookProgress",
    "HookStarted",
    "ItemCompleted",
    "ItemKind",
    "ItemStarted",
    "ItemStatus",
    "ItemUpdated",
    "McpOauthCompleted",
    "McpStatusUpdated",
    "ModelRerouted",
    "PlanStep",
    "ProviderRefs",
    "RawPayload",
    "RequestKind",
    "RequestOpened",
    "RequestResolved",
    "RequestSubject",
    "RuntimeErrorEvent",
    "RuntimeWarningEvent",
    "SessionConfigured",
    "SessionExited",
    "SessionStarted",
    "SessionState",
    "Surface",
    "SessionStateChanged",
    "StreamKind",
    "TaskCompleted",
    "TaskProgress",
    "TaskStarted",
    "ThreadMetadataUpdated",
    "ThreadFailedOver",
    "ThreadRolledBack",
    "ThreadStarted",
    "ThreadStateChanged",
    "ThreadTokenUsageUpdated",
    "TokenUsage",
    "ToolProgress",
    "ToolSubject",
    "ToolSummary",
    "TurnAborted",
    "TurnCompleted",
    "TurnDiffUpdated",
    "TurnPlanUpdated",
    "TurnProposedCompleted",
    "TurnProposedDelta",
    "TurnQueued",
    "TurnStarted",
    "TurnState",
    "UserInputOption",
    "UserInputQuestion",
    "UserInputRequested",
    "UserInputResolved",
    "decode_event",
    "decode_events",
    "encode_event",
]

StreamKind = Literal[
    "assistant_text",
    "reasoning_text",
    "reasoning_summary_text",
    "plan_text",
    "command_output",
    "file_change_output",
]
TurnState = Literal["completed", "failed", "interrupted", "cancelled"]
SessionState = Literal["starting", "ready", "running", "waiting", "stopping", "stopped", "error"]
ItemKind = Literal[
    "assistant_message",
    "user_message",
    "reasoning",
    "plan",
    "command",
    "file_change",
    "file_read",
    "search",
    "web_search",
    "mcp_tool_call",
    "tool_call",
    "other",
]
ItemStatus = Literal["pending", "in_progress", "completed", "failed", "declined", "cancelled"]
RequestKind = Literal["command", "file_change", "file_read", "permission", "tool", "other"]
Decision = Literal["accept", "accept_for_session", "decline", "cancel"]
Decider = Literal["person", "rule", "host", "session", "mode"]
"""Who answered a request: a ``person`` (on a surface), a ``rule`` (approval rules), the
``host``'s hook, the ``session`` (an earlier ``accept_for_session`` of the same subject), or the
runtime ``mode`` (``full-access`` and the modes that take some requests by themselves)."""
Surface = Literal["cli", "dashboard", "api"]
"""Where a person's answer came from."""


# Events and their parts never form reference cycles, so the cyclic GC need not track them
# (measured: 10-15% less CPU on the hot path with 100k+ events in flight).
class _Data(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True, gc=False
):
    pass


class ProviderRefs(_Data, frozen=True):
    """Native ids from the agent's own protocol, for correlation and debugging."""

    thread: str | None = None
    turn: str | None = None
    item: str | None = None
    request: str | None = None


class RawPayload(_Data, frozen=True):
    """The native message an event came from (off by default, credentials redacted)."""

    source: str
    method: str | None = None
    payload: Any = None


class TokenUsage(_Data, frozen=True):
    """Token counts; absent counts are unknown, not zero."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    total_tokens: int | None = None
    context_window: int | None = None
    cost: float | None = None
    currency: str | None = None


class PlanStep(_Data, frozen=True):
    step: str
    status: Literal["pending", "in_progress", "completed"] = "pending"


class UserInputOption(_Data, frozen=True):
    label: str
    description: str | None = None


class UserInputQuestion(_Data, frozen=True):
    id: str
    question: str
    header: str | None = None
    options: tuple[UserInputOption, ...] = ()
    multi_select: bool = False


class EventIdentity(TypedDict):
    """The identity fields of one session's events, for ``Event(**identity, ...)`` in drivers
    (the hub stamps them again from the emitter, so a driver cannot mislabel)."""

    driver: str
    instance_id: str
    thread_id: str


TO_BE_STAMPED = EventIdentity(driver="", instance_id="", thread_id="")
"""The identity of an event built outside a session (grammar repairs, recovery at open): the hub
stamps the emitter's identity over it."""


class EventBase(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="type",
    forbid_unknown_fields=True,
    omit_defaults=True,
    gc=False,
):
    """The envelope every canonical event carries.

    ``seq`` is strictly increasing per runtime and assigned by the hub; ``created_at`` is Unix time
    in seconds. ``turn_id``, ``item_id`` and ``request_id`` are set where the event belongs to one.
    """

    driver: str
    instance_id: str
    thread_id: str
    event_id: str = ""
    seq: int = 0
    created_at: float = 0.0
    turn_id: str | None = None
    item_id: str | None = None
    request_id: str | None = None
    provider_refs: ProviderRefs | None = None
    raw: RawPayload | None = None

    type: ClassVar[str]
    """The event's type tag (``"content.delta"``, ``"turn.completed"``, ...): a ``Literal`` on each
    event class, so ``event.type == "content.delta"`` narrows an :data:`Event` for a type checker."""


# session -----------------------------------------------------------------------------------------


class ConfinementInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What the kernel confines an instance's agents (and every process they start) to.

    ``confined``: the agent runs under a Landlock ruleset (``landlock_abi``: the kernel's ABI
    version, 0 when it has none). ``setting``: the instance's ``confinement`` key. ``roots``:
    the workspace roots the agent may write (besides its home); for a per-session process they
    include the session's cwd. ``network``: ``"any"`` or ``"endpoints"`` (TCP connect only to the
    allowed ports, no bind; ABI 4+). ``reason``: why an agent that should be confined is not.
    """

    confined: bool = False
    setting: Literal["workspace", "none", "required"] = "none"
    landlock_abi: int = 0
    roots: tuple[str, ...] = ()
    network: Literal["any", "endpoints"] = "any"
    reason: str | None = None


class SessionStarted(EventBase, frozen=True, tag="session.started"):
    """A session bound the thread to an instance. ``resumed`` says it continues a native session
    from the thread's resume cursor; ``resume_failed`` says a resume was tried and a fresh native
    session was started instead."""

    type: ClassVar[Literal["session.started"]]

    cwd: str | None = None
    model: str | None = None
    runtime_mode: str | None = None
    interaction_mode: str | None = None
    resumed: bool = False
    resume_failed: bool = False
    detail: str | None = None
    confinement: ConfinementInfo | None = None
    """What the kernel confines this session's agent to (``None`` in logs written before
    Paddock reported it). Stamped by the runtime, not by the driver."""


class SessionConfigured(EventBase, frozen=True, tag="session.configured"):
    """The agent reported its session configuration: modes, models, commands, options."""

    type: ClassVar[Literal["session.configured"]]

    config: dict[str, Any] = {}


class SessionStateChanged(EventBase, frozen=True, tag="session.state.changed"):
    type: ClassVar[Literal["session.state.changed"]]
    state: SessionState
    reason: str | None = None


class SessionExited(EventBase, frozen=True, tag="session.exited"):
    """The session ended. ``recoverable`` says a new session on the same thread can resume it."""

    type: ClassVar[Literal["session.exited"]]

    reason: str
    recoverable: bool = True
    exit_code: int | None = None
    signal: int | None = None
    stderr_tail: str | None = None


# thread ------------------------------------------------------------------------------------------


class ThreadStarted(EventBase, frozen=True, tag="thread.started"):
    type: ClassVar[Literal["thread.started"]]
    pass


class ThreadStateChanged(EventBase, frozen=True, tag="thread.state.changed"):
    """``waiting``: the thread is parked on a usage limit (``on_usage_limit = "wait"``); Paddock
    sends its turn again at ``resets_at`` (Unix time; else after a capped backoff) by itself."""

    type: ClassVar[Literal["thread.state.changed"]]
    state: Literal["active", "idle", "archived", "closed", "waiting"]
    resets_at: float | None = None


class ThreadFailedOver(EventBase, frozen=True, tag="thread.failed-over"):
    """``on_usage_limit = "failover"``: the thread's turn met a usage limit (``reason``) and
    Paddock handed the thread over to ``to_thread_id`` on ``to_instance_id`` (a ``fork_thread``
    hand-off: the new thread's first turn carries this one's transcript) and sent the turn
    there. Published on the source thread, after the new thread started and before its turn.
    The source thread stays where it is and is not sent anything again by Paddock: it comes back
    only when the host sends it a turn. ``resets_at``: when the source's limit resets, where the
    agent said."""

    type: ClassVar[Literal["thread.failed-over"]]
    to_thread_id: str
    to_instance_id: str
    reason: str = "usage_limit"
    resets_at: float | None = None


class ThreadRolledBack(EventBase, frozen=True, tag="thread.rolled-back"):
    """``rollback_thread`` dropped these turns from the thread (the runtime logs it after the
    agent or the runtime rolled them back): :func:`paddock.contract.fold_thread`, so
    ``read_thread``, leaves them out from here on."""

    type: ClassVar[Literal["thread.rolled-back"]]
    turn_ids: tuple[str, ...] = ()


class ThreadMetadataUpdated(EventBase, frozen=True, tag="thread.metadata.updated"):
    type: ClassVar[Literal["thread.metadata.updated"]]
    title: str | None = None
    metadata: dict[str, Any] = {}


class ThreadTokenUsageUpdated(EventBase, frozen=True, tag="thread.token-usage.updated"):
    """Cumulative usage of the thread; it never goes backwards."""

    type: ClassVar[Literal["thread.token-usage.updated"]]

    usage: TokenUsage


# turn --------------------------------------------------------------------------------------------


class TurnStarted(EventBase, frozen=True, tag="turn.started"):
    """A turn began; ``input_text`` is the user's message that started it."""

    type: ClassVar[Literal["turn.started"]]

    input_text: str | None = None
    model: str | None = None
    interaction_mode: str | None = None
    preamble: bool = False
    """The turn carried the session's first-turn preamble (``input_text`` is the user's text
    without it)."""


class TurnQueued(EventBase, frozen=True, tag="turn.queued"):
    """The runtime queued the turn: its instance (or the runtime) runs ``max_running_turns``
    already. ``position`` is its place in the instance's queue (1: next). It is followed by
    ``turn.started`` when a slot frees, or by ``turn.completed`` alone (``interrupted`` when
    ``interrupt_turn`` removed it, ``failed`` when it could not be started): a queued turn never
    reached the agent before its ``turn.started``."""

    type: ClassVar[Literal["turn.queued"]]

    position: int
    input_text: str | None = None


class TurnCompleted(EventBase, frozen=True, tag="turn.completed"):
    """The one and only end of a turn."""

    type: ClassVar[Literal["turn.completed"]]

    state: TurnState
    stop_reason: str | None = None
    error: str | None = None
    usage: TokenUsage | None = None


class TurnAborted(EventBase, frozen=True, tag="turn.aborted"):
    type: ClassVar[Literal["turn.aborted"]]
    reason: str


class TurnPlanUpdated(EventBase, frozen=True, tag="turn.plan.updated"):
    type: ClassVar[Literal["turn.plan.updated"]]
    steps: tuple[PlanStep, ...] = ()
    explanation: str | None = None


class TurnProposedDelta(EventBase, frozen=True, tag="turn.proposed.delta"):
    type: ClassVar[Literal["turn.proposed.delta"]]
    delta: str


class TurnProposedCompleted(EventBase, frozen=True, tag="turn.proposed.completed"):
    type: ClassVar[Literal["turn.proposed.completed"]]
    text: str


class TurnDiffUpdated(EventBase, frozen=True, tag="turn.diff.updated"):
    """The turn's unified diff. An agent may send its own while the turn runs; for a thread with
    its own worktree the runtime sends one after ``turn.completed``, computed from the turn's
    checkpoint, with ``checkpoint`` its commit id."""

    type: ClassVar[Literal["turn.diff.updated"]]
    diff: str
    checkpoint: str | None = None


# item and content --------------------------------------------------------------------------------


class ItemStarted(EventBase, frozen=True, tag="item.started"):
    type: ClassVar[Literal["item.started"]]
    kind: ItemKind
    title: str | None = None
    status: ItemStatus = "in_progress"
    data: dict[str, Any] | None = None


class ItemUpdated(EventBase, frozen=True, tag="item.updated"):
    type: ClassVar[Literal["item.updated"]]
    kind: ItemKind
    title: str | None = None
    status: ItemStatus | None = None
    data: dict[str, Any] | None = None


class ItemCompleted(EventBase, frozen=True, tag="item.completed"):
    """The item's final state. ``text`` equals the concatenation of its ``content.delta`` events
    when both exist."""

    type: ClassVar[Literal["item.completed"]]

    kind: ItemKind
    status: ItemStatus = "completed"
    title: str | None = None
    text: str | None = None
    data: dict[str, Any] | None = None


class ContentDelta(EventBase, frozen=True, tag="content.delta"):
    type: ClassVar[Literal["content.delta"]]
    stream: StreamKind
    delta: str


# requests ----------------------------------------------------------------------------------------


class CommandSubject(_Data, frozen=True, tag="command", tag_field="type"):
    """The exact command line the agent will run, and the folder it runs in (the session's cwd
    when the agent names none)."""

    command: str
    cwd: str | None = None


class FileEdit(_Data, frozen=True):
    """One file an edit touches: ``diff`` is a unified diff (for a new file, every line added),
    cut at ``DIFF_CHARS`` characters with ``truncated`` set; ``None`` when the agent showed
    nothing of the content. ``move_to`` is the new path of a rename."""

    path: str
    change: Literal["add", "update", "delete", "move"] = "update"
    diff: str | None = None
    truncated: bool = False
    move_to: str | None = None


class FileChangeSubject(_Data, frozen=True, tag="file_change", tag_field="type"):
    """The files an edit writes, each with its diff."""

    files: tuple[FileEdit, ...] = ()


class ToolSubject(_Data, frozen=True, tag="tool", tag_field="type"):
    """A tool call other than a shell command or an edit: its name (for MCP, ``server`` names
    the MCP server) and the arguments the agent passes."""

    tool: str
    server: str | None = None
    arguments: Any = None


RequestSubject = Union[CommandSubject, FileChangeSubject, ToolSubject]
"""What a request asks to do, exactly as the agent will do it (never a model-written summary)."""

DIFF_CHARS = 8000
"""The longest diff a :class:`FileEdit` carries (a longer one is cut and marked ``truncated``)."""


class RequestOpened(EventBase, frozen=True, tag="request.opened"):
    """The agent asks the host to decide; answer with ``respond_to_request``. ``subject`` is
    what the decision approves (the command with its cwd, the files with their diffs, the tool
    with its arguments); ``title`` and ``detail`` are the agent's own words for it."""

    type: ClassVar[Literal["request.opened"]]

    request_id: str  # always set: what ``respond_to_request`` takes
    kind: RequestKind
    title: str | None = None
    detail: str | None = None
    decisions: tuple[Decision, ...] = ("accept", "accept_for_session", "decline", "cancel")
    subject: RequestSubject | None = None
    data: dict[str, Any] | None = None


class RequestResolved(EventBase, frozen=True, tag="request.resolved"):
    """``resolution`` is ``answered`` (with ``decision``), ``cancelled`` (the turn ended) or
    ``expired`` (the process died).

    The audit of an answer: ``decided_by`` (``person``, ``rule``, ``host``, ``session``,
    ``mode``; see :data:`paddock.contract.Decider`), ``surface`` where a person answered
    (``cli``, ``dashboard``, ``api``), and for a rule its ``rule_index`` in the session's list
    (the thread's rules, then the instance's, then the runtime's), its text (``rule``) and why
    it matched (``reason``). All absent on events logged before the audit existed."""

    type: ClassVar[Literal["request.resolved"]]

    request_id: str
    resolution: Literal["answered", "cancelled", "expired"]
    decision: Decision | None = None
    decided_by: Decider | None = None
    surface: Surface | None = None
    rule_index: int | None = None
    rule: str | None = None
    reason: str | None = None


class UserInputRequested(EventBase, frozen=True, tag="user-input.requested"):
    type: ClassVar[Literal["user-input.requested"]]
    request_id: str  # always set: what ``respond_to_user_input`` takes
    questions: tuple[UserInputQuestion, ...] = ()


class UserInputResolved(EventBase, frozen=True, tag="user-input.resolved"):
    type: ClassVar[Literal["user-input.resolved"]]
    request_id: str
    resolution: Literal["answered", "cancelled", "expired"] = "answered"
    answers: dict[str, Any] = {}


# task, hook, tool --------------------------------------------------------------------------------


class TaskStarted(EventBase, frozen=True, tag="task.started"):
    type: ClassVar[Literal["task.started"]]
    task_id: str
    description: str | None = None


class TaskProgress(EventBase, frozen=True, tag="task.progress"):
    type: ClassVar[Literal["task.progress"]]
    task_id: str
    message: str


class TaskCompleted(EventBase, frozen=True, tag="task.completed"):
    type: ClassVar[Literal["task.completed"]]
    task_id: str
    status: Literal["completed", "failed", "cancelled"] = "completed"
    summary: str | None = None


class HookStarted(EventBase, frozen=True, tag="hook.started"):
    type: ClassVar[Literal["hook.started"]]
    hook_id: str
    name: str | None = None


class HookProgress(EventBase, frozen=True, tag="hook.progress"):
    type: ClassVar[Literal["hook.progress"]]
    hook_id: str
    message: str


class HookCompleted(EventBase, frozen=True, tag="hook.completed"):
    type: ClassVar[Literal["hook.completed"]]
    hook_id: str
    outcome: str | None = None


class ToolProgress(EventBase, frozen=True, tag="tool.progress"):
    type: ClassVar[Literal["tool.progress"]]
    tool_name: str | None = None
    message: str | None = None
    elapsed_seconds: float | None = None


class ToolSummary(EventBase, frozen=True, tag="tool.summary"):
    type: ClassVar[Literal["tool.summary"]]
    summary: str


# account, auth, mcp, model, config, files --------------------------------------------------------


class AuthStatus(EventBase, frozen=True, tag="auth.status"):
    type: ClassVar[Literal["auth.status"]]
    status: Literal["authenticated", "unauthenticated", "unknown"]
    method: str | None = None
    detail: str | None = None


class AccountUpdated(EventBase, frozen=True, tag="account.updated"):
    type: ClassVar[Literal["account.updated"]]
    account: dict[str, Any] = {}


class AccountRateLimitsUpdated(EventBase, frozen=True, tag="account.rate-limits.updated"):
    type: ClassVar[Literal["account.rate-limits.updated"]]
    limits: dict[str, Any] = {}


class McpStatusUpdated(EventBase, frozen=True, tag="mcp.status.updated"):
    """What the agent really loaded for one MCP server: ``connected`` (with ``tools``, its tool
    count), ``failed`` (``detail`` says why) or ``not_connected``; read back from the agent or
    seen by the MCP relay, never assumed."""

    type: ClassVar[Literal["mcp.status.updated"]]
    server: str
    status: str
    detail: str | None = None
    tools: int | None = None


class McpOauthCompleted(EventBase, frozen=True, tag="mcp.oauth.completed"):
    type: ClassVar[Literal["mcp.oauth.completed"]]
    server: str
    success: bool
    detail: str | None = None


class ModelRerouted(EventBase, frozen=True, tag="model.rerouted"):
    type: ClassVar[Literal["model.rerouted"]]
    to_model: str
    from_model: str | None = None
    reason: str | None = None


class ConfigWarning(EventBase, frozen=True, tag="config.warning"):
    type: ClassVar[Literal["config.warning"]]
    message: str
    path: str | None = None


class DeprecationNotice(EventBase, frozen=True, tag="deprecation.notice"):
    type: ClassVar[Literal["deprecation.notice"]]
    message: str


class FilesPersisted(EventBase, frozen=True, tag="files.persisted"):
    type: ClassVar[Literal["files.persisted"]]
    files: tuple[str, ...] = ()


# problems ----------------------------------------------------------------------------------------


class RuntimeWarningEvent(EventBase, frozen=True, tag="runtime.warning"):
    """Something went wrong and the runtime repaired or skipped it. ``code`` is a stable
    machine-readable name (``grammar.late_delta``, ``transport.malformed_line``, ...)."""

    type: ClassVar[Literal["runtime.warning"]]

    code: str
    message: str
    detail: dict[str, Any] | None = None


class RuntimeErrorEvent(EventBase, frozen=True, tag="runtime.error"):
    """Something failed that the runtime could not repair."""

    type: ClassVar[Literal["runtime.error"]]

    code: str
    message: str
    detail: dict[str, Any] | None = None
    error_class: str | None = None
    """``usage_limit``: a model's rate or usage limit (``paddock.contract.usage_limit_of``)."""
    resets_at: float | None = None
    """When a usage limit resets (Unix time), where the agent said."""


class BudgetWarning(EventBase, frozen=True, tag="budget.warning"):
    """A budget over the thread reached its warning fraction (``exceeded`` false), or its limit
    (``exceeded`` true: the running turn is interrupted for it and ``send_turn`` raises
    :class:`BudgetExceededError` until the budget is raised or its period rolls over).

    ``budget`` names the bound (``tokens``, ``cost``, ``turns``, ``turn_seconds``), ``scope``
    whose it is (``thread``, ``instance``, ``runtime``; ``scope_id`` the thread or instance id,
    ``""`` for the runtime), ``figure`` what was spent in the period and ``limit`` the bound."""

    type: ClassVar[Literal["budget.warning"]]

    budget: str
    scope: str
    scope_id: str
    figure: float
    limit: float
    exceeded: bool = False
    period: str | None = None


Event = Union[
    SessionStarted,
    SessionConfigured,
    SessionStateChanged,
    SessionExited,
    ThreadStarted,
    ThreadStateChanged,
    ThreadMetadataUpdated,
    ThreadRolledBack,
    ThreadFailedOver,
    ThreadTokenUsageUpdated,
    TurnQueued,
    TurnStarted,
    TurnCompleted,
    TurnAborted,
    TurnPlanUpdated,
    TurnProposedDelta,
    TurnProposedCompleted,
    TurnDiffUpdated,
    ItemStarted,
    ItemUpdated,
    ItemCompleted,
    ContentDelta,
    RequestOpened,
    RequestResolved,
    UserInputRequested,
    UserInputResolved,
    TaskStarted,
    TaskProgress,
    TaskCompleted,
    HookStarted,
    HookProgress,
    HookCompleted,
    ToolProgress,
    ToolSummary,
    AuthStatus,
    AccountUpdated,
    AccountRateLimitsUpdated,
    McpStatusUpdated,
    McpOauthCompleted,
    ModelRerouted,
    ConfigWarning,
    DeprecationNotice,
    FilesPersisted,
    RuntimeWarningEvent,
    RuntimeErrorEvent,
    BudgetWarning,
]
"""Any canonical event; ``event.type`` names which."""

EVENT_TYPES: dict[str, type[EventBase]] = {
    cls.__struct_config__.tag: cls for cls in Event.__args__  # type: ignore[attr-defined]
}
"""Every canonical event type by its ``type`` tag."""

# ``event.type`` is a plain class attribute (read once per event on every hot path; a property
# reading the struct config took four times as long), set here from each class's tag.
for _tag, _cls in EVENT_TYPES.items():
    _cls.type = _tag  # type: ignore[misc]  # each class declares it as ClassVar[Literal[tag]]
del _tag, _cls

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Event)
_list_decoder = msgspec.json.Decoder(list[Event])


def encode_event(event: EventBase) -> bytes:
    """Return the event as compact JSON bytes; ``decode_event`` gives back an equal event."""
    return _encoder.encode(event)


def decode_event(data: bytes | str) -> Event:
    """Decode one event from JSON.

    Raises :class:`ValidationError` naming the problem (and the field path) for malformed JSON,
    an unknown ``type``, a missing required field or a field of the wrong type.
    """
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise ValidationError("decode_event", str(exc)) from None


def decode_events(data: bytes | str) -> list[Event]:
    """Decode a JSON array of events; raises :class:`ValidationError` like ``decode_event``."""
    try:
        return _list_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise ValidationError("decode_events", str(exc)) from None
