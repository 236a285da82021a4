"""OpenAI Chat Completions dialect (``POST /v1/chat/completions``; OpenCode, Qwen Code, Copilot)."""

from __future__ import annotations

import time

from ._reply import Call, Ids, Reply, TextOut, ToolOut
from ._wire import Frames, body_call, dumps, function_tool, openai_error_body, openai_error_headers, text_of, usage_totals

__all__ = ["Chat"]

_ARG_SLICE = 12
_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")


class Chat:
    name = "chat"

    @staticmethod
    def parse(body: dict, path: str) -> Call:
        rounds, output, prompt = 0, None, None
        for msg in reversed(body.get("messages") or []):
            if not isinstance(msg, dict):
                continue
            role = msg.get("role")
            if role == "tool":
                if output is None:
                    output = text_of(msg.get("content"))
            elif role == "assistant":
                if msg.get("tool_calls"):
                    rounds += 1
            elif role == "user":
                prompt = text_of(msg.get("content"))
                break
        functions = [tool.get("function") for tool in body.get("tools") or [] if isinstance(tool, dict)]
        tools = (function_tool(fn.get("name"), fn.get("parameters")) for fn in functions if isinstance(fn, dict))
        return body_call(body, prompt, rounds, output, tools)

    @staticmethod
    def side_call(body: dict, path: str) -> tuple[str, str] | None:
        for msg in body.get("messages") or []:
            if isinstance(msg, dict) and msg.get("role") == "system":
                # OpenCode names untitled sessions with a tool-less "title generator" call.
                if "title generator" in (text_of(msg.get("content")) or ""):
                    return "title", "Mock title"
        return None

    @classmethod
    def stream(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int, body: dict | None = None) -> Frames:
        cid, created = ids.next("chatcmpl-"), int(time.time())

        def chunk(delta: dict | None, finish: str | None = None, delay: float = 0.0, **extra) -> tuple[float, bytes]:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
            payload = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": call.model,
                       "choices": choices, **extra}
            return delay, f"data: {dumps(payload)}\n\n".encode()

        frames = [chunk({"role": "assistant", "content": ""})]
        tool_index = 0
        for part in reply.parts:
            if isinstance(part, TextOut):
                for n, piece in enumerate(part.chunks):
                    frames.append(chunk({"content": piece}, delay=part.delay if n else 0.0))
            else:
                frames.append(chunk({"tool_calls": [{"index": tool_index, "id": part.call_id, "type": "function",
                                                     "function": {"name": part.name, "arguments": ""}}]}))
                args = part.arguments_json
                for start in range(0, len(args), _ARG_SLICE):
                    frames.append(chunk({"tool_calls": [{"index": tool_index,
                                                         "function": {"arguments": args[start:start + _ARG_SLICE]}}]}))
                tool_index += 1
        frames.append(chunk({}, "tool_calls" if tool_index else "stop"))
        options = (body or {}).get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage"):
            frames.append(chunk(None, usage=usage_totals(call, reply.parts, input_tokens, _USAGE)))
        frames.append((0.0, b"data: [DONE]\n\n"))
        return frames

    @classmethod
    def json_reply(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int) -> object:
        text = "".join(p.text for p in reply.parts if isinstance(p, TextOut))
        calls = [{"id": p.call_id, "type": "function", "function": {"name": p.name, "arguments": p.arguments_json}}
                 for p in reply.parts if isinstance(p, ToolOut)]
        message: dict = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        return {"id": ids.next("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
                "model": call.model,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": usage_totals(call, reply.parts, input_tokens, _USAGE)}

    error_body = staticmethod(openai_error_body)
    error_headers = staticmethod(openai_error_headers)
