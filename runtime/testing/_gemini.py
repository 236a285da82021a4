"""Gemini API dialect (``/v1beta/models/<m>:generateContent`` and ``:streamGenerateContent``)."""

from __future__ import annotations

import math

from ._reply import Call, ErrorOut, Ids, Reply, TextOut
from ._wire import Frames, dumps, function_tool, text_of, usage_totals

__all__ = ["Gemini"]

_USAGE = ("promptTokenCount", "candidatesTokenCount", "totalTokenCount")

_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def _fill(schema: object) -> object:
    """A value that satisfies a (simple) JSON schema; enums prefer ``user`` so that Gemini CLI's
    next-speaker check hands the turn back."""
    if not isinstance(schema, dict):
        return "mock"
    if schema.get("enum"):
        return "user" if "user" in schema["enum"] else schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: _fill(v) for k, v in (schema.get("properties") or {}).items()}
    return {"string": "mock", "integer": 10, "number": 10, "boolean": False, "array": []}.get(kind, "mock")


class Gemini:
    name = "gemini"

    @staticmethod
    def model(path: str) -> str:
        tail = path.rsplit("/models/", 1)[-1]
        return tail.split(":", 1)[0] or "gemini-mock"

    @classmethod
    def parse(cls, body: dict, path: str) -> Call:
        rounds, output, prompt = 0, None, None
        for content in reversed(body.get("contents") or []):
            if not isinstance(content, dict) or content.get("role") == "model":
                continue
            parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
            responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
            if responses:
                rounds += 1
                if output is None:
                    response = responses[-1].get("response") or {}
                    value = response.get("output", response.get("error", response)) if isinstance(response, dict) else response
                    output = text_of(value)
                continue
            texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
            prompt = texts[-1] if texts else None
            break
        tools = []
        for group in body.get("tools") or []:
            for decl in (group.get("functionDeclarations") or []) if isinstance(group, dict) else []:
                if isinstance(decl, dict):
                    spec = function_tool(decl.get("name"), decl.get("parametersJsonSchema") or decl.get("parameters"))
                    if spec:
                        tools.append(spec)
        return Call(prompt_text=prompt, tool_rounds=rounds, tool_output=output, tools=tuple(tools),
                    stream=":streamGenerateContent" in path, model=cls.model(path))

    @staticmethod
    def side_call(body: dict, path: str) -> tuple[str, str] | None:
        if ":streamGenerateContent" in path:
            return None
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema or config.get("responseMimeType") == "application/json":
            # The model router (and other JSON helpers) run before every prompt: always answer.
            value = _fill(schema) if schema else {}
            if isinstance(value, dict) and "complexity_score" in value:
                value["complexity_reasoning"], value["complexity_score"] = "mock", 10
            return "router" if isinstance(value, dict) and "complexity_score" in value else "json", dumps(value)
        return None

    @classmethod
    def _chunks(cls, reply: Reply, call: Call, input_tokens: int) -> list[tuple[float, dict]]:
        usage = usage_totals(call, reply.parts, input_tokens, _USAGE)
        out: list[tuple[float, dict]] = []
        for part in reply.parts:
            if isinstance(part, TextOut):
                for n, chunk in enumerate(part.chunks):
                    out.append((part.delay if n else 0.0, {"text": chunk}))
            else:
                out.append((0.0, {"functionCall": {"name": part.name, "args": part.arguments or {}}}))
        if not out:
            out.append((0.0, {"text": ""}))
        payloads = []
        for n, (delay, piece) in enumerate(out):
            candidate: dict = {"content": {"role": "model", "parts": [piece]}, "index": 0}
            if n == len(out) - 1:
                candidate["finishReason"] = "STOP"
            payloads.append((delay, {"candidates": [candidate], "usageMetadata": usage, "modelVersion": call.model}))
        return payloads

    @classmethod
    def stream(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int, body: dict | None = None) -> Frames:
        return [(delay, f"data: {dumps(p)}\n\n".encode()) for delay, p in cls._chunks(reply, call, input_tokens)]

    @classmethod
    def json_reply(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int) -> object:
        parts: list[dict] = []
        for part in reply.parts:
            if isinstance(part, TextOut):
                parts.append({"text": part.text})
            else:
                parts.append({"functionCall": {"name": part.name, "args": part.arguments or {}}})
        return {"candidates": [{"content": {"role": "model", "parts": parts or [{"text": ""}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": usage_totals(call, reply.parts, input_tokens, _USAGE), "modelVersion": call.model}

    @classmethod
    def json_stream(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int) -> object:
        """``streamGenerateContent`` without ``alt=sse`` answers a JSON array of chunks."""
        return [p for _, p in cls._chunks(reply, call, input_tokens)]

    @staticmethod
    def error_body(error: ErrorOut) -> object:
        body: dict[str, object] = {
            "code": error.status, "message": error.message,
            "status": _STATUS.get(error.status, "INTERNAL" if error.status >= 500 else "FAILED_PRECONDITION")}
        if error.resets_at is not None:  # google.rpc.RetryInfo: how Gemini says when to retry
            body["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                "retryDelay": f"{math.ceil(error.resets_in or 0)}s"}]
        return {"error": body}

    @staticmethod
    def error_headers(error: ErrorOut) -> dict[str, str]:
        return {} if error.resets_at is None else {"retry-after": str(math.ceil(error.resets_in or 0))}
