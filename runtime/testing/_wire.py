"""Small helpers shared by the four dialect modules."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from ._reply import Call, ErrorOut, TextOut, ToolOut, ToolSpec

__all__ = [
    "Frames", "body_call", "dumps", "image_parts", "openai_error_body", "openai_error_headers", "schema_props", "text_of",
    "usage_counts", "usage_totals",
]

Frames = list[tuple[float, bytes]]
"""A stream: ``(delay_before_seconds, raw_bytes)`` pairs written in order, flushed one by one."""


def dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def text_of(value: object, *, last: bool = False) -> str | None:
    """Text of a message ``content``/tool ``output``: a string, or a list of parts with ``text``
    (joined with newlines, or only the last one with ``last``), else compact JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if texts:
            return texts[-1] if last else "\n".join(texts)
        return None if last else dumps(value)
    return dumps(value)


def schema_props(schema: object) -> tuple[frozenset[str], frozenset[str]]:
    if not isinstance(schema, dict):
        return frozenset(), frozenset()
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    return frozenset(props if isinstance(props, dict) else ()), frozenset(r for r in required if isinstance(r, str))


def function_tool(name: object, schema: object, kind: str = "function", namespace: str | None = None) -> ToolSpec | None:
    if not isinstance(name, str):
        return None
    props, required = schema_props(schema)
    return ToolSpec(name=name, kind=kind, properties=props, required=required, namespace=namespace)


def body_call(body: dict, prompt: str | None, rounds: int, output: str | None, tools: Iterable[ToolSpec | None],
              *, default_model: str = "mock-model") -> Call:
    """The :class:`Call` of a request whose JSON body names ``stream`` and ``model`` (the OpenAI
    and Anthropic dialects); ``None`` tools (unusable declarations) are left out."""
    return Call(prompt_text=prompt, tool_rounds=rounds, tool_output=output, tools=tuple(t for t in tools if t),
                stream=bool(body.get("stream")), model=str(body.get("model") or default_model))


def usage_counts(call: Call, parts, input_tokens: int) -> tuple[int, int]:
    out = 1
    for part in parts:
        if isinstance(part, TextOut):
            out += len(part.text) // 4
        elif isinstance(part, ToolOut):
            out += len(part.arguments_json if part.input is None else part.input) // 4
    return input_tokens, out


def usage_totals(call: Call, parts, input_tokens: int, names: tuple[str, str, str]) -> dict:
    """The usage object of a dialect that reports input, output and total tokens flat, under its
    own three ``names`` (in that order)."""
    i, o = usage_counts(call, parts, input_tokens)
    return {names[0]: i, names[1]: o, names[2]: i + o}


def _data_url_mime(url: object) -> str:
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        return url[5:].split(";", 1)[0].split(",", 1)[0] or "image/?"
    return "url"


def image_parts(body: object) -> tuple[str, ...]:
    """The MIME type of every image part of a request body, in order, whatever the dialect:
    Anthropic ``{"type": "image", "source": {"media_type"}}``, Responses ``input_image`` and Chat
    ``image_url`` (a ``data:`` URL's type, else ``"url"``), Gemini ``inlineData`` of an image type."""
    out: list[str] = []
    stack = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(reversed(value))
            continue
        if not isinstance(value, dict):
            continue
        kind = value.get("type")
        inline = value.get("inlineData")
        if kind == "image" and isinstance(value.get("source"), dict):
            out.append(str(value["source"].get("media_type") or "image/?"))
        elif kind == "input_image":
            out.append(_data_url_mime(value.get("image_url")))
        elif kind == "image_url":
            out.append(_data_url_mime(value.get("image_url")))
        elif isinstance(inline, dict) and str(inline.get("mimeType", "")).startswith("image/"):
            out.append(str(inline["mimeType"]))
        else:
            stack.extend(reversed(list(value.values())))
    return tuple(out)


def openai_error_body(error: ErrorOut) -> object:
    """The error body of both OpenAI dialects (Responses, Chat Completions); a usage limit is
    ``rate_limit_exceeded`` with its reset (Codex reads ``resets_in_seconds`` where given)."""
    if error.resets_at is not None:
        return {"error": {"message": error.message, "type": "usage_limit_reached", "code": "rate_limit_exceeded",
                          "resets_at": int(error.resets_at), "resets_in_seconds": math.ceil(error.resets_in or 0)}}
    kind = "server_error" if error.status >= 500 else "invalid_request_error"
    return {"error": {"message": error.message, "type": kind, "code": None}}


def openai_error_headers(error: ErrorOut) -> dict[str, str]:
    """A usage limit's reset: ``retry-after`` and OpenAI's ``x-ratelimit-reset-*`` durations."""
    if error.resets_at is None:
        return {}
    seconds = f"{math.ceil(error.resets_in or 0)}s"
    return {"retry-after": seconds[:-1], "x-ratelimit-reset-requests": seconds, "x-ratelimit-reset-tokens": seconds,
            "x-ratelimit-remaining-requests": "0"}
