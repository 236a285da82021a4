"""The adapter contract every driver instance implements, and its input and result types."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from ._attachments import Attachment
from ._capabilities import Capabilities
from ._cursor import ResumeCursor
from ._events import ConfinementInfo, Decider, Decision, ItemKind, ItemStatus, Surface, TurnState
from ._mcp import McpServer
from ._rules import ApprovalRule
from ._usage import Budget

__all__ = [
    "MAX_PROMPT_CHARS",
    "Decision",
    "InteractionMode",
    "ItemSnapshot",
    "ModelInfo",
    "ProviderAdapter",
    "RuntimeMode",
    "SendTurnInput",
    "Session",
    "SessionStatus",
    "StartSessionInput",
    "ThreadSnapshot",
    "TurnSnapshot",
    "TurnStartResult",
    "DECISIONS",
    "INTERACTION_MODES",
    "RUNTIME_MODES",
]

RuntimeMode = Literal["approval-required", "auto-accept-edits", "full-access"]
InteractionMode = Literal["default", "plan"]
SessionStatus = Literal["starting", "ready", "running", "stopped", "error"]

DECISIONS: tuple[Decision, ...] = ("accept", "accept_for_session", "decline", "cancel")
RUNTIME_MODES: tuple[RuntimeMode, ...] = ("approval-required", "auto-accept-edits", "full-access")
INTERACTION_MODES: tuple[InteractionMode, ...] = ("default", "plan")
MAX_PROMPT_CHARS = 120_000
"""Prompts longer than this are refused before they reach a process."""


class _Input(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class StartSessionInput(_Input, frozen=True):
    """What the runtime asks a driver instance to start. ``resume_cursor`` is set when the thread
    has a binding to resume; ``workspace_roots`` bound every file and terminal request (``cwd`` is
    always one of them)."""

    thread_id: str
    cwd: str
    runtime_mode: RuntimeMode = "full-access"
    interaction_mode: InteractionMode = "default"
    model: str | None = None
    resume_cursor: ResumeCursor | None = None
    workspace_roots: tuple[str, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()
    """The merged servers (instance, then session; see ``merge_mcp_servers``) the driver passes
    natively or through the MCP relay; never dropped silently."""
    preamble: str | None = None
    """Grounding text the session base puts before the user's text of the first turn of each live
    session incarnation, delimited; already bounded by the runtime."""
    preamble_reminder: str | None = None
    """One line put before the user's text of every later turn."""
    approval_rules: tuple[ApprovalRule, ...] = ()
    """The rules that answer this session's requests before a person (the thread's, then the
    instance's, then the runtime's; :func:`paddock.contract.decide`), applied by the session base."""
    confinement: ConfinementInfo | None = None
    """What the kernel confines the session's agent to, as the runtime planned it; the session's
    ``session.started`` carries it."""
    budget: Budget | None = None
    """The thread's own budget (``start_session(budget=...)``, ``set_budget(thread_id=...)``) when
    it has one, for a driver whose agent has a native limit to pass as a second layer (Claude
    Code's ``--max-budget-usd``). Paddock's own enforcement does not depend on it."""


class SendTurnInput(_Input, frozen=True):
    thread_id: str
    text: str
    turn_id: str | None = None
    interaction_mode: InteractionMode | None = None
    model: str | None = None
    attachments: tuple[Attachment, ...] = ()
    """Images and files the turn carries, already resolved by the runtime (values filled in from
    their paths, bounded, confined to the workspace roots) and allowed by ``turns.attachments``."""


class TurnStartResult(_Input, frozen=True):
    """The turn was accepted; its progress arrives as events carrying ``turn_id``."""

    thread_id: str
    turn_id: str
    resume_cursor: ResumeCursor | None = None
    queued: int | None = None
    """Set by the runtime when admission queued the turn (``turn.queued``): its position in the
    instance's queue (1: next). ``None``: the agent accepted it at once."""


