"""The operation table: every public operation of :class:`paddock.Runtime`, declared once.

An :class:`Operation` names its body (a frozen Struct that forbids unknown fields and carries the
operation's constraints), its result type, whether it reads (``GET``, the body's fields as query
parameters) or writes (``POST``, the body as JSON) and its route under ``/v1``. ``Runtime``
validates its arguments once, with :meth:`Operation.parse`; ``AsyncRuntime``, ``RemoteRuntime``,
``AsyncRemoteRuntime``, the server's routes and the OpenAPI document are derived from
:data:`OPERATIONS`. Adding a parameter is one body field plus the typed signatures users read.

Not in the table: ``subscribe`` (a stream of events, SSE over HTTP), ``open`` and ``close``
(each surface builds and closes its own handle). See docs/architecture.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec

from paddock._instances._table import InstanceInfo
from paddock._operations._pending import PendingRequest
from paddock._operations._queued import QueuedTurn
from paddock.contract import (
    MAX_PROMPT_CHARS,
    ApprovalRule,
    Attachment,
    Budget,
    Decision,
    InteractionMode,
    McpServer,
    ModelInfo,
    RuntimeMode,
    Session,
    Surface,
    ThreadSnapshot,
    TurnStartResult,
    UsageReport,
    ValidationError,
)
from paddock._state._store import Binding
from paddock._workspaces._files import FilesRestored

__all__ = [
    "BY_NAME",
    "OPERATIONS",
    "Body",
    "Operation",
    "arguments",
    "plain_arguments",
    "subscribe_arguments",
    "SubscribeBody",
    "body_error",
    "check_text",
]

R = TypeVar("R")

ThreadId = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
"""A thread id a session is bound to: non-empty, at most 256 characters."""

Seconds = Annotated[float, msgspec.Meta(gt=0)]
"""A ``timeout``: a positive number of seconds (``None``, where allowed, takes the default)."""

_LABELS = {"text": "the prompt"}  # how a message names a field, where its name reads badly


class Body(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The arguments of one operation, in process or as an HTTP body. Constructing or decoding one
    checks its constraints: every text (nested ones too) must be encodable as UTF-8."""

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            check_text(name, getattr(self, name))


class _OnThread(Body, frozen=True):
    """An operation on the thread ``thread_id``; ``timeout`` ``None`` takes the default. A subclass
    with required fields declares ``kw_only=True`` (msgspec applies it per class)."""

    thread_id: str
    timeout: Seconds | None = None


def _check_prompt(text: str) -> None:
    """Raises ``ValueError`` for a blank prompt or one longer than :data:`MAX_PROMPT_CHARS`."""
    if not text.strip():
        raise ValueError("the prompt is empty")
    if len(text) > MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt has {len(text)} characters; the limit is {MAX_PROMPT_CHARS}")


class _Prompt(_OnThread, frozen=True, kw_only=True):
    """A body with a prompt: not blank, at most :data:`MAX_PROMPT_CHARS` characters."""

    text: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_prompt(self.text)


class InstancesBody(Body, frozen=True):
    pass


class DiagnoseBody(Body, frozen=True):
    timeout: Seconds = 10.0


class StartSessionBody(Body, frozen=True):
    thread_id: ThreadId
    instance: str
    cwd: str
    runtime_mode: RuntimeMode = "full-access"
    interaction_mode: InteractionMode = "default"
    model: str | None = None
    resume: Literal["auto", "require", "never"] | None = None
    mcp_servers: tuple[McpServer, ...] | None = None
    """``None``: the servers the thread had (persisted), else the instance's."""
    preamble: str | None = None
    preamble_reminder: str | None = None
    require: tuple[str, ...] = ()
    """Capability paths the host needs (``paddock.contract.require_capabilities``)."""
    workspace: Literal["shared", "worktree"] | None = None
    """``None``: the instance's ``workspace`` (a thread that has a worktree keeps it)."""
    approval_rules: tuple[ApprovalRule, ...] | None = None
    """The thread's own rules, before the instance's and the runtime's; ``None``: what the
    thread had (persisted), else none of its own."""
    budget: Budget | None = None
    """The thread's own budget (persisted, as ``set_budget(thread_id=...)``); ``None`` keeps the one it had."""
    timeout: Seconds | None = None


class GenerateTextBody(Body, frozen=True):
    instance: str
    prompt: str
    model: str | None = None
    timeout: Seconds = 120.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_prompt(self.prompt)


class SendTurnBody(_Prompt, frozen=True):
    interaction_mode: InteractionMode | None = None
    model: str | None = None
    attachments: tuple[Attachment, ...] = ()
    """Images and files; paths are the server's, confined to the session's workspace roots."""


