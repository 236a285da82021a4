"""The OpenAPI 3.1 document of the HTTP API, built from the same Structs the server decodes and
encodes (so the document cannot drift from the wire)."""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from paddock import __version__
from paddock._operations._table import OPERATIONS, Operation
from paddock._operations._wire import API_PREFIX, ErrorDocument
from paddock.contract import Event

__all__ = ["openapi_document"]

_ERRORS = {
    "400": "validation or config: a malformed body or argument (error.field names it)",
    "401": "unauthorized: missing or wrong bearer token (TCP only)",
    "404": "instance_not_found, session_not_found, not_found",
    "409": "session_closed, request_failed",
    "422": "capability_unsupported",
    "502": "process_failed, driver_failed",
    "503": "persistence_failed",
    "504": "timeout",
}


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document (cached; do not mutate)."""
    types: list[Any] = [ErrorDocument, Event, *(op.body for op in OPERATIONS), *(op.result for op in OPERATIONS)]
    schemas, components = msgspec.json.schema_components(types, ref_template="#/components/schemas/{name}")
    by_type = dict(zip(map(_key, types), schemas))
    error_ref = by_type[_key(ErrorDocument)]

    def errors() -> dict[str, Any]:
        return {code: {"description": text, "content": {"application/json": {"schema": error_ref}}}
                for code, text in _ERRORS.items()}

    paths: dict[str, Any] = {
        "/health": {"get": {"operationId": "health", "summary": "liveness, version, pid, transport",
                             "responses": {"200": {"description": "the server is up"}, "401": errors()["401"]}}},
        "/openapi.json": {"get": {"operationId": "openapi", "summary": "this document",
                                   "responses": {"200": {"description": "OpenAPI 3.1"}}}},
        "/": {"get": {"operationId": "dashboard", "summary": "the dashboard page (no data; it asks for the token)",
                      "security": [], "responses": {"200": {"description": "text/html"}}}},
    }
    for op in OPERATIONS:
        spec: dict[str, Any] = {
            "operationId": op.name, "summary": f"Runtime.{op.name}(): {op.summary}",
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": by_type[_key(op.result)]}}},
                          **errors()},
        }
        body = by_type[_key(op.body)]
        if op.reads:
            spec["parameters"] = _query_parameters(op, components[body["$ref"].rsplit("/", 1)[1]])
        else:
            spec["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
        paths[f"{API_PREFIX}/{op.route}"] = {op.method.lower(): spec}
    paths[f"{API_PREFIX}/events"] = {"get": {
        "operationId": "subscribe",
        "summary": "Runtime.subscribe() as Server-Sent Events: `id:` is the event's seq, `data:` the event as JSON. "
                   "Reconnect with Last-Event-ID to resume from the durable log with no gap and no duplicate.",
        "parameters": [
            {"name": "thread_id", "in": "query", "schema": {"type": "string"}},
            {"name": "instance_id", "in": "query", "schema": {"type": "string"}},
            {"name": "type", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}, "explode": True},
            {"name": "from_seq", "in": "query", "schema": {"type": "integer"}},
            {"name": "assistant_delivery", "in": "query", "schema": {"enum": ["streaming", "buffered"]}},
            {"name": "max_buffered", "in": "query", "schema": {"type": "integer"}},
            {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}},
        ],
        "responses": {"200": {"description": "an event stream; each `data:` line is one Event",
                              "content": {"text/event-stream": {"schema": by_type[_key(Event)]}}}, **errors()},
    }}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Paddock", "version": __version__,
                 "description": "The paddock Runtime API over HTTP, one route per Runtime method."},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {"schemas": components,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                                      "description": "TCP only: the token in STATE_DIR/server.token"}}},
    }


def _query_parameters(op: Operation[Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A read's body as query parameters: one per field, with the field's schema."""
    required = set(schema.get("required", ()))
    return [{"name": name, "in": "query", "required": name in required, "schema": field}
            for name, field in schema.get("properties", {}).items()]


def _key(t: Any) -> str:
    return repr(t)
