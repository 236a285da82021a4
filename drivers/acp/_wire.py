"""ACP v1 wire types we decode, as lenient msgspec Structs with one reused Decoder each.

Only the fields the adapter reads are declared; unknown fields are ignored (agents add ``_meta``
and newer keys freely) and most enums are plain ``str`` because the schema says a bad value
defaults instead of failing (``x-deserialize-default-on-error``).
"""

from __future__ import annotations

from typing import Union

import msgspec

from paddock.contract import JsonValue

__all__ = [
    "AgentCapabilities",
    "AuthMethod",
    "ContentBlock",
    "InitializeResult",
    "PermissionOption",
    "PermissionRequest",
    "PromptResult",
    "ReadTextFileParams",
    "SessionNotification",
    "SessionResult",
    "SessionUpdate",
    "TerminalCreateParams",
    "TerminalIdParams",
    "ToolCallFields",
    "WriteTextFileParams",
    "decode_update_params",
    "update_kind",
]


# (mypy reads ``frozen`` per class, so every subclass repeats ``frozen=True``.)
# Decoded wire messages never form reference cycles: keep them out of the cyclic GC, which
# otherwise takes 12-14% of the CPU at 100k events/s.
class _W(msgspec.Struct, kw_only=True, frozen=True, gc=False):
    pass


class ContentBlock(_W, frozen=True):
    """``text`` for text blocks; other block types keep only their ``type`` (and uri/name)."""

    type: str = "text"
    text: str | None = None
    uri: str | None = None
    name: str | None = None


class Location(_W, frozen=True):
    path: str
    line: int | None = None


class Cost(_W, frozen=True):
    amount: float = 0.0
    currency: str | None = None


class PlanEntry(_W, frozen=True):
    content: str = ""
    priority: str | None = None
    status: str | None = None


# session/update payloads: a tagged union on ``sessionUpdate`` -----------------------------------


class _U(msgspec.Struct, kw_only=True, frozen=True, tag_field="sessionUpdate", gc=False):
    pass


class UserMessageChunk(_U, tag="user_message_chunk", frozen=True):
    content: ContentBlock | None = None
    messageId: str | None = None


class AgentMessageChunk(_U, tag="agent_message_chunk", frozen=True):
    content: ContentBlock | None = None
    messageId: str | None = None
    _meta: dict[str, JsonValue] | None = msgspec.field(default=None, name="_meta")


class AgentThoughtChunk(_U, tag="agent_thought_chunk", frozen=True):
    content: ContentBlock | None = None
    messageId: str | None = None


class ToolCallFields(_W, frozen=True):
    """The fields ``tool_call``, ``tool_call_update`` and a permission request's ``toolCall``
    share; all optional but ``toolCallId`` (an update only carries what changed)."""

    toolCallId: str = ""
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[JsonValue] | None = None
    locations: list[Location] | None = None
    rawInput: JsonValue = None
    rawOutput: JsonValue = None


class _ToolCallUpdateFields(ToolCallFields, _U, frozen=True):
    """:class:`ToolCallFields` as a session update (``tool_call`` and ``tool_call_update``)."""


class ToolCallStart(_ToolCallUpdateFields, tag="tool_call", frozen=True):
    pass


class ToolCallUpdate(_ToolCallUpdateFields, tag="tool_call_update", frozen=True):
    pass


class PlanUpdate(_U, tag="plan", frozen=True):
    entries: list[PlanEntry] = []


class AvailableCommandsUpdate(_U, tag="available_commands_update", frozen=True):
    availableCommands: list[JsonValue] = []


class CurrentModeUpdate(_U, tag="current_mode_update", frozen=True):
    currentModeId: str = ""


class ConfigOptionUpdate(_U, tag="config_option_update", frozen=True):
    configOptions: list[JsonValue] = []


class SessionInfoUpdate(_U, tag="session_info_update", frozen=True):
    title: str | None = None
    updatedAt: str | None = None


class UsageUpdate(_U, tag="usage_update", frozen=True):
    used: int = 0
    size: int = 0
    cost: Cost | None = None


SessionUpdate = Union[
    UserMessageChunk,
    AgentMessageChunk,
    AgentThoughtChunk,
    ToolCallStart,
    ToolCallUpdate,
    PlanUpdate,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    ConfigOptionUpdate,
    SessionInfoUpdate,
    UsageUpdate,
]


class SessionNotification(_W, frozen=True):
    sessionId: str
    update: SessionUpdate