class InterruptTurnBody(_OnThread, frozen=True):
    turn_id: str | None = None


class SteerTurnBody(_Prompt, frozen=True):
    attachments: tuple[Attachment, ...] = ()


class ModelsBody(Body, frozen=True):
    instance: str
    refresh: bool = False
    timeout: Seconds = 120.0


class RespondToRequestBody(_OnThread, frozen=True, kw_only=True):
    request_id: str
    decision: Decision
    surface: Surface = "api"
    """Where the person answered (``cli``, ``dashboard``, ``api``), for the audit."""


class RespondToUserInputBody(_OnThread, frozen=True, kw_only=True):
    request_id: str
    answers: dict[str, Any]


class StopSessionBody(_OnThread, frozen=True):
    pass


class StopAllBody(Body, frozen=True):
    timeout: Seconds | None = None


class ListSessionsBody(Body, frozen=True):
    pass


class HasSessionBody(Body, frozen=True):
    thread_id: str


class ReadThreadBody(_OnThread, frozen=True):
    pass


class RollbackThreadBody(_OnThread, frozen=True, kw_only=True):
    num_turns: Annotated[int, msgspec.Meta(ge=1)]


class ForkThreadBody(_OnThread, frozen=True, kw_only=True):
    new_thread_id: ThreadId
    at_turn: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """The copy keeps the source's turns 1..``at_turn``; ``None``: all of them."""
    instance: str | None = None
    """Where the copy runs; ``None``: the source's instance. Another instance is a hand-off."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.new_thread_id == self.thread_id:
            raise ValueError("new_thread_id must differ from thread_id")


class CompactThreadBody(_OnThread, frozen=True):
    pass


class PendingRequestsBody(Body, frozen=True):
    thread_id: str | None = None
    timeout: Seconds | None = None


class ListThreadsBody(Body, frozen=True):
    pass


class QueueBody(Body, frozen=True):
    instance: str | None = None
    """Only this instance's queue; ``None``: every instance's."""


class CompactEventsBody(Body, frozen=True):
    before_seq: int


class RestoreFilesBody(_OnThread, frozen=True, kw_only=True):
    turn_id: Annotated[str, msgspec.Meta(min_length=1)]
    """A completed turn of the thread, or ``"base"``: where its worktree started."""


class DiffBody(_OnThread, frozen=True):
    from_turn: str | None = None
    """A turn id or ``"base"``; ``None``: the checkpoint before ``to_turn``'s."""
    to_turn: str | None = None
    """A turn id; ``None``: the newest checkpoint."""


class DeleteThreadBody(_OnThread, frozen=True):
    keep_branch: bool = False


class SubscribeBody(Body, frozen=True):
    """The arguments of ``subscribe`` (not in the table: a stream), checked as a body is, by
    :func:`subscribe_arguments` on every surface."""

    thread_id: str | None = None
    instance_id: str | None = None
    types: tuple[str, ...] | None = None
    from_seq: Annotated[int, msgspec.Meta(ge=0)] | None = None
    assistant_delivery: Literal["streaming", "buffered"] = "streaming"
    max_buffered: Annotated[int, msgspec.Meta(ge=1)] | None = None


def subscribe_arguments(args: Mapping[str, object]) -> SubscribeBody:
    """``subscribe``'s arguments (a method's ``locals()``) checked: ``types`` one name or an
    iterable of names, ``from_seq`` at least 0, ``max_buffered`` at least 1. Raises
    :class:`ValidationError` naming the field. Unknown type names are the hub's to refuse."""
    values = plain_arguments(args)
    types = values.get("types")
    if isinstance(types, str):
        values["types"] = (types,)
    elif isinstance(types, Iterable) and not isinstance(types, (bytes, Mapping)):
        values["types"] = tuple(types)
    try:
        return msgspec.convert(values, SubscribeBody)
    except msgspec.ValidationError as exc:
        raise body_error("subscribe", str(exc)) from None


class UsageBody(Body, frozen=True):
    thread_id: str | None = None
    instance: str | None = None
    since: float | None = None
    """Unix time: only turns started at or after it."""
    timeout: Annotated[float, msgspec.Meta(gt=0)] = 5.0


class SetBudgetBody(Body, frozen=True):
    budget: Budget | None
    """``None`` removes the scope's budget (a thread's or an instance's falls back to the config)."""
    thread_id: str | None = None
    instance: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.thread_id is not None and self.instance is not None:
            raise ValueError("give thread_id or instance, not both")


