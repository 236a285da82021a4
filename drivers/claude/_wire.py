"""Claude Code's stream-json stdout (``claude-stream-json.md``) as msgspec Structs, decoded once
at the edge (the process's reader thread) by :func:`decode_line`.

Only the fields the driver reads are declared; every other field is ignored (the CLI adds fields
in most releases). A field read with "if present" semantics defaults to ``UNSET``. A line of a
``type`` the driver does not know decodes to :class:`Unknown` (the driver ignores it, as the CLI
ignores ours); a known ``type`` whose fields do not have the documented shapes decodes to
:class:`Malformed` (the driver warns). ``system`` lines are decoded twice, by ``subtype``: the
subtypes differ in the shapes of same-named fields, and they are a few per turn.
"""

from __future__ import annotations

from typing import Union

import msgspec
from msgspec import UNSET, UnsetType

from paddock.contract import JsonObject, JsonValue

__all__ = [
    "ApiRetry",
    "Assistant",
    "Block",
    "CompactBoundary",
    "ControlCancel",
    "ControlRequest",
    "ControlResponse",
    "InitAnswer",
    "Malformed",
    "McpServer",
    "McpStatusAnswer",
    "Message",
    "ModelEntry",
    "Part",
    "RETRY_FIELDS",
    "Response",
    "Result",
    "StreamEvent",
    "System",
    "SystemInit",
    "Unknown",
    "User",
    "decode_init_answer",
    "decode_line",
    "decode_mcp_answer",
]


# (mypy reads ``frozen`` per class, so every subclass repeats ``frozen=True``.) Decoded lines
# never form reference cycles: keep them out of the cyclic GC.
class _In(msgspec.Struct, frozen=True, gc=False):
    pass


class _Line(_In, frozen=True, tag_field="type"):
    pass


# -- content blocks (assistant and user messages, stream events) -------------------------------


class Part(_In, frozen=True):
    """One block of a ``tool_result``'s list content (only ``text`` blocks carry text)."""

    type: str = ""
    text: str | None = None


class Block(_In, frozen=True):
    """One content block of any type (``text``, ``thinking``, ``tool_use``, ``tool_result``, and
    types the driver does not read), with the fields of each."""

    type: str = ""
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: JsonObject | None = None
    tool_use_id: str | None = None
    content: str | list[Part] | None = None
    is_error: bool | None = None


class AssistantMessage(_In, frozen=True):
    id: str | None = None
    model: str | None = None
    content: list[Block] = []


class UserMessage(_In, frozen=True):
    content: str | list[Block] | None = None


# -- stream events (``--include-partial-messages``: raw Anthropic SSE events) -------------------


class SseMessage(_In, frozen=True):
    id: str | None = None


class SseDelta(_In, frozen=True):
    type: str = ""
    text: str | None = None
    thinking: str | None = None


class SseEvent(_In, frozen=True):
    type: str = ""
    index: int | None = None
    message: SseMessage | None = None
    content_block: Block | None = None
    delta: SseDelta | None = None


# -- control messages ----------------------------------------------------------------------------


class CliRequest(_In, frozen=True):
    """The ``request`` of a CLI -> host ``control_request`` (``can_use_tool``'s fields; other
    subtypes are refused by name)."""

    subtype: str | None = None
    tool_name: str | None = None
    display_name: str | None = None
    description: str | None = None
    input: JsonObject | None = None
    permission_suggestions: list[JsonValue] | None = None
    blocked_path: JsonValue = None
    tool_use_id: str | None = None


class Response(_In, frozen=True):
    """The ``response`` of a ``control_response``: ``success`` with the answer's body kept
    undecoded (its shape depends on the request), or ``error``."""

    subtype: str | None = None
    request_id: str | None = None
    error: JsonValue = None
    response: msgspec.Raw = msgspec.Raw(b"null")


# -- stdout lines --------------------------------------------------------------------------------


