"""Chat completions as server-sent events (`stream: true`), the way OpenAI streams them, ending in a usage chunk.

Why: official clients and recording proxies ask for `stream=True`; a plain JSON reply gives them zero chunks.
The chunks are a pure function of the non-streamed reply, so both forms say exactly the same thing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.responses import StreamingResponse

import searchtrace.adapters.sandbox._wire as wire

_PIECE = 24  # characters of content / arguments per chunk


def _pieces(text: str) -> Iterator[str]:
    for i in range(0, len(text), _PIECE):
        yield text[i : i + _PIECE]


def chunks(reply: dict[str, Any], *, include_usage: bool) -> Iterator[dict[str, Any]]:
    """The `chat.completion.chunk` objects for one reply: role, content / tool-call pieces, finish, then usage."""
    head = {"id": reply["id"], "object": "chat.completion.chunk", "created": reply["created"], "model": reply["model"],
            "service_tier": reply.get("service_tier"), "system_fingerprint": reply.get("system_fingerprint")}
    choice = reply["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out = {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        if include_usage:
            out["usage"] = None
        return out

    yield chunk({"role": "assistant", "content": "" if message.get("content") is not None else None,
                 "refusal": None})
    for piece in _pieces(message.get("content") or ""):
        yield chunk({"content": piece})
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call["function"]
        yield chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                     "function": {"name": fn["name"], "arguments": ""}}]})
        for piece in _pieces(fn["arguments"]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, choice["finish_reason"])
    yield {**head, "choices": [], "usage": reply["usage"]}  # always sent (OpenAI: with stream_options.include_usage)


async def _events(reply: dict[str, Any], include_usage: bool) -> AsyncIterator[bytes]:
    for c in chunks(reply, include_usage=include_usage):
        yield b"data: " + wire.encode(c) + b"\n\n"
    yield b"data: [DONE]\n\n"


def sse_response(reply: dict[str, Any], *, include_usage: bool) -> StreamingResponse:
    """The reply as a `text/event-stream` of chunks, terminated by `data: [DONE]`."""
    return StreamingResponse(_events(reply, include_usage), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})
