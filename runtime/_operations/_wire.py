"""What travels over ``paddock serve``'s HTTP API besides the operations' bodies (declared in
:mod:`paddock._operations._table`): the error document, and where a server of a state directory listens.
Shared by :mod:`paddock.server` and :mod:`paddock.client`; msgspec and the standard library only
(a client needs neither Starlette nor uvicorn).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec

from paddock import contract
from paddock._operations._table import BY_NAME, Body
from paddock.contract import (
    CapabilityUnsupportedError,
    BudgetExceededError,
    CapacityError,
    ConfigError,
    DriverError,
    InstanceNotFoundError,
    OperationTimeout,
    PaddockError,
    PersistenceError,
    StateDirLockedError,
    ProcessError,
    RequestError,
    SessionClosedError,
    SessionNotFoundError,
    ValidationError,
)

__all__ = [
    "API_PREFIX",
    "ENDPOINT_FILE",
    "SOCKET_NAME",
    "TOKEN_FILE",
    "Endpoint",
    "ErrorBody",
    "ErrorDocument",
    "decode_body",
    "error_document",
    "error_from_document",
    "read_endpoint",
    "status_of",
]

API_PREFIX = "/v1"
SOCKET_NAME = "paddock.sock"
"""The server's unix socket, in the state directory (0600)."""
TOKEN_FILE = "server.token"
"""The bearer token of a TCP server, in the state directory (0600)."""
ENDPOINT_FILE = "server.json"
"""Where the owning server listens (``{"url": ..., "socket": ..., "pid": ...}``), 0600."""


def decode_body(operation: str, data: bytes) -> Body:
    """The body of ``POST /v1/<operation>``; raises :class:`ValidationError` naming the field."""
    return BY_NAME[operation].decode(data)


# errors ------------------------------------------------------------------------------------------

_STATUS: tuple[tuple[type[PaddockError], str, int], ...] = (
    (ValidationError, "validation", 400),
    (ConfigError, "config", 400),
    (InstanceNotFoundError, "instance_not_found", 404),
    (SessionNotFoundError, "session_not_found", 404),
    (SessionClosedError, "session_closed", 409),
    (RequestError, "request_failed", 409),
    (CapabilityUnsupportedError, "capability_unsupported", 422),
    (OperationTimeout, "timeout", 504),
    (ProcessError, "process_failed", 502),
    (DriverError, "driver_failed", 502),
    (StateDirLockedError, "state_dir_locked", 409),
    (PersistenceError, "persistence_failed", 503),
    (BudgetExceededError, "budget_exceeded", 429),
    (CapacityError, "capacity", 429),
)
"""Stable error codes and HTTP statuses; a PaddockError not listed (or a subclass added later)
maps to its nearest listed ancestor, else ``paddock_error`` / 500."""


def status_of(exc: PaddockError) -> tuple[str, int]:
    """(code, HTTP status) of an error."""
    for cls in type(exc).__mro__:
        for known, code, status in _STATUS:
            if cls is known:
                return code, status
    return "paddock_error", 500


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    """Stable: ``validation``, ``config``, ``instance_not_found``, ``session_not_found``,
    ``session_closed``, ``request_failed``, ``capability_unsupported``, ``timeout``,
    ``process_failed``, ``driver_failed``, ``state_dir_locked``, ``persistence_failed``, ``budget_exceeded``,
    ``capacity``, ``paddock_error``, and from the
    server itself ``unauthorized``, ``not_found``, ``method_not_allowed``."""
    type: str
    """The PaddockError class name (``SessionNotFoundError``)."""
    message: str
    """``str()`` of the error: a sentence a user can act on."""
    field: str | None = None
    """The request field at fault (``validation`` errors of a body or query)."""
    thread_id: str | None = None
    instance_id: str | None = None
    driver: str | None = None
    attrs: dict[str, Any] = {}
    """The error's own attributes (``operation``, ``seconds``, ``exit_code`` ...)."""


class ErrorDocument(msgspec.Struct, frozen=True, kw_only=True):
    error: ErrorBody


def error_document(exc: PaddockError) -> tuple[int, ErrorDocument]:
    """The HTTP status and JSON document of an error."""
    code, status = status_of(exc)
    attrs = {k: v for k, v in vars(exc).items() if k not in ("driver", "instance_id", "thread_id", "field") and _plain(v)}
    return status, ErrorDocument(
        error=ErrorBody(
            code=code, type=type(exc).__name__, message=str(exc), field=getattr(exc, "field", None),
            thread_id=exc.thread_id, instance_id=exc.instance_id, driver=exc.driver, attrs=attrs,
        )
    )


def _plain(value: Any) -> bool:
    """JSON data (scalars, and lists and dicts of them, as ``RequestError.data``)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


_BY_CODE = {code: cls for cls, code, _ in _STATUS}


def error_from_document(body: ErrorBody) -> PaddockError:
    """Rebuild the error a server raised: same class (or its nearest known one), attributes and
    ``str()``."""
    cls = getattr(contract, body.type, None)
    if not (isinstance(cls, type) and issubclass(cls, PaddockError)):
        cls = _BY_CODE.get(body.code, PaddockError)
    err = cls.__new__(cls)
    Exception.__init__(err, body.attrs.get("message", body.message))
    err.__dict__.update(body.attrs)
    err.__dict__.update(driver=body.driver, instance_id=body.instance_id, thread_id=body.thread_id)
    if body.field is not None:
        err.__dict__["field"] = body.field
    err.__dict__.setdefault("message", body.message)
    return err


# where a server listens --------------------------------------------------------------------------


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    """How to reach the server that owns a state directory: its unix ``socket`` or its loopback
    ``url`` (with the token in ``state_dir/server.token``)."""

    pid: int
    socket: str | None = None
    url: str | None = None


def read_endpoint(state_dir: str | os.PathLike[str]) -> Endpoint | None:
    """The endpoint recorded in ``state_dir``, or ``None`` (no server ever wrote one, or it is
    unreadable). It may be stale: ask its ``/health`` to know."""
    path = Path(state_dir) / ENDPOINT_FILE
    try:
        return msgspec.json.decode(path.read_bytes(), type=Endpoint)
    except (OSError, msgspec.MsgspecError, json.JSONDecodeError):
        return None


def read_token(state_dir: str | os.PathLike[str]) -> str | None:
    try:
        return (Path(state_dir) / TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None
