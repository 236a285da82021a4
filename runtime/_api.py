"""The typed face of the operation table: :class:`RuntimeAPI`, one method per operation of
:mod:`paddock._operations._table` (the signatures users read), shared by :class:`paddock.Runtime`
(in this process) and :class:`paddock.client.RemoteRuntime` (behind ``paddock serve``). Each
method passes its arguments to ``_call`` with its operation; the subclass runs it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from paddock._operations import _table as ops
from paddock._instances._table import InstanceInfo
from paddock._operations._table import Operation
from paddock._operations._pending import PendingRequest
from paddock._operations._queued import QueuedTurn
from paddock._workspaces._files import FilesRestored
from paddock.contract import (
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
)
from paddock._state._store import Binding

__all__ = ["RuntimeAPI"]

R = TypeVar("R")


class RuntimeAPI:
    """The operations of the table as methods, for a runtime in this process (:class:`Runtime`)
    or behind ``paddock serve`` (:class:`paddock.client.RemoteRuntime`): each passes its arguments
    to :meth:`_call` with its operation. Every method is thread-safe, takes an optional
    keyword-only ``timeout`` in seconds where it blocks, and raises only ``PaddockError``s."""

    def _call(self, op: Operation[R], args: Mapping[str, Any]) -> R:
        """Run ``op`` with ``args`` (the method's ``locals()``)."""
        raise NotImplementedError

    # instances ----------------------------------------------------------------------------------

    def instances(self) -> list[InstanceInfo]:
        """Every configured instance with its status and, once known, its capabilities."""
        return self._call(ops.INSTANCES, locals())

    def diagnose(self, *, timeout: float = 10.0) -> list[dict[str, Any]]:
        """For each instance: id, driver, status, reason, binary, version, auth state and home.

        Uses the driver's ``diagnose`` hook when it has one, else runs ``<binary> --version``.
        Never starts a session.
        """
        return self._call(ops.DIAGNOSE, locals())

    def models(self, instance: str, *, refresh: bool = False, timeout: float = 120.0) -> list[ModelInfo]:
        """The instance's model catalog: id, display name, default, reasoning efforts, input kinds.

        Cached per instance for five minutes; ``refresh`` asks the agent again. Where the agent
        lists models only when a session starts (Claude, ACP agents), a throwaway session is
        started and stopped in an empty private folder. Empty when the agent lists none.
        """
        return self._call(ops.MODELS, locals())

    # sessions -----------------------------------------------------------------------------------

    def start_session(
        self,
        thread_id: str,
        *,
        instance: str,
        cwd: str | os.PathLike[str],
        runtime_mode: RuntimeMode = "full-access",
        interaction_mode: InteractionMode = "default",
        model: str | None = None,
        resume: Literal["auto", "require", "never"] | None = None,
        mcp_servers: Sequence[McpServer] | None = None,
        preamble: str | None = None,
        preamble_reminder: str | None = None,
        require: Sequence[str] = (),
        approval_rules: Sequence[ApprovalRule] | None = None,
        budget: Budget | None = None,
        timeout: float | None = None,
        workspace: Literal["shared", "worktree"] | None = None,
    ) -> Session:
        """Bind ``thread_id`` to ``instance`` and start its session.

        A thread that has a binding resumes from its cursor (``session.started`` has
        ``resumed=True``). A failed resume emits ``runtime.warning`` and starts fresh, unless
        ``resume="require"`` (or the config's ``[runtime] resume``) where it raises.
        ``require`` names capability paths the host needs (``"approvals.commands"``,
        ``"turns.steer"``, ``"sessions.resume"``, ``"tools.mcp_transports.http"``, ...): an
        instance without one, or one that cannot honour ``runtime_mode``, is refused with
        :class:`CapabilityUnsupportedError` naming it before any process starts. ACP agents are
        judged by the instance's cached negotiation (its last ``initialize`` answer), else by
        what the flavor declares its agent answers; no process is started to ask. A thread live on
        another instance is stopped there first; one live on this instance with the same cwd,
        modes, model and hand-off is returned as it is, and restarted from its cursor when they
        differ. Returns when the session is ready.

        ``mcp_servers`` join the instance's configured ones (an entry wins by name); ``None``
        keeps what the thread had, so every resume (also in a new host process) starts with the
        same servers. Their ``env`` and ``headers`` values are secrets: masked everywhere and
        written only to a 0600 file in the instance's home. ``preamble`` (else the instance's)
        rides the first turn of each live session incarnation as a delimited prefix of the
        user's text; ``preamble_reminder`` (one line) rides every later turn. A preamble over
        the instance's ``preamble_max_chars`` (default 70,000) is omitted with a
        ``runtime.warning``, never cut. ``budget`` bounds what the thread spends (see
        :meth:`set_budget`); ``None`` keeps the one it had. Raises :class:`ValidationError` for a
        bad server (a name given twice, an empty command, a non-HTTP url) or a reminder of more
        than one line.

        ``workspace`` (``None``: the instance's ``workspace`` key): ``"shared"`` runs the session
        in ``cwd``; ``"worktree"`` gives the thread a git worktree of its own, on the branch
        ``paddock/<thread key>``, from the repository holding ``cwd`` (its uncommitted and
        untracked files carried over), and runs the session there: the returned ``Session``'s
        ``cwd`` is the worktree and ``branch`` its branch. Each turn's end is then checkpointed
        (``turn.diff.updated`` with the checkpoint id and the turn's diff). A thread that has a
        worktree keeps it on every resume until :meth:`delete_thread`. A folder outside a git
        repository, or a repository with no commit, with submodules or with LFS files, is
        refused with :class:`ValidationError` naming the reason.
        ``approval_rules`` answer the thread's requests before a person: the thread's rules, then
        the instance's, then the runtime's (``paddock.contract.decide``; the first match
        decides); ``None`` keeps what the thread had. A malformed rule is a
        :class:`ValidationError` naming its index.

        Beyond ``max_live_sessions`` the least recently active idle session of the bound's scope
        is stopped (it resumes on its next turn), else the start waits for one up to ``timeout``,
        else raises :class:`CapacityError`; so does a start while the agents' RSS is over
        ``[runtime] memory_mb``.
        """
        return self._call(ops.START_SESSION, locals())

    def send_turn(
        self,
        thread_id: str,
        text: str,
        *,
        interaction_mode: InteractionMode | None = None,
        model: str | None = None,
        attachments: Sequence[Attachment] = (),
        timeout: float | None = None,
    ) -> TurnStartResult:
        """Send a user message; returns when the agent accepted the turn.

        ``attachments`` (:class:`~paddock.contract.ImageAttachment`,
        :class:`~paddock.contract.FileAttachment`) ride the turn where ``turns.attachments``
        takes their kind; others are refused with :class:`CapabilityUnsupportedError` before any
        process is touched. Paths resolve against the session's cwd and must stay inside its
        workspace roots; count and size are bounded (``MAX_ATTACHMENTS``,
        ``MAX_ATTACHMENT_BYTES``): :class:`ValidationError` otherwise. ``model`` (like
        ``start_session``'s) must be in the instance's catalog where one is known
        (:meth:`models`): :class:`ValidationError` naming the close matches otherwise.

        The turn's progress arrives as events carrying ``turn_id``. A thread whose session was
        reaped or closed (or whose host died) resumes transparently. Raises
        :class:`ValidationError` for an empty or oversized prompt, an invalid mode, or a turn
        sent while another runs; :class:`SessionNotFoundError` for an unknown thread;
        :class:`SessionClosedError` for a thread stopped with ``stop_session``;
        :class:`BudgetExceededError` while a budget over the thread (its own, its instance's, the
        runtime's) is spent (``steer_turn`` too).

        Beyond ``max_running_turns`` (the instance's or the runtime's) the turn is queued FIFO
        per instance: this returns at once with ``queued`` (its position) and a ``turn.queued``
        event; it starts when a slot frees (:meth:`queue` lists the waiting ones). With
        ``queue = false`` it raises :class:`CapacityError` instead.
        """
        return self._call(ops.SEND_TURN, locals())

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        """Ask the agent to stop the running turn (``turn_id`` or the current one). The turn then
        ends with ``turn.completed(state="interrupted")``; a finished turn is left alone. A queued
        turn (``turn.queued``) is taken out of its queue and ends the same way, never reaching
        the agent."""
        return self._call(ops.INTERRUPT_TURN, locals())

    def steer_turn(self, thread_id: str, text: str, *, attachments: Sequence[Attachment] = (),
                   timeout: float | None = None) -> TurnStartResult:
        """Add ``text`` to the running turn, following ``decide_steering``: steer it when the agent
        can, else interrupt it, wait for its completion and start a new turn with ``text``."""
        return self._call(ops.STEER_TURN, locals())

    def respond_to_request(self, thread_id: str, request_id: str, decision: Decision, *,
                           surface: Surface = "api", timeout: float | None = None) -> None:
        """Answer an open ``request.opened`` as a person; ``surface`` (``cli``, ``dashboard``,
        ``api``) says where, for the audit (its ``request.resolved`` records ``decided_by
        = "person"`` and the surface). Raises :class:`ValidationError` for an unknown decision
        and :class:`RequestError` for an unknown or already resolved request."""
        return self._call(ops.RESPOND_TO_REQUEST, locals())

    def respond_to_user_input(self, thread_id: str, request_id: str, answers: Mapping[str, Any], *,
                              timeout: float | None = None) -> None:
        """Answer an open ``user-input.requested`` with ``answers`` keyed by question id."""
        return self._call(ops.RESPOND_TO_USER_INPUT, locals())

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Stop the thread's session on purpose. Its binding stays (status ``stopped``):
        ``start_session`` resumes it, ``send_turn`` raises :class:`SessionClosedError`."""
        return self._call(ops.STOP_SESSION, locals())

    def stop_all(self, *, timeout: float | None = None) -> None:
        """Stop every live session (bindings stay, status ``stopped``)."""
        return self._call(ops.STOP_ALL, locals())

    def list_sessions(self) -> list[Session]:
        """The live sessions of every instance."""
        return self._call(ops.LIST_SESSIONS, locals())

    def has_session(self, thread_id: str) -> bool:
        """Whether ``thread_id`` has a live session."""
        return self._call(ops.HAS_SESSION, locals())

    def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot:
        """The thread's turns and their items, folded from the event log by
        :func:`paddock.contract.fold_thread` (works for every driver, live or not; an item not
        completed yet shows its last status and the text streamed so far). Raises
        :class:`SessionNotFoundError` for a thread never started."""
        return self._call(ops.READ_THREAD, locals())

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        """Drop the last ``num_turns`` turns, where the agent supports it
        (``threads.rollback``); raises :class:`CapabilityUnsupportedError` otherwise."""
        return self._call(ops.ROLLBACK_THREAD, locals())

    def fork_thread(self, thread_id: str, new_thread_id: str, *, at_turn: int | None = None,
                    instance: str | None = None, timeout: float | None = None) -> Session:
        """Copy ``thread_id`` into the new thread ``new_thread_id`` (keeping turns 1..``at_turn``
        where given) and return the new thread's live session; the new thread has its own binding.

        On the source's instance the agent copies its session where it can (``sessions.fork``;
        with ``at_turn`` only where ``sessions.fork_kind`` is ``from_turn``). Otherwise, and
        always when ``instance`` names another instance, it is a hand-off: a new session whose
        first turn carries the source's transcript as its preamble (the most recent turns that
        fit the instance's ``preamble_max_chars``, saying so when earlier ones are left out).
        Raises :class:`ValidationError` when ``new_thread_id`` is already bound."""
        return self._call(ops.FORK_THREAD, locals())

    def compact_thread(self, thread_id: str, *, timeout: float | None = None) -> TurnStartResult | None:
        """Summarize the thread's native history to free context (``context.compaction``), resuming
        the session first when it is not live. Returns the compaction turn's result where the agent
        runs it as a turn (its progress and summary arrive as events), else ``None``. Raises
        :class:`CapabilityUnsupportedError` before touching a process where the agent cannot."""
        return self._call(ops.COMPACT_THREAD, locals())

    # pending requests and thread bindings (what `paddock requests` and `paddock sessions` list) ---

    def pending_requests(self, thread_id: str | None = None, *, timeout: float | None = None) -> list[PendingRequest]:
        """The approval (``request.opened``) and user-input (``user-input.requested``) requests
        still open, across threads or for ``thread_id``, oldest first. Every request opened before
        the call is included; one resolved, whose turn completed or whose session exited is not."""
        return self._call(ops.PENDING_REQUESTS, locals())

    def queue(self, instance: str | None = None) -> list[QueuedTurn]:
        """The turns admission holds back (``max_running_turns`` reached, ``queue = true``), of
        ``instance`` or of every instance, in queue order per instance: each with its position,
        when it was queued and how long it has waited. A queued turn starts when a slot frees;
        ``interrupt_turn`` removes it (it ends ``interrupted`` without reaching the agent)."""
        return self._call(ops.QUEUE, locals())

    def list_threads(self) -> list[Binding]:
        """Every thread bound in the state directory (live or not), as persisted."""
        return self._call(ops.LIST_THREADS, locals())

    def generate_text(self, instance: str, prompt: str, *, model: str | None = None,
                      timeout: float = 120.0) -> str:
        """One-shot text (a title, a commit message, a summary): run ``prompt`` in an ephemeral
        session of ``instance`` with no tool approved (runtime mode ``approval-required``, every
        request declined) and return the assistant's text of that turn.

        It leaves no binding, nothing in :meth:`list_sessions` or :meth:`list_threads`, and no
        process beyond those the instance already ran. Raises :class:`OperationTimeout` after
        ``timeout`` seconds, :class:`DriverError` when the turn fails or answers no text, and
        :class:`InstanceNotFoundError` for an unknown or unavailable instance.
        """
        return self._call(ops.GENERATE_TEXT, locals())

    # events -------------------------------------------------------------------------------------

    def compact_events(self, before_seq: int) -> int:
        """Delete logged events with ``seq < before_seq``; returns how many were removed."""
        return self._call(ops.COMPACT_EVENTS, locals())

    # workspaces ---------------------------------------------------------------------------------

    def restore_files(self, thread_id: str, turn_id: str, *, timeout: float | None = None) -> FilesRestored:
        """Restore a worktree thread's files to the checkpoint taken when ``turn_id`` ended
        (``"base"``: where its worktree started), byte for byte; the conversation is not touched.
        Raises :class:`ValidationError` for a thread without a worktree, a turn without a
        checkpoint (pruned, rolled back, unknown) or while a turn runs."""
        return self._call(ops.RESTORE_FILES, locals())

    def diff(self, thread_id: str, from_turn: str | None = None, to_turn: str | None = None, *,
             timeout: float | None = None) -> str:
        """The unified diff between two checkpoints of a worktree thread: ``to_turn``'s
        (``None``: the newest) from ``from_turn``'s (``None``: the one before it, so the turn's
        own diff; ``"base"``: where the worktree started)."""
        return self._call(ops.DIFF, locals())

    def delete_thread(self, thread_id: str, *, keep_branch: bool = False, timeout: float | None = None) -> None:
        """Stop the thread's session and remove its binding, its worktree and its checkpoints'
        hidden refs; its branch too unless ``keep_branch``. Raises
        :class:`SessionNotFoundError` for an unknown thread."""
        return self._call(ops.DELETE_THREAD, locals())

    # spend --------------------------------------------------------------------------------------

    def usage(self, thread_id: str | None = None, instance: str | None = None, since: float | None = None, *,
              timeout: float = 5.0) -> UsageReport:
        """What the turns started at or after ``since`` (Unix time; all when ``None``) spent, from
        the usage ledger: tokens by kind, cost and its source, turns and their wall time, in total,
        per instance and per thread, and per turn when ``thread_id`` is given; CPU seconds and
        peak RSS of the agent processes per instance. It includes every event published before
        the call (it waits up to ``timeout`` seconds for the ledger to fold them). The ledger
        lives in the state directory and survives restarts."""
        return self._call(ops.USAGE, locals())

    def set_budget(self, budget: Budget | None, thread_id: str | None = None, instance: str | None = None) -> None:
        """Set the budget of a thread, of an instance, or (neither given) of the runtime; ``None``
        removes it (the config's applies again). Persisted. Raising a spent budget lets
        ``send_turn`` through again."""
        return self._call(ops.SET_BUDGET, locals())