@dataclass(frozen=True, eq=False)
class Operation(Generic[R]):
    """One public operation of the Runtime. ``name`` is the method on every surface and the
    OpenAPI ``operationId``; ``route`` the path under ``/v1``."""

    name: str
    body: type[Body]
    result: type[R]
    reads: bool
    """``GET`` with the body's fields as query parameters; else ``POST`` with a JSON body."""
    route: str
    summary: str
    needs_open: bool = True
    """Refused by a closed Runtime (reads of what is left after closing are not)."""
    local_paths: tuple[str, ...] = ()
    """Fields naming a folder of the caller: a remote client sends them absolute."""
    wait: float | None = None
    """Seconds an HTTP client waits when the call passes no ``timeout`` (default: the runtime's
    default timeout plus slack)."""
    wait_factor: float = 1.0
    """The call's ``timeout`` covers this many steps on the server (``diagnose``: each instance)."""

    @property
    def method(self) -> Literal["GET", "POST"]:
        return "GET" if self.reads else "POST"

    def parse(self, args: Mapping[str, object]) -> Body:
        """The body of ``args`` (a method's parameters by name), checked against every constraint;
        raises :class:`ValidationError` naming the operation, the thread and the field. Runs in
        the caller's thread."""
        values = plain_arguments(args)
        try:
            return msgspec.convert(values, self.body)
        except msgspec.ValidationError as exc:
            thread_id = values.get("thread_id")
            where = thread_id if isinstance(thread_id, str) and _is_text(thread_id) else None
            raise body_error(self.name, str(exc), where) from None

    def decode(self, data: bytes) -> Body:
        """The body of a JSON request; raises :class:`ValidationError` naming the field."""
        try:
            return msgspec.json.decode(data or b"{}", type=self.body)
        except msgspec.ValidationError as exc:
            raise body_error(self.name, str(exc)) from None
        except msgspec.DecodeError as exc:
            raise ValidationError(self.name, f"the body is not JSON: {exc}") from None

    def from_query(self, query: Mapping[str, str]) -> Body:
        """The body of a ``GET``'s query parameters (numbers given as text)."""
        try:
            return msgspec.convert(dict(query), self.body, strict=False)
        except msgspec.ValidationError as exc:
            raise body_error(self.name, f"{exc} (query parameter)") from None


def _op(name: str, body: type[Body], result: type[R], *, reads: bool, summary: str, route: str | None = None,
        needs_open: bool = True, local_paths: tuple[str, ...] = (), wait: float | None = None,
        wait_factor: float = 1.0) -> Operation[R]:
    return Operation(name, body, result, reads, route or name, summary, needs_open, local_paths, wait, wait_factor)


INSTANCES = _op("instances", InstancesBody, list[InstanceInfo], reads=True, needs_open=False,
                summary="every configured instance with its status and capabilities")
DIAGNOSE = _op("diagnose", DiagnoseBody, list[dict[str, Any]], reads=True, needs_open=False, wait_factor=10.0,
               summary="binary, version, auth of each instance")
START_SESSION = _op("start_session", StartSessionBody, Session, reads=False, local_paths=("cwd",), wait=300.0,
                    summary="bind a thread to an instance and start (or resume) its session")
SEND_TURN = _op("send_turn", SendTurnBody, TurnStartResult, reads=False,
                summary="send a user message; returns when the agent accepted the turn")
INTERRUPT_TURN = _op("interrupt_turn", InterruptTurnBody, type(None), reads=False,
                     summary="stop the running turn")
STEER_TURN = _op("steer_turn", SteerTurnBody, TurnStartResult, reads=False,
                 summary="add text to the running turn (or interrupt it and start a new one)")
RESPOND_TO_REQUEST = _op("respond_to_request", RespondToRequestBody, type(None), reads=False,
                         summary="answer an open approval request")
RESPOND_TO_USER_INPUT = _op("respond_to_user_input", RespondToUserInputBody, type(None), reads=False,
                            summary="answer an open user-input request")
STOP_SESSION = _op("stop_session", StopSessionBody, type(None), reads=False, summary="stop a thread's session")
STOP_ALL = _op("stop_all", StopAllBody, type(None), reads=False, summary="stop every live session")
LIST_SESSIONS = _op("list_sessions", ListSessionsBody, list[Session], reads=True, route="sessions",
                    needs_open=False, summary="the live sessions")
HAS_SESSION = _op("has_session", HasSessionBody, bool, reads=True, needs_open=False,
                  summary="whether a thread has a live session")
READ_THREAD = _op("read_thread", ReadThreadBody, ThreadSnapshot, reads=True, needs_open=False,
                  summary="a thread's turns and items, folded from the event log")
ROLLBACK_THREAD = _op("rollback_thread", RollbackThreadBody, ThreadSnapshot, reads=False,
                      summary="drop the last turns of a thread")
