"""OpenAI Responses dialect (``POST /v1/responses``, SSE with ``event:`` lines; Codex)."""

from __future__ import annotations

from collections.abc import Iterator

from ._reply import Call, Ids, RateLimitsOut, Reply, TextOut, ToolSpec
from ._wire import Frames, body_call, dumps, function_tool, openai_error_body, openai_error_headers, text_of, usage_counts

__all__ = ["Responses"]

_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _tools(declared: list, namespace: str | None = None) -> Iterator[ToolSpec | None]:
    for t in declared:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "custom":
            yield function_tool(t.get("name"), None, kind="custom", namespace=namespace)
        elif t.get("type") == "namespace" and namespace is None and isinstance(t.get("tools"), list):
            # Codex 0.171 offers each MCP server's tools as one namespace (`mcp__<server>`); the
            # model calls one with `name` plus `namespace`.
            yield from _tools(t["tools"], str(t.get("name") or ""))
        else:
            yield function_tool(t.get("name"), t.get("parameters"), namespace=namespace)


class Responses:
    name = "responses"

    @staticmethod
    def parse(body: dict, path: str) -> Call:
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        rounds, output, prompt = 0, None, None
        for item in reversed(items):
            if not isinstance(item, dict):
                continue
            kind = item.get("type", "message")
            if kind in _OUTPUTS:
                rounds += 1
                if output is None:
                    output = text_of(item.get("output"))
            elif kind == "message" and item.get("role") == "user":
                prompt = text_of(item.get("content"), last=True)
                break
        return body_call(body, prompt, rounds, output, _tools(body.get("tools") or []))

    @staticmethod
    def side_call(body: dict, path: str) -> tuple[str, str] | None:
        return None

    @staticmethod
    def _items(reply: Reply, ids: Ids) -> list[tuple[object, dict, dict]]:
        """(part, item as added, item as done) per output part."""
        out: list[tuple[object, dict, dict]] = []
        for part in reply.parts:
            if isinstance(part, TextOut):
                mid = ids.next("msg_")
                added = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
                done = {**added, "status": "completed",
                        "content": [{"type": "output_text", "text": part.text, "annotations": []}]}
            elif part.kind == "custom":
                added = {"type": "custom_tool_call", "id": ids.next("ctc_"), "call_id": part.call_id,
                         "name": part.name, "input": "", "status": "in_progress"}
                done = {**added, "input": part.input or "", "status": "completed"}
            else:
                added = {"type": "function_call", "id": ids.next("fc_"), "call_id": part.call_id,
                         "name": part.name, "arguments": "", "status": "in_progress"}
                if part.namespace:
                    added["namespace"] = part.namespace
                done = {**added, "arguments": part.arguments_json, "status": "completed"}
            out.append((part, added, done))
        return out

    @staticmethod
    def _usage(call: Call, reply: Reply, input_tokens: int) -> dict:
        i, o = usage_counts(call, reply.parts, input_tokens)
        return {"input_tokens": i, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": o,
                "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": i + o}

    @classmethod
    def stream(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int, body: dict | None = None) -> Frames:
        def event(kind: str, payload: dict, delay: float = 0.0) -> tuple[float, bytes]:
            return delay, f"event: {kind}\ndata: {dumps({'type': kind, **payload})}\n\n".encode()

        rid = ids.next("resp_")
        frames = [event("response.created", {"response": {"id": rid, "object": "response",
                                                          "status": "in_progress", "model": call.model,
                                                          "output": []}})]
        done_items = []
        for index, (part, added, done) in enumerate(cls._items(reply, ids)):
            frames.append(event("response.output_item.added", {"output_index": index, "item": added}))
            if isinstance(part, TextOut):
                ref = {"item_id": added["id"], "output_index": index, "content_index": 0}
                frames.append(event("response.content_part.added",
                                    {**ref, "part": {"type": "output_text", "text": "", "annotations": []}}))
                for n, chunk in enumerate(part.chunks):
                    frames.append(event("response.output_text.delta", {**ref, "delta": chunk},
                                        part.delay if n else 0.0))
            frames.append(event("response.output_item.done", {"output_index": index, "item": done}))
            done_items.append(done)
        frames.append(event("response.completed", {"response": {
            "id": rid, "object": "response", "status": "completed", "model": call.model,
            "output": done_items, "usage": cls._usage(call, reply, input_tokens)}}))
        return frames

    @classmethod
    def json_reply(cls, reply: Reply, call: Call, ids: Ids, input_tokens: int) -> object:
        return {"id": ids.next("resp_"), "object": "response", "status": "completed", "model": call.model,
                "output": [done for _, _, done in cls._items(reply, ids)],
                "usage": cls._usage(call, reply, input_tokens)}

    error_body = staticmethod(openai_error_body)
    error_headers = staticmethod(openai_error_headers)

    @staticmethod
    def rate_limit_headers(rate: RateLimitsOut) -> dict[str, str]:
        """Codex's own window headers (it reads them into ``account/rateLimits/updated``)."""
        return {"x-codex-primary-used-percent": f"{rate.used_percent:g}",
                "x-codex-primary-window-minutes": str(rate.window_minutes),
                "x-codex-primary-reset-at": str(int(rate.resets_at))}
