"""A streamed model reply (server-sent events) put back together as one body: a chat completion, or a Responses
object."""

from __future__ import annotations

from typing import Any

import msgspec


def assemble(stream: bytes) -> bytes:
    """The `chat.completion` JSON equivalent of a `chat.completion.chunk` event stream (model, text, tool calls,
    usage)."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: Any = None
    model: Any = None
    seen = False
    for line in stream.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data or data == "[DONE]":
            continue
        chunk = msgspec.json.decode(data)
        if not isinstance(chunk, dict):
            raise ValueError("a stream chunk is not a JSON object")
        seen = True
        if model is None and isinstance(chunk.get("model"), str):
            model = chunk["model"]
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(str(delta["content"]))
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(int(tc.get("index", len(calls))), {"id": None, "name": "", "arguments": ""})
                if tc.get("id"):
                    slot["id"] = tc["id"]
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    if not seen:
        raise ValueError("no data chunks in the event stream")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) if content else None}
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(calls.items())
        ]
    body = {"object": "chat.completion", "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage}
    return msgspec.json.encode(body)


_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def assemble_responses(stream: bytes) -> bytes:
    """The Responses object of a typed event stream: the `response` of its closing event (completed, incomplete
    or failed), which carries the whole output and the usage."""
    for line in reversed(stream.decode("utf-8", "replace").splitlines()):
        if not line.startswith("data:"):
            continue
        event = msgspec.json.decode(line[5:].strip() or "null")
        if isinstance(event, dict) and event.get("type") in _FINAL_EVENTS and isinstance(event.get("response"), dict):
            return msgspec.json.encode(event["response"])
    raise ValueError("no response.completed event in the stream")
