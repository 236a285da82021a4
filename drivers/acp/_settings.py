"""Session settings shared by every incarnation of a session actor, what one session keeps
across incarnations (:class:`AcpState`), and the resume cursor."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from paddock.actors import SharedState
from paddock.contract import CUMULATIVE_USAGE, InteractionMode, ResumeCursor, TokenUsage, ValidationError
from paddock.supervisors import Confinement

__all__ = ["AcpState", "SessionSettings", "created_at_of", "cursor_for", "session_id_of"]


class SessionSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What a session needs from its instance (immutable, shared by all its incarnations)."""

    driver: str
    instance_id: str
    cursor_driver: str
    auto_allow: Mapping[str, frozenset[str]]
    native_modes: dict[str, str]
    cancel_guard: float
    cancel_timeout: float
    request_timeout: float
    client_fs: bool
    client_terminal: bool
    terminal_output_limit: int
    env: dict[str, str] = {}
    cancel_retry: float = 0.0
    """Seconds between re-sent ``session/cancel`` notifications within the cancel guard."""
    failed_text: Callable[[str], str | None] | None = None
    """The flavor's ``failed_text(text) -> error | None`` hook."""
    resume_hint: Callable[[str, float | None], str | None] | None = None
    """The flavor's ``resume_hint(error, age_seconds | None) -> sentence | None`` hook."""
    cancel_meta: dict[str, Any] = {}
    """``_meta`` sent with every ``session/cancel`` (grok: ``cancelTrigger``)."""
    set_model: bool = False
    """The agent chooses models with ``session/set_model`` (when its session has ``models``)."""
    home: str = ""
    """The instance home: each session's MCP relay folder (spec files, report socket) lives in it."""
    mcp_stdio: bool = True
    """The flavor's ``mcp_stdio``: the agent takes stdio MCP servers from the client."""
    title_is_command: bool = False
    """An ``execute`` permission's title is its exact command (the flavor's ``title_is_command``)."""
    confinement: Confinement | None = None
    """The instance's Landlock rules: ``terminal/*`` commands run under them, as the agent does."""
    unlisted_modes: tuple[str, ...] = ()
    """Mode ids ``session/set_mode`` accepts when the session lists none (the flavor's ``unlisted_modes``)."""


@dataclass(slots=True)
class AcpState(SharedState):
    """An ACP session's durable state (``native_id``: the ACP session id)."""

    created_at: float | None = None
    """When the native session was created (the cursor carries it: resume hints use its age)."""
    interaction_mode: InteractionMode | None = None
    """The interaction mode last applied."""
    modes: list[str] = field(default_factory=list)
    """The native mode ids the session offers."""
    current_mode: str | None = None
    """The native mode the session is in, as last set or reported."""
    model: str | None = None
    """The model last applied."""
    models: dict[str, Any] | None = None
    """The session's ``models`` block (agent-defined JSON)."""
    config_options: list[dict[str, Any]] | None = None
    """The session's ``configOptions`` (agent-defined JSON)."""


def cursor_for(driver: str, session_id: str, created_at: float | None = None,
               usage: TokenUsage | None = None) -> ResumeCursor:
    """``createdAt`` (epoch seconds of ``session/new``) lets a flavor explain a failed load of a
    session too young to be saved (gemini); ``usage`` is the thread's cumulative token usage,
    which the agent does not keep for us (its counts are per turn): a resumed session goes on
    from it instead of from zero. Readers of older cursors see either missing."""
    payload: dict[str, Any] = {"sessionId": session_id}
    if created_at is not None:
        payload["createdAt"] = round(created_at, 3)
    if usage is not None and any(getattr(usage, name) for name in CUMULATIVE_USAGE):
        payload["usage"] = msgspec.to_builtins(usage)
    return ResumeCursor(driver=driver, version=1, payload=msgspec.json.encode(payload).decode())


class _CursorPayload(msgspec.Struct):
    sessionId: str
    createdAt: float | None = None
    usage: TokenUsage | None = None


def _payload(cursor: ResumeCursor) -> _CursorPayload | None:
    try:
        return msgspec.json.decode(cursor.payload, type=_CursorPayload)
    except msgspec.DecodeError:
        return None


def created_at_of(cursor: ResumeCursor) -> float | None:
    payload = _payload(cursor)
    return None if payload is None else payload.createdAt


def usage_of(cursor: ResumeCursor) -> TokenUsage | None:
    """The thread's cumulative usage a cursor carries (``None``: none, or an older cursor)."""
    payload = _payload(cursor)
    return None if payload is None else payload.usage


def session_id_of(cursor: ResumeCursor, driver: str) -> str:
    """The native session id in a cursor this driver wrote; raises ValidationError otherwise."""
    if cursor.driver != driver or cursor.version != 1:
        raise ValidationError("resume", f"a {cursor.driver!r} v{cursor.version} cursor is not a {driver!r} v1 cursor")
    try:
        return msgspec.json.decode(cursor.payload, type=_CursorPayload).sessionId
    except msgspec.DecodeError as exc:
        raise ValidationError("resume", f"malformed {driver!r} cursor payload: {exc}") from None