class Assistant(_Line, frozen=True, tag="assistant"):
    message: AssistantMessage = AssistantMessage()


class User(_Line, frozen=True, tag="user"):
    message: UserMessage = UserMessage()
    isReplay: bool | None = None
    tool_use_result: JsonValue = None
    """``{stdout, stderr, interrupted, ...}`` of built-in tools, ``"Error: ..."`` of a denied one,
    content blocks of an MCP tool."""


class StreamEvent(_Line, frozen=True, tag="stream_event"):
    event: SseEvent = SseEvent()


class ResultUsage(_In, frozen=True):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class ModelUsage(_In, frozen=True):
    contextWindow: int | None = None


class Result(_Line, frozen=True, tag="result"):
    subtype: str | None = None
    is_error: bool | None = None
    result: str | None = None
    errors: list[JsonValue] | None = None
    api_error_status: int | str | None = None
    stop_reason: str | None = None
    terminal_reason: str | None = None
    usage: ResultUsage | None = None
    modelUsage: dict[str, ModelUsage] | None = None
    total_cost_usd: float | None = None


class RateLimitInfo(_In, frozen=True):
    """``rate_limit_event.rate_limit_info`` (the SDK's schema): the account's unified window;
    ``resetsAt`` in Unix seconds, ``utilization`` a fraction."""

    status: str | None = None
    """``allowed``, ``allowed_warning`` or ``rejected``."""
    resetsAt: float | None = None
    rateLimitType: str | None = None
    """``five_hour``, ``seven_day``, ``seven_day_opus``, ``seven_day_sonnet``, ``overage``, ..."""
    utilization: float | None = None
    overageStatus: str | None = None
    overageResetsAt: float | None = None
    isUsingOverage: bool | None = None


class RateLimitEvent(_Line, frozen=True, tag="rate_limit_event"):
    """Sent when the account's rate-limit state changes (Claude Code reads the
    ``anthropic-ratelimit-unified-*`` headers of a model response; a claude.ai login only)."""

    rate_limit_info: RateLimitInfo = RateLimitInfo()


class System(_Line, frozen=True, tag="system"):
    """A ``system`` line of a subtype the driver does not read."""

    subtype: JsonValue = None


class ControlRequest(_Line, frozen=True, tag="control_request"):
    request_id: str | None = None
    request: CliRequest = CliRequest()


class ControlResponse(_Line, frozen=True, tag="control_response"):
    response: Response = Response()


class ControlCancel(_Line, frozen=True, tag="control_cancel_request"):
    request_id: str | None = None


# system lines by subtype --------------------------------------------------------------------------


class McpServer(_In, frozen=True):
    """One server of ``system/init``'s ``mcp_servers`` and of the ``mcp_status`` answer."""

    name: str | None = None
    status: JsonValue = None
    error: JsonValue = None
    tools: list[JsonValue] | None = None


class SystemInit(_In, frozen=True):
    """``system/init``, once per turn. The fields the session reports (``session.configured``)
    are ``UNSET`` when the CLI leaves them out."""

    session_id: str | None | UnsetType = UNSET
    model: str | None | UnsetType = UNSET
    permissionMode: JsonValue | UnsetType = UNSET
    cwd: JsonValue | UnsetType = UNSET
    claude_code_version: JsonValue | UnsetType = UNSET
    tools: list[JsonValue] | UnsetType = UNSET
    output_style: JsonValue | UnsetType = UNSET
    mcp_servers: list[McpServer] | None = None


class CompactBoundary(_In, frozen=True):
    uuid: str | None = None
    compact_metadata: JsonValue = None


class ApiRetry(msgspec.Struct, frozen=True, gc=False):
    """``system/api_retry``: a failed model request the CLI retries. ``detail`` holds those of
    :data:`RETRY_FIELDS` the line has, as sent (they pass into the warning's detail)."""

    detail: JsonObject


RETRY_FIELDS = ("attempt", "max_retries", "retry_delay_ms", "error_status", "error")

