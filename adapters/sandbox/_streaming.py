"""Replies as server-sent events (`stream: true`), the way OpenAI streams them: chat completions as chunks
ending in a usage chunk, Responses as typed events (`event: response.created` ... `response.completed`).

Why: official clients and recording proxies ask for `stream=True`; a plain JSON reply gives them zero chunks.
The chunks and events are a pure function of the non-streamed reply, so both forms say exactly the same thing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
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


def response_events(response: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The typed events of one Responses reply: created, in_progress, each output item added / its deltas (a
    message's text and citations, a function call's arguments, a web search's progress) / done, completed (carrying
    the whole response), numbered by `sequence_number`."""
    seq = iter(range(1 << 62))
    pending = {**response, "status": "in_progress", "output": [], "usage": None, "completed_at": None}

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(seq), **fields}

    yield event("response.created", response=pending)
    yield event("response.in_progress", response=pending)
    for index, item in enumerate(response["output"]):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "content": []})
            for c, part in enumerate(item["content"]):
                yield event("response.content_part.added", **where, content_index=c,
                            part={**part, "text": "", **({"annotations": []} if "annotations" in part else {})})
                for piece in _pieces(part["text"]):
                    yield event("response.output_text.delta", **where, content_index=c, delta=piece, logprobs=[])
                for a, annotation in enumerate(part.get("annotations") or []):  # docs/how-to/hosted.md citations
                    yield event("response.output_text.annotation.added", **where, content_index=c,
                                annotation_index=a, annotation=annotation)
                yield event("response.output_text.done", **where, content_index=c, text=part["text"], logprobs=[])
                yield event("response.content_part.done", **where, content_index=c, part=part)
        elif item["type"] == "function_call":
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "arguments": ""})
            for piece in _pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", **where, delta=piece)
            yield event("response.function_call_arguments.done", **where, arguments=item["arguments"])
        elif item["type"] == "web_search_call":  # docs/how-to/hosted.md: the hosted search's progress
            yield event("response.output_item.added", output_index=index, item={**item, "status": "in_progress"})
            for phase in ("in_progress", "searching", "completed"):
                yield event(f"response.web_search_call.{phase}", **where)
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)


async def _typed(response: dict[str, Any]) -> AsyncIterator[bytes]:
    for e in response_events(response):
        yield b"event: " + e["type"].encode() + b"\ndata: " + wire.encode(e) + b"\n\n"


def typed_sse_response(response: dict[str, Any]) -> StreamingResponse:
    """A Responses reply as a `text/event-stream` of typed events (no `[DONE]`: `response.completed` ends it)."""
    return StreamingResponse(_typed(response), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


async def _each(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    for c in chunks:
        yield c


def event_stream(chunks: Iterable[bytes]) -> StreamingResponse:
    """Server-sent events already encoded (the Anthropic and Gemini routes': their wire modules encode them)."""
    return StreamingResponse(_each(chunks), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
