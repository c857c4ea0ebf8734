"""Anthropic's Messages API (`POST {base}/v1/messages`) in Chat Completions terms, both ways: the only place that
knows its shapes (requests, replies, streamed events, errors), for the engine, the sandbox and the proxy.

Chat messages become Messages turns (system messages the `system` text; an assistant's calls `tool_use` blocks; tool
results `tool_result` blocks of the next user turn; consecutive turns of one role merged, as the API requires), and
a Messages request becomes chat messages again (what `shown` reads). A reply's text is its `text` blocks joined,
its tool calls its `tool_use` blocks; usage follows the one rule (`store.usage_rule`: cache reads and writes are
reported beside `input_tokens` and summed in). A streamed reply (`message_start` … `message_stop`) is put back
together as the message it streams: `input_json_delta` pieces are joined per block index, `message_delta` usage
is cumulative. `stop_reason` is kept as Anthropic says it (`pause_turn`: the caller sends the turn again).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec

import searchtrace.adapters._chat_shapes as shapes
from searchtrace.adapters._keys import Secret
from searchtrace.adapters._types import EndpointSpec, Limits, Tokens
from searchtrace.store import ToolCall, Usage, usage_rule

ENDPOINT = EndpointSpec(name="anthropic", key_env="ANTHROPIC_API_KEY", base_url_env="ANTHROPIC_BASE_URL",
                        default_base_url="https://api.anthropic.com",
                        limits=Limits(rps=1.0, concurrency=8, timeout_s=120.0), sandbox_path="anthropic")
VERSION = "2023-06-01"  # the `anthropic-version` header every request carries
PATH = "v1/messages"
COUNT_TOKENS_PATH = "v1/messages/count_tokens"
MAX_TOKENS = 4096  # `max_tokens` is required by the API: the default when a config's params do not set it
PAUSE_TURN = "pause_turn"
# an HTTP status as Anthropic's error `type` (529: overloaded)
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               529: "overloaded_error"}


def headers(key: Secret | None) -> dict[str, str]:
    """JSON both ways, the API version, and the key as `x-api-key` when there is one."""
    out = {"Accept": "application/json", "Content-Type": "application/json", "anthropic-version": VERSION}
    if key is not None:
        out["x-api-key"] = key.reveal()
    return out


# ---------------------------------------------------------------- requests: chat -> Messages

def tools_to_anthropic(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Chat function tools as Messages tools (`name`, `description`, `input_schema`)."""
    out = []
    for t in tools or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict):
            out.append(shapes.declaration(fn, "input_schema"))
        else:
            out.append(t)
    return out


def to_messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Chat messages as the `system` text and Messages turns (roles alternate: consecutive ones are merged)."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        shapes.merge_turn(turns, role, "content", blocks)

    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(shapes.content_text(m.get("content")))
        elif role == "tool":
            add("user", [{"type": "tool_result", "tool_use_id": str(m.get("tool_call_id", "")),
                          "content": shapes.content_text(m.get("content"))}])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if text := shapes.content_text(m.get("content")):
                blocks.append({"type": "text", "text": text})
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                blocks.append({"type": "tool_use", "id": str(tc.get("id", "")), "name": str(fn.get("name", "")),
                               "input": shapes.arguments_object(fn.get("arguments", ""))})
            add("assistant", blocks or [{"type": "text", "text": ""}])
        else:
            add("user", [{"type": "text", "text": shapes.content_text(m.get("content"))}])
    return "\n\n".join(s for s in system if s), turns


def request_body(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 response_format: dict[str, Any] | None, params: dict[str, Any]) -> dict[str, Any]:
    """The Messages request of one turn; `params` are merged over it (`max_tokens` defaults to MAX_TOKENS). The API
    has no JSON mode: a `response_format` is left to the prompt."""
    system, turns = to_messages(messages)
    body: dict[str, Any] = {"model": model, "max_tokens": MAX_TOKENS, "messages": turns, **params}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools_to_anthropic(tools)
    return body


# ---------------------------------------------------------------- requests: Messages -> chat

def tools_to_chat(tools: list[Any]) -> list[dict[str, Any]]:
    """Messages tools as chat function tools; ValueError on a server tool (`web_search_…`, which has a `type`)."""
    out = []
    for t in tools:
        if not isinstance(t, dict) or t.get("type") not in (None, "custom") or not isinstance(t.get("name"), str):
            kind = t.get("type") if isinstance(t, dict) else type(t).__name__
            raise ValueError(f"tools: tool type {kind!r} is not served here: only client tools (name, input_schema)")
        out.append(shapes.chat_tool(t["name"], t.get("input_schema"), t.get("description")))
    return out