class _UnknownUpdate(_W, frozen=True):
    sessionUpdate: str = ""


class _UnknownNotification(_W, frozen=True):
    sessionId: str = ""
    update: _UnknownUpdate = _UnknownUpdate()


_notification_decoder = msgspec.json.Decoder(SessionNotification)
_unknown_decoder = msgspec.json.Decoder(_UnknownNotification)


def decode_update_params(raw: bytes | msgspec.Raw) -> tuple[str, SessionUpdate | str]:
    """Decode ``session/update`` params: ``(sessionId, update)``; for a kind we do not know (or a
    malformed payload) the update is its ``sessionUpdate`` name as a plain string instead.
    Raises ``msgspec.DecodeError`` only when the params are not an object with a sessionId."""
    try:
        note = _notification_decoder.decode(raw)
        return note.sessionId, note.update
    except msgspec.DecodeError:
        unknown = _unknown_decoder.decode(raw)
        return unknown.sessionId, unknown.update.sessionUpdate or "<missing>"


def update_kind(update: SessionUpdate | str) -> str:
    return update if isinstance(update, str) else str(type(update).__struct_config__.tag)


# results of our requests -------------------------------------------------------------------------


class SessionCapabilities(_W, frozen=True):
    resume: dict[str, JsonValue] | None = None
    fork: dict[str, JsonValue] | None = None
    list: dict[str, JsonValue] | None = None
    close: dict[str, JsonValue] | None = None


class PromptCapabilities(_W, frozen=True):
    image: bool = False
    audio: bool = False
    embeddedContext: bool = False


class McpCapabilities(_W, frozen=True):
    """The MCP transports the agent takes besides stdio (which every agent must take)."""

    http: bool = False
    sse: bool = False


class AgentCapabilities(_W, frozen=True):
    loadSession: bool = False
    promptCapabilities: PromptCapabilities = PromptCapabilities()
    sessionCapabilities: SessionCapabilities = SessionCapabilities()
    mcpCapabilities: McpCapabilities = McpCapabilities()


class AuthMethod(_W, frozen=True):
    id: str = ""
    name: str | None = None


class AgentInfo(_W, frozen=True):
    name: str | None = None
    title: str | None = None
    version: str | None = None


class InitializeResult(_W, frozen=True):
    protocolVersion: int = 1
    agentCapabilities: AgentCapabilities = AgentCapabilities()
    authMethods: list[AuthMethod] = []
    agentInfo: AgentInfo | None = None


class ModeInfo(_W, frozen=True):
    id: str
    name: str | None = None


class ModeState(_W, frozen=True):
    currentModeId: str | None = None
    availableModes: list[ModeInfo] = []


class SessionResult(_W, frozen=True):
    """Result of ``session/new``, ``session/load`` and ``session/resume`` (``sessionId`` only in
    the first)."""

    sessionId: str | None = None
    modes: ModeState | None = None
    models: dict[str, JsonValue] | None = None
    configOptions: list[dict[str, JsonValue]] | None = None


class PromptUsage(_W, frozen=True):
    inputTokens: int | None = None
    outputTokens: int | None = None
    cachedReadTokens: int | None = None
    cachedWriteTokens: int | None = None
    thoughtTokens: int | None = None
    totalTokens: int | None = None


class PromptResult(_W, frozen=True):
    stopReason: str = "end_turn"
    usage: PromptUsage | None = None


# requests from the agent -------------------------------------------------------------------------


class PermissionOption(_W, frozen=True):
    optionId: str
    name: str | None = None
    kind: str | None = None


class PermissionRequest(_W, frozen=True):
    sessionId: str
    toolCall: ToolCallFields = ToolCallFields()
    options: list[PermissionOption] = []


class ReadTextFileParams(_W, frozen=True):
    sessionId: str
    path: str
    line: int | None = None
    limit: int | None = None


class WriteTextFileParams(_W, frozen=True):
    sessionId: str
    path: str
    content: str


class EnvVariable(_W, frozen=True):
    name: str
    value: str


class TerminalCreateParams(_W, frozen=True):
    sessionId: str
    command: str
    args: list[str] = []
    env: list[EnvVariable] = []
    cwd: str | None = None
    outputByteLimit: int | None = None


class TerminalIdParams(_W, frozen=True):
    sessionId: str
    terminalId: str


class SessionIdOnly(_W, frozen=True):
    sessionId: str = ""