class Unknown(msgspec.Struct, frozen=True, gc=False):
    """A line of a ``type`` the driver does not know (or none)."""

    type: JsonValue = None


class Malformed(msgspec.Struct, frozen=True, gc=False):
    """A line of a known ``type`` (or ``system`` subtype) whose fields do not have the shapes
    above; ``error`` is msgspec's message, naming the path of the bad field."""

    type: str
    error: str


Message = Union[Assistant, User, StreamEvent, Result, SystemInit, CompactBoundary, ApiRetry, System,
                ControlRequest, ControlResponse, ControlCancel, RateLimitEvent, Unknown, Malformed]
"""What :func:`decode_line` yields for one stdout line that is a JSON object."""

_Known = Union[Assistant, User, StreamEvent, Result, System, ControlRequest, ControlResponse, ControlCancel,
               RateLimitEvent]
_line_decoder = msgspec.json.Decoder(_Known)
_unknown_decoder = msgspec.json.Decoder(Unknown)
_KNOWN = frozenset(("assistant", "user", "stream_event", "result", "system", "control_request", "control_response",
                    "control_cancel_request", "rate_limit_event"))
_system_decoders: dict[str, msgspec.json.Decoder[SystemInit] | msgspec.json.Decoder[CompactBoundary]] = {
    "init": msgspec.json.Decoder(SystemInit),
    "compact_boundary": msgspec.json.Decoder(CompactBoundary),
}
_object_decoder = msgspec.json.Decoder(JsonObject)


def decode_line(line: bytes) -> Message:
    """One stdout line. Raises ``msgspec.DecodeError`` when it is not JSON, and
    ``msgspec.ValidationError`` when it is JSON but not an object."""
    try:
        msg = _line_decoder.decode(line)
    except msgspec.ValidationError as exc:
        head = _unknown_decoder.decode(line)  # not an object: raises
        if isinstance(head.type, str) and head.type in _KNOWN:
            return Malformed(head.type, str(exc))
        return head
    if isinstance(msg, System) and isinstance(msg.subtype, str):
        if msg.subtype == "api_retry":
            fields = _object_decoder.decode(line)
            return ApiRetry({k: fields[k] for k in RETRY_FIELDS if k in fields})
        decoder = _system_decoders.get(msg.subtype)
        if decoder is not None:
            try:
                return decoder.decode(line)
            except msgspec.ValidationError as exc:
                return Malformed(f"system/{msg.subtype}", str(exc))
    return msg


# -- control answers (decoded from Response.response by whoever asked) --------------------------


class ModelEntry(_In, frozen=True):
    value: JsonValue = None
    displayName: JsonValue = None
    description: JsonValue = None
    supportedEffortLevels: list[JsonValue] | None = None
    resolvedModel: JsonValue = None


class InitAnswer(_In, frozen=True):
    """The ``initialize`` answer's fields the session reports."""

    pid: JsonValue | UnsetType = UNSET
    models: list[ModelEntry] | None = None
    output_style: JsonValue = None


class McpStatusAnswer(_In, frozen=True):
    mcpServers: list[McpServer] | None = None


_init_decoder = msgspec.json.Decoder(InitAnswer)
_mcp_decoder = msgspec.json.Decoder(McpStatusAnswer)


def decode_init_answer(raw: msgspec.Raw) -> InitAnswer:
    """The ``initialize`` answer; an empty one when it has another shape (the CLI is ready
    either way: the answer is the readiness signal, its body only informs)."""
    try:
        return _init_decoder.decode(raw)
    except msgspec.ValidationError:
        return InitAnswer()


def decode_mcp_answer(raw: msgspec.Raw) -> McpStatusAnswer:
    """The ``mcp_status`` answer (``{mcpServers: [{name, status, error?, tools?}]}``); an empty
    one when it has another shape."""
    try:
        return _mcp_decoder.decode(raw)
    except msgspec.ValidationError:
        return McpStatusAnswer()