class Session(_Input, frozen=True):
    """A live (or last known) binding of a thread to an instance."""

    thread_id: str
    instance_id: str
    driver: str
    status: SessionStatus
    cwd: str
    runtime_mode: RuntimeMode = "full-access"
    interaction_mode: InteractionMode = "default"
    model: str | None = None
    active_turn_id: str | None = None
    resume_cursor: ResumeCursor | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    last_error: str | None = None
    resumed: bool = False
    """The session continues a native session from ``resume_cursor`` (a failed resume that fell
    back to a fresh native session leaves this false)."""
    branch: str | None = None
    """The git branch of the thread's own worktree (``workspace = "worktree"``; ``cwd`` is then
    that worktree), else ``None``."""


class ModelInfo(_Input, frozen=True):
    """One entry of an instance's model catalog (``Runtime.models``, ``InstanceInfo.models``), as
    its agent lists it."""

    id: str
    display_name: str | None = None
    description: str | None = None
    is_default: bool = False
    hidden: bool = False
    reasoning_efforts: tuple[str, ...] = ()
    """The reasoning efforts the model takes (e.g. ``low``, ``medium``, ``high``), where the agent
    lists them; empty when unknown."""
    input_kinds: tuple[Literal["text", "image"], ...] = ("text",)
    """What the model reads: text, and images where the agent says so."""


class ItemSnapshot(_Input, frozen=True):
    item_id: str
    kind: ItemKind
    status: ItemStatus = "completed"
    title: str | None = None
    text: str | None = None


class TurnSnapshot(_Input, frozen=True):
    turn_id: str
    state: TurnState | Literal["running"]
    user_text: str | None = None
    items: tuple[ItemSnapshot, ...] = ()


class ThreadSnapshot(_Input, frozen=True):
    thread_id: str
    turns: tuple[TurnSnapshot, ...] = ()
    files_restored_to: str | None = None
    """Set by a rollback of a thread with its own worktree: the checkpoint (a commit id) its files
    were restored to, the one taken after the last turn kept (or the worktree's base)."""


@runtime_checkable
class ProviderAdapter(Protocol):
    """One driver instance. Every method is thread-safe and returns when the operation is
    accepted; progress arrives as canonical events. Methods raise only ``PaddockError``s."""

    def capabilities(self) -> Capabilities: ...

    def start_session(self, input: StartSessionInput, *, timeout: float | None = None) -> Session: ...

    def send_turn(self, input: SendTurnInput, *, timeout: float | None = None) -> TurnStartResult: ...

    def interrupt_turn(
        self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None
    ) -> None: ...

    def steer_turn(
        self, thread_id: str, input: SendTurnInput, *, timeout: float | None = None
    ) -> TurnStartResult: ...

    def respond_to_request(
        self, thread_id: str, request_id: str, decision: Decision, *, decided_by: Decider = "person",
        surface: Surface | None = None, timeout: float | None = None,
    ) -> None: ...

    def respond_to_user_input(
        self,
        thread_id: str,
        request_id: str,
        answers: dict[str, Any],
        *,
        timeout: float | None = None,
    ) -> None: ...

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None: ...

    def stop_all(self, *, timeout: float | None = None) -> None: ...

    def list_sessions(self) -> list[Session]: ...

    def has_session(self, thread_id: str) -> bool: ...

    def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot: ...

    def rollback_thread(
        self, thread_id: str, num_turns: int, *, timeout: float | None = None
    ) -> ThreadSnapshot: ...

    def fork_native(
        self, thread_id: str, *, at_turn: int | None = None, timeout: float | None = None
    ) -> ResumeCursor:
        """Copy the native session (``sessions.fork``; ``at_turn`` only where ``fork_kind`` is
        ``from_turn``); the copy's cursor."""
        ...

    def compact_thread(self, thread_id: str, *, timeout: float | None = None) -> TurnStartResult | None:
        """Compact the native history (``context.compaction``); a turn's result when the
        compaction runs as a turn."""
        ...

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop every session (each emits ``session.exited``), then every process of the
        instance, within ``timeout`` seconds. Afterwards no process of the instance is alive.
        Idempotent; the runtime calls it when it closes."""
        ...