def chat_messages(system: Any, messages: Any) -> list[dict[str, Any]]:
    """A request's `system` and `messages` as chat messages (tool results first in a user turn, as chat needs them
    right after the calls); ValueError in Anthropic's words for a malformed request. Thinking blocks are skipped."""
    out: list[dict[str, Any]] = []
    if isinstance(system, str | list) and (text := shapes.content_text(system)):
        out.append({"role": "system", "content": text})
    if not isinstance(messages, list):
        raise ValueError("messages: Field required")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise ValueError(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise ValueError(f"messages.{i}.content: Input should be a valid list")
        if m["role"] == "assistant":
            text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            calls = [{"id": str(b.get("id", "")), "type": "function",
                      "function": {"name": str(b.get("name", "")),
                                   "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
                     for b in blocks if b.get("type") == "tool_use"]
            msg: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
            continue
        texts: list[str] = []
        for b in blocks:
            if b.get("type") == "tool_result":
                out.append({"role": "tool", "tool_call_id": str(b.get("tool_use_id", "")),
                            "content": shapes.content_text(b.get("content"))})
            elif b.get("type") == "text":
                texts.append(str(b.get("text", "")))
        if texts:
            out.append({"role": "user", "content": "".join(texts)})
    return out


# ---------------------------------------------------------------- replies

class _Block(msgspec.Struct):
    type: str = ""
    text: str = ""
    id: str = ""
    name: str = ""
    input: Any = None


class _OutDetails(msgspec.Struct):
    thinking_tokens: Tokens | None = None


class _Usage(msgspec.Struct):
    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    cache_read_input_tokens: Tokens | None = None
    cache_creation_input_tokens: Tokens | None = None
    output_tokens_details: _OutDetails | None = None


class _Message(msgspec.Struct):
    content: list[_Block]
    type: str = "message"
    model: str | None = None
    stop_reason: str | None = None
    usage: _Usage | None = None


def usage_of(u: _Usage | None) -> Usage:
    """Anthropic's counts under the one usage rule: cache reads and writes summed into the input tokens."""
    if u is None:
        return Usage()
    thinking = u.output_tokens_details.thinking_tokens if u.output_tokens_details else None
    return usage_rule(prompt=u.input_tokens or 0, output=u.output_tokens or 0, cached=u.cache_read_input_tokens or 0,
                      cache_write=u.cache_creation_input_tokens or 0, reasoning=thinking or 0, cache_apart=True)


def parse_message(body: bytes) -> tuple[str | None, list[ToolCall], Usage, str | None]:
    """Text, tool calls (`tool_use` blocks), usage and `stop_reason` of a Messages reply."""
    parsed = msgspec.json.decode(body, type=_Message)
    if parsed.type == "error":
        raise ValueError("the reply is an error")
    texts = [b.text for b in parsed.content if b.type == "text"]
    calls = [ToolCall(call_id=b.id or f"toolu_{i}", name=b.name,
                      arguments=json.dumps(b.input if b.input is not None else {}, ensure_ascii=False))
             for i, b in enumerate(b for b in parsed.content if b.type == "tool_use")]
    return ("".join(texts) if texts else None), calls, usage_of(parsed.usage), parsed.stop_reason


def continuation(request: dict[str, Any], reply: bytes) -> dict[str, Any]:
    """The request that continues a paused turn (`pause_turn`): the same request with the reply's content sent back,
    as received, as the last (assistant) message."""
    content = msgspec.json.decode(reply).get("content")
    return {**request, "messages": [*request.get("messages", []), {"role": "assistant", "content": content}]}


def model_of(body: bytes) -> str | None:
    """The model a reply names."""
    return shapes.named_field(body, "model")


def message(*, id_: str, model: str, text: str | None, calls: list[ToolCall], stop_reason: str,
            usage: dict[str, Any]) -> dict[str, Any]:
    """A Messages reply (the sandbox's): its text block, its `tool_use` blocks; `usage` in Anthropic's fields."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text, "citations": None})
    for c in calls:
        content.append({"type": "tool_use", "id": c.call_id, "name": c.name, "input": shapes.arguments_object(c.arguments)})
    return {"id": id_, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}


def error_body(status: int, message_: str, request_id: str = "req_sandbox") -> dict[str, Any]:
    """Anthropic's error object for an HTTP status."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message_},
            "request_id": request_id}


def error_message(body: Any, text: str) -> str:
    """`{"type": "error", "error": {"type", "message"}}` as `type: message`, else the text."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        msg = str(err.get("message") or text)
        return f"{err['type']}: {msg}" if err.get("type") else msg
    return text


# ---------------------------------------------------------------- streamed replies

_PIECE = 24  # characters of text / JSON per delta the sandbox streams


def _pieces(text: str) -> Iterator[str]:
    for i in range(0, len(text), _PIECE):
        yield text[i : i + _PIECE]


def stream_events(reply: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs Anthropic streams for one reply: message_start (input usage), ping, each block's
    start / deltas / stop, message_delta (stop reason, cumulative usage), message_stop."""
    usage = reply["usage"]
    start_usage = {**usage, "output_tokens": 1}
    yield "message_start", {"type": "message_start",
                            "message": {**reply, "content": [], "stop_reason": None, "usage": start_usage}}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            for citation in block.get("citations") or []:  # docs/how-to/hosted.md: a cited passage's source
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "citations_delta", "citation": citation}}
            for piece in _pieces(block["text"]):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        elif "input" not in block:  # a server tool's result arrives whole in its content_block_start
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {**block, "input": {}}}
            for piece in _pieces(json.dumps(block["input"], ensure_ascii=False, separators=(",", ":"))):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": None}, "usage": usage}
    yield "message_stop", {"type": "message_stop"}


