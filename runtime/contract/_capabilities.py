"""Capabilities: what an instance's agent really does, in thirteen groups of flags.

Host code and the runtime read capabilities, never the driver kind. A driver declares its own;
ACP drivers start from :data:`ACP_DEFAULT_CAPABILITIES` and override only what the agent really
does, with a comment naming the protocol fact. A flag left on that fails at run time is a bug.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ._errors import CapabilityUnsupportedError

__all__ = [
    "ACP_DEFAULT_CAPABILITIES",
    "ApprovalsCaps",
    "Capabilities",
    "CheckpointingCaps",
    "ContextCaps",
    "ForkKind",
    "IdentityCaps",
    "IdentityStrength",
    "PlanningCaps",
    "RuntimePolicyCaps",
    "SessionsCaps",
    "SteeringStrategy",
    "StreamingCaps",
    "SubagentsCaps",
    "ThreadsCaps",
    "ToolsCaps",
    "TurnsCaps",
    "UsageCaps",
    "UsageSource",
    "decide_steering",
]

IdentityStrength = Literal["strong", "weak", "none"]
SteeringStrategy = Literal["active_steering", "interrupt_restart"]


class _Group(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


ForkKind = Literal["native", "from_turn", "handoff"]
"""What ``fork_thread`` gives on an instance: ``native`` (the agent copies its session),
``from_turn`` (native, also from a past turn), ``handoff`` (a new session whose first turn
carries the source's transcript as its preamble)."""


class SessionsCaps(_Group, frozen=True):
    """``resume``: continue a native session from a cursor in a fresh process; ``load``: the same
    with the history replayed; ``fork``: the agent copies a session natively; ``fork_kind``: what
    ``fork_thread`` gives here (``handoff`` whenever ``fork`` is off); ``list``: enumerate native
    sessions; ``shared_process``: many sessions on one agent process."""

    resume: bool
    load: bool
    fork: bool
    fork_kind: ForkKind
    list: bool
    shared_process: bool

    def __post_init__(self) -> None:
        if self.fork != (self.fork_kind != "handoff"):
            raise ValueError(f"sessions.fork={self.fork} contradicts sessions.fork_kind={self.fork_kind!r}")


class ThreadsCaps(_Group, frozen=True):
    """``read``: a snapshot of past turns; ``rollback``: drop the last N turns;
    ``metadata``: titles and other thread metadata."""

    read: bool
    rollback: bool
    metadata: bool


class TurnsCaps(_Group, frozen=True):
    """``interrupt``: stop a running turn; ``steer``: add input to a running turn;
    ``queue``: accept a turn while another runs; ``attachments``: the kinds of attachment a turn
    may carry (the runtime refuses the rest before touching a process); ``steer_attachments``: a
    steered input may carry them too (T3 Code's ``activeSteeringAcceptsAttachments``)."""

    interrupt: bool
    steer: bool
    queue: bool
    attachments: tuple[Literal["image", "file"], ...]
    steer_attachments: bool


class StreamingCaps(_Group, frozen=True):
    assistant_text: bool
    reasoning: bool
    plan_text: bool
    command_output: bool
    token_usage: bool


class ToolsCaps(_Group, frozen=True):
    """``client_fs`` and ``client_terminal``: the agent asks the host to read and write files and
    run commands, confined by the runtime to the workspace roots. ``mcp``: the session's MCP
    servers reach the agent; ``mcp_transports`` are the transports it takes natively (others are
    bridged by the MCP relay); ``mcp_scope`` says whether servers belong to one session or are
    shared by every session of the instance (OpenCode's are per server process)."""

    commands: bool
    file_changes: bool
    mcp: bool
    web_search: bool
    client_fs: bool
    client_terminal: bool
    mcp_transports: tuple[Literal["stdio", "http", "sse"], ...]
    mcp_scope: Literal["session", "instance"]


class ApprovalsCaps(_Group, frozen=True):
    commands: bool
    file_changes: bool
    accept_for_session: bool
    user_input: bool


class PlanningCaps(_Group, frozen=True):
    plan_updates: bool
    plan_mode: bool


class SubagentsCaps(_Group, frozen=True):
    tasks: bool


class ContextCaps(_Group, frozen=True):
    compaction: bool
    context_window: bool


class CheckpointingCaps(_Group, frozen=True):
    diffs: bool
    restore: bool


class IdentityCaps(_Group, frozen=True):
    """How stable the native ids are: ``strong`` (the agent names it), ``weak`` (derived by the
    runtime), ``none``."""

    thread: IdentityStrength
    turn: IdentityStrength
    item: IdentityStrength
    request: IdentityStrength


class RuntimePolicyCaps(_Group, frozen=True):
    """``native``: the agent enforces the runtime mode itself; ``client-boundary``: the runtime
    enforces it when it answers the agent's permission, fs and terminal requests."""

    enforcement: Literal["native", "client-boundary"]
    modes: tuple[str, ...]


UsageSource = Literal["per_turn", "cumulative", "none"]
"""How an agent reports token usage: per turn (Paddock adds the turns up), as the thread's running
total, or not at all (a token budget cannot bind it)."""


class UsageCaps(_Group, frozen=True):
    """Where the usage ledger's figures come from: ``source`` (:data:`UsageSource`) and whether
    the agent reports a cost (``cost``; else the ledger prices tokens from ``[pricing]``)."""

    source: UsageSource
    cost: bool


class Capabilities(_Group, frozen=True):
    """The thirteen capability groups of one instance."""

    sessions: SessionsCaps
    threads: ThreadsCaps
    turns: TurnsCaps
    streaming: StreamingCaps
    tools: ToolsCaps
    approvals: ApprovalsCaps
    planning: PlanningCaps
    subagents: SubagentsCaps
    context: ContextCaps
    checkpointing: CheckpointingCaps
    identity: IdentityCaps
    runtime_policy: RuntimePolicyCaps
    usage: UsageCaps


ACP_DEFAULT_CAPABILITIES = Capabilities(
    # ACP v1: loadSession, sessionCapabilities.resume/fork/list are negotiated at initialize.
    sessions=SessionsCaps(resume=False, load=False, fork=False, fork_kind="handoff", list=False, shared_process=True),
    # ACP has no turn history read or rollback method; the runtime keeps its own snapshot.
    threads=ThreadsCaps(read=True, rollback=False, metadata=True),
    # session/cancel is a stable notification; there is no mid-turn input. Text content blocks
    # are baseline; image and resource blocks follow promptCapabilities (negotiated).
    turns=TurnsCaps(interrupt=True, steer=False, queue=False, attachments=(), steer_attachments=False),
    # usage_update is not in every agent; agents that send it turn token_usage on.
    streaming=StreamingCaps(assistant_text=True, reasoning=True, plan_text=False, command_output=True,
                            token_usage=False),
    # mcpServers on session/new is in the base protocol (stdio must be supported), but no agent
    # reports what it loaded: the driver turns mcp on only where it passes servers and verifies them.
    tools=ToolsCaps(commands=True, file_changes=True, mcp=False, web_search=False, client_fs=False,
                    client_terminal=False, mcp_transports=(), mcp_scope="session"),
    # session/request_permission options carry allow_always.
    approvals=ApprovalsCaps(commands=True, file_changes=True, accept_for_session=True, user_input=False),
    planning=PlanningCaps(plan_updates=True, plan_mode=False),
    subagents=SubagentsCaps(tasks=False),
    context=ContextCaps(compaction=False, context_window=False),
    checkpointing=CheckpointingCaps(diffs=False, restore=False),
    # sessionId and toolCallId come from the agent; turns are ours; request ids are per process.
    identity=IdentityCaps(thread="strong", turn="none", item="strong", request="weak"),
    runtime_policy=RuntimePolicyCaps(enforcement="client-boundary",
                                     modes=("approval-required", "auto-accept-edits", "full-access")),
    # PromptResponse.usage is not in ACP v1; usage_update carries a context size and a cost only.
    usage=UsageCaps(source="none", cost=False),
)
"""What every ACP v1 agent can do before ``initialize`` says more."""


def decide_steering(caps: Capabilities, force_restart: bool = False) -> SteeringStrategy:
    """Choose how to add input to a running turn.

    Returns ``"active_steering"`` when the agent takes input mid-turn (and ``force_restart`` is
    false), else ``"interrupt_restart"`` when it can interrupt the turn and start a new one.
    Raises :class:`CapabilityUnsupportedError` naming the missing capability otherwise.
    """
    if caps.turns.steer and not force_restart:
        return "active_steering"
    if caps.turns.interrupt:
        return "interrupt_restart"
    missing = "turns.interrupt" if force_restart or not caps.turns.steer else "turns.steer"
    raise CapabilityUnsupportedError(
        missing,
        "this agent can neither take input mid-turn nor interrupt a turn to restart it",
    )
