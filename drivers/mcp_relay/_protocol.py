"""What crosses between the host and an MCP relay: the spec file it is started with, and the
reports it sends back over the session's private socket (one JSON object per line).

The relay imports this module and ``paddock.contract`` only (msgspec and the standard library),
so a relay for a stdio server starts with the runtime's core dependencies.
"""

from __future__ import annotations

from typing import Union

import msgspec

from paddock.contract import JsonValue, McpServer

__all__ = [
    "CallEnded",
    "CallStarted",
    "Exited",
    "Failed",
    "Hello",
    "Initialized",
    "Listening",
    "RelaySpec",
    "Report",
    "ToolsListed",
    "decode_report",
    "encode_report",
]


class RelaySpec(msgspec.Struct, frozen=True, kw_only=True):
    """The 0600 spec file a relay reads (its path is the relay's only argument): the real server,
    with its secrets (``env``, ``headers``), and where to report. Secrets never reach argv."""

    server: McpServer
    socket: str
    """The session's report socket (0600)."""
    token: str
    """Names this relay in its reports (the host maps it to the server)."""
    serve: str | None = None
    """Set for an agent that takes only HTTP MCP: the relay serves streamable HTTP on 127.0.0.1
    (reported with :class:`Listening`) and asks every request for ``Authorization: Bearer
    <serve>``; unset, it speaks stdio on its own stdin and stdout."""


class _R(msgspec.Struct, frozen=True, kw_only=True, tag_field="t"):
    pass


class Hello(_R, frozen=True, tag="hello"):
    """First line of every connection: who reports."""

    token: str
    pid: int


class Listening(_R, frozen=True, tag="listening"):
    """A relay serving HTTP is ready at ``url``."""

    url: str


class Initialized(_R, frozen=True, tag="initialized"):
    """The server answered ``initialize``: its ``serverInfo``."""

    name: str | None = None
    version: str | None = None
    protocol: str | None = None


class ToolsListed(_R, frozen=True, tag="tools"):
    """The server answered ``tools/list`` (all pages so far): how many tools it offers."""

    count: int
    names: tuple[str, ...] = ()


class CallStarted(_R, frozen=True, tag="call"):
    """The agent called a tool (reported before the request reaches the server)."""

    call: int
    tool: str
    arguments: JsonValue = None


class CallEnded(_R, frozen=True, tag="called"):
    """The server answered a ``tools/call`` (reported before the answer reaches the agent):
    ``error`` is the JSON-RPC error message or the text of an ``isError`` result."""

    call: int
    tool: str
    seconds: float
    error: str | None = None
    result: str | None = None


class Failed(_R, frozen=True, tag="failed"):
    """The server could not be started, reached or initialized; ``reason`` says why."""

    reason: str


class Exited(_R, frozen=True, tag="exited"):
    """The server ended while the agent still talked to it."""

    reason: str


Report = Union[Hello, Listening, Initialized, ToolsListed, CallStarted, CallEnded, Failed, Exited]

_decoder = msgspec.json.Decoder(Report)
_encoder = msgspec.json.Encoder()


def encode_report(report: Report) -> bytes:
    """One report as a line (with its ``\\n``)."""
    return _encoder.encode(report) + b"\n"


def decode_report(line: bytes) -> Report:
    """Raises ``msgspec.DecodeError`` for a line that is not a report."""
    return _decoder.decode(line)