def sse_bytes(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + msgspec.json.encode(data) + b"\n\n"


def _data_lines(stream: bytes) -> Iterator[dict[str, Any]]:
    for line in stream.decode("utf-8", "replace").splitlines():
        if line.startswith("data:") and (data := line[5:].strip()):
            doc = msgspec.json.decode(data)
            if not isinstance(doc, dict):
                raise ValueError("a stream event is not a JSON object")
            yield doc


def assemble(stream: bytes) -> bytes:
    """The Messages reply a stream carries, as one JSON body; ValueError for an `error` event or no message."""
    msg: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for ev in _data_lines(stream):
        kind = ev.get("type")
        if kind == "error":
            err = ev.get("error") or {}
            raise ValueError(f"stream error: {err.get('type', 'error')}: {err.get('message', '')}")
        if kind == "message_start" and isinstance(ev.get("message"), dict):
            msg = dict(ev["message"])
            msg["usage"] = dict(msg.get("usage") or {})
        elif kind == "content_block_start":
            blocks[int(ev.get("index", len(blocks)))] = dict(ev.get("content_block") or {})
        elif kind == "content_block_delta":
            i = int(ev.get("index", 0))
            block = blocks.setdefault(i, {"type": "text", "text": ""})
            delta = ev.get("delta") or {}
            dt = delta.get("type")
            if dt == "text_delta":
                block["text"] = str(block.get("text", "")) + str(delta.get("text", ""))
            elif dt == "input_json_delta":
                partial.setdefault(i, []).append(str(delta.get("partial_json", "")))
            elif dt == "thinking_delta":
                block["thinking"] = str(block.get("thinking", "")) + str(delta.get("thinking", ""))
            elif dt == "signature_delta":
                block["signature"] = delta.get("signature")
            elif dt == "citations_delta":
                block["citations"] = [*(block.get("citations") or []), delta.get("citation")]
        elif kind == "content_block_stop":
            i = int(ev.get("index", 0))
            if i in partial:
                joined = "".join(partial.pop(i))
                blocks.setdefault(i, {})["input"] = json.loads(joined) if joined.strip() else {}
        elif kind == "message_delta" and msg is not None:
            msg.update({k: v for k, v in (ev.get("delta") or {}).items()})
            msg["usage"].update({k: v for k, v in (ev.get("usage") or {}).items() if v is not None})
    if msg is None:
        raise ValueError("no message_start event in the stream")
    for i, pieces in partial.items():  # a block the stream never stopped
        blocks.setdefault(i, {})["input"] = json.loads("".join(pieces) or "{}")
    msg["content"] = [b for _, b in sorted(blocks.items())]
    return msgspec.json.encode(msg)