FORK_THREAD = _op("fork_thread", ForkThreadBody, Session, reads=False, wait=300.0,
                  summary="copy a thread into a new one (natively, else by handing its transcript over)")
COMPACT_THREAD = _op("compact_thread", CompactThreadBody, TurnStartResult | None, reads=False,  # type: ignore[arg-type]
                     summary="summarize a thread's native history to free context")
PENDING_REQUESTS = _op("pending_requests", PendingRequestsBody, list[PendingRequest], reads=True,  # type: ignore[arg-type]
                       route="requests", summary="open approval and user-input requests")
QUEUE = _op("queue", QueueBody, list[QueuedTurn], reads=True, needs_open=False,
             summary="the turns waiting for a running-turn slot (admission), oldest first per instance")
LIST_THREADS = _op("list_threads", ListThreadsBody, list[Binding], reads=True, route="threads",
                   summary="every bound thread, as persisted")
GENERATE_TEXT = _op("generate_text", GenerateTextBody, str, reads=False, wait=None,
                    summary="one-shot text from an instance (an ephemeral session with no tools approved)")
MODELS = _op("models", ModelsBody, list[ModelInfo], reads=True, wait=None,
             summary="an instance's model catalog (cached; refresh asks the agent again)")
USAGE = _op("usage", UsageBody, UsageReport, reads=True,
            summary="tokens, cost, turns and turn time per turn, thread, instance and in total (the usage ledger)")
SET_BUDGET = _op("set_budget", SetBudgetBody, type(None), reads=False,
                 summary="set or remove the budget of a thread, an instance or the runtime")
COMPACT_EVENTS = _op("compact_events", CompactEventsBody, int, reads=False, needs_open=False,
                     summary="delete logged events before a seq")
RESTORE_FILES = _op("restore_files", RestoreFilesBody, FilesRestored, reads=False,
                    summary="restore a worktree thread's files to a turn's checkpoint (the conversation stays)")
DIFF = _op("diff", DiffBody, str, reads=True, summary="the unified diff between two checkpoints of a worktree thread")
DELETE_THREAD = _op("delete_thread", DeleteThreadBody, type(None), reads=False,
                    summary="stop a thread and remove its binding, worktree and checkpoints (its branch unless kept)")

OPERATIONS: tuple[Operation[Any], ...] = (
    INSTANCES, DIAGNOSE, START_SESSION, SEND_TURN, INTERRUPT_TURN, STEER_TURN, RESPOND_TO_REQUEST,
    RESPOND_TO_USER_INPUT, STOP_SESSION, STOP_ALL, LIST_SESSIONS, HAS_SESSION, READ_THREAD,
    ROLLBACK_THREAD, FORK_THREAD, COMPACT_THREAD, PENDING_REQUESTS, QUEUE, LIST_THREADS, GENERATE_TEXT, COMPACT_EVENTS, MODELS,
    RESTORE_FILES, DIFF, DELETE_THREAD, USAGE, SET_BUDGET,
)
"""Every operation, in the order the API documents them."""
BY_NAME: dict[str, Operation[Any]] = {op.name: op for op in OPERATIONS}


def check_text(name: str, value: object) -> None:
    """Refuse text that cannot be encoded as UTF-8 (a lone surrogate such as ``"\\ud800"``): it
    would fail later, in a store, a pipe or an agent, with a foreign error. Strings nested in
    mappings and sequences (answers) are checked too. Raises ``ValueError``."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(f"{_LABELS.get(name, name)} is not valid text: {exc.reason} at index {exc.start}") from None
        elif isinstance(item, Mapping):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
        elif isinstance(item, msgspec.Struct):  # an MCP server: its command, args, env, headers
            todo.extend(msgspec.structs.astuple(item))


def body_error(operation: str, issue: str, thread_id: str | None = None) -> ValidationError:
    """A :class:`ValidationError` for a bad argument; ``field`` names it where known."""
    err = ValidationError(operation, issue, thread_id=thread_id)
    match = _FIELD.search(issue)
    err.field = next((g for g in match.groups() if g), None) if match else None  # type: ignore[attr-defined]
    return err


_FIELD = re.compile(r"`\$\.([A-Za-z_][\w.\[\]]*)`|required field `([^`]+)`|unknown field `([^`]+)`")


def arguments(args: Mapping[str, Any]) -> dict[str, Any]:
    """A method's arguments by name, from its ``locals()`` (``self`` left out)."""
    return {k: v for k, v in args.items() if k != "self"}


def plain_arguments(args: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`arguments` as msgspec converts and encodes them: a path as its text, any mapping
    as a dict."""
    return {k: _plain(v) for k, v in arguments(args).items()}


def _plain(value: object) -> object:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping) and not isinstance(value, dict):
        return dict(value)
    return value


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
