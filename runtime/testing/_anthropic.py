"""Anthropic Messages dialect (``POST /v1/messages``; Claude Code and claude-agent-acp)."""

from __future__ import annotations

import math

from ._reply import Call, ErrorOut, Ids, RateLimitsOut, Reply, TextOut, ToolOut, rfc3339
from ._wire import Frames, body_call, dumps, function_tool, text_of, usage_counts

__all__ = ["Anthropic"]

_ARG_SLICE = 12


def _tool_id(part: ToolOut) -> str:
    return "toolu_" + part.call_id.removeprefix("call_")


class Anthropic:
    name = "anthropic"

    @staticmethod
    def parse(body: dict, path: str) -> Call:
        rounds, output, prompt = 0, None, None
        for msg in reversed(body.get("messages") or []):
            if not isinstance(msg, dict) or msg.get("role") != "user":
                continue  # assistant turns and interleaved role:"system" entries
            content = msg.get("content")
            if isinstance(content, str):
                prompt = content
                break
            blocks = [b for b in content or [] if isinstance(b, dict)]
            results = [b for b in blocks if b.get("type") == "tool_result"]
            if results:
                rounds += 1
                if output is None:
                    output = text_of(results[-1].get("content"))
                continue
            # Claude merges a failed prompt and the next one into one message: only the LAST text
            # block is the newest prompt (a first <system-reminder> block is common too).
            texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
            prompt = texts[-1] if texts else None
            break
        tools = (function_tool(t.get("name"), t.get("input_schema")) for t in body.get("tools") or [] if isinstance(t, dict))
        return body_call(body, prompt, rounds, output, tools, default_model="claude-mock")

    @staticmethod
    def side_call(body: dict, path: str) -> tuple[str, str] | None:
        if body.get("tools"):
            return None
        # Claude Code 2.1.332 probes the model after set_model with max_tokens 1 and "Hi".
        if isinstance(body.get("max_tokens"), int) and body["max_tokens"] <= 1:
            return "probe", "Hi"
        system = body.get("system")
        system_text = system if isinstance(system, str) else (text_of(system) or "")
        if "title" in system_text.lower():
            return "title", '{"title":"Mock title","isNewTopic":false}'
        return None

    @staticmethod
    def _usage(call: Call, reply: Reply, input_tokens: int) -> tuple[int, int]:
        return usage_counts(call, reply.parts, input_tokens)

    @staticmethod
    def _stop_reason(reply: Reply) -> str:
        return "tool_use" if any(isinstance(p, ToolOut) for p in reply.parts) else "end_turn"

    @classmethod
    def stream(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int, body: dict | None = None) -> Frames:
        def event(kind: str, payload: dict, delay: float = 0.0) -> tuple[float, bytes]:
            return delay, f"event: {kind}\ndata: {dumps({'type': kind, **payload})}\n\n".encode()

        i, o = cls._usage(call, reply, input_tokens)
        frames = [
            event("message_start", {"message": {
                "id": ids.next("msg_mock"), "type": "message", "role": "assistant", "model": call.model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": i, "output_tokens": 1, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0}}}),
            event("ping", {}),
        ]
        for index, part in enumerate(reply.parts):
            if isinstance(part, TextOut):
                frames.append(event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}))
                for n, piece in enumerate(part.chunks):
                    frames.append(event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}},
                                        part.delay if n else 0.0))
            else:
                frames.append(event("content_block_start", {"index": index, "content_block": {
                    "type": "tool_use", "id": _tool_id(part), "name": part.name, "input": {}}}))
                args = part.arguments_json
                for start in range(0, len(args), _ARG_SLICE):
                    frames.append(event("content_block_delta", {"index": index, "delta": {
                        "type": "input_json_delta", "partial_json": args[start:start + _ARG_SLICE]}}))
            frames.append(event("content_block_stop", {"index": index}))
        frames.append(event("message_delta", {"delta": {"stop_reason": cls._stop_reason(reply), "stop_sequence": None},
                                              "usage": {"output_tokens": o}}))
        frames.append(event("message_stop", {}))
        return frames

    @classmethod
    def json_reply(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int) -> object:
        content: list[dict] = []
        for part in reply.parts:
            if isinstance(part, TextOut):
                content.append({"type": "text", "text": part.text})
            else:
                content.append({"type": "tool_use", "id": _tool_id(part), "name": part.name, "input": part.arguments or {}})
        i, o = cls._usage(call, reply, input_tokens)
        return {"id": ids.next("msg_mock"), "type": "message", "role": "assistant", "model": call.model,
                "content": content, "stop_reason": cls._stop_reason(reply), "stop_sequence": None,
                "usage": {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0}}

    @staticmethod
    def error_body(error: ErrorOut) -> object:
        kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                 429: "rate_limit_error", 529: "overloaded_error"}
        kind = kinds.get(error.status, "api_error" if error.status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": error.message}}

    @staticmethod
    def rate_limit_headers(rate: RateLimitsOut) -> dict[str, str]:
        """Anthropic's unified (subscription) window headers, the five-hour window."""
        reset = str(int(rate.resets_at))
        return {"anthropic-ratelimit-unified-status": rate.status, "anthropic-ratelimit-unified-reset": reset,
                "anthropic-ratelimit-unified-representative-claim": "five_hour",
                "anthropic-ratelimit-unified-5h-utilization": f"{rate.used_percent / 100:g}",
                "anthropic-ratelimit-unified-5h-reset": reset}

    @staticmethod
    def error_headers(error: ErrorOut) -> dict[str, str]:
        """A usage limit's reset: ``retry-after`` (seconds) and Anthropic's RFC 3339 resets."""
        if error.resets_at is None:
            return {}
        stamp = rfc3339(error.resets_at)
        return {"retry-after": str(math.ceil(error.resets_in or 0)), "anthropic-ratelimit-requests-reset": stamp,
                "anthropic-ratelimit-tokens-reset": stamp, "anthropic-ratelimit-requests-remaining": "0"}
