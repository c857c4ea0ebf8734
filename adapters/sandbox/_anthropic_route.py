"""Anthropic route: POST R/anthropic/v1/messages (and v1/messages/count_tokens) in Anthropic's wire format, over the
same models as the chat route (`_model.answer`), keyless (a key starting with `bad` is refused as Anthropic would).

The request's `system` and `messages` become chat messages (adapters._anthropic_messages), answered exactly as the
chat route answers them; the reply is a `message` with `text` and `tool_use` blocks and usage with cache fields
(the chat route's cached tokens as `cache_read_input_tokens`, beside `input_tokens`; reasoning as
`output_tokens_details.thinking_tokens`), or with `stream: true` its
server-sent events. Faults are drawn as the chat route's (route `chat`) and answered in Anthropic's error shape.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

import searchtrace.adapters._anthropic_messages as wire
import searchtrace.adapters.sandbox._hosted as hosted
import searchtrace.adapters.sandbox._model as model_
from searchtrace.adapters._persona import request_key, retry_headers
from searchtrace.adapters.sandbox._reading import message_text
from searchtrace.adapters.sandbox._responses import json_response
from searchtrace.adapters.sandbox._state import json_body, sandbox_of
from searchtrace.adapters.sandbox._streaming import event_stream
from searchtrace.adapters.sandbox._wire import digest
from searchtrace.store import ToolCall

_FAULTS = {"429": (429, "Number of request tokens has exceeded your per-minute rate limit."),
           "401": (401, "invalid x-api-key"), "500": (500, "Internal server error"), "503": (529, "Overloaded"),
           "quota": (400, "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing "
                          "to upgrade or purchase credits.")}


def error(status: int, message: str) -> Response:
    return json_response(wire.error_body(status, message), status, retry_headers(status))


def _fault(kind: str) -> Response:
    status, message = _FAULTS[kind]
    return error(status, message)


async def _opening(request: Request) -> tuple[dict[str, Any], str, list[dict[str, Any]], list[dict[str, Any]] | None] | Response:
    """Count (route `chat`), check the key, parse the body: the body, model, chat messages and chat tools."""
    sandbox_of(request).count("chat", request)
    sent = request.headers.get("x-api-key") or request.headers.get("authorization", "").partition(" ")[2]
    if sent.strip().startswith("bad"):
        return error(401, "invalid x-api-key")
    body = await json_body(request)
    if body is None:
        return error(400, "There was an error parsing the body of your request: not a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return error(400, "model: Field required")
    try:
        messages = wire.chat_messages(body.get("system"), body.get("messages"))
        raw = body["tools"] if isinstance(body.get("tools"), list) else []
        tools = wire.tools_to_chat([t for t in raw if not _server_tool(t)]) or None
    except ValueError as exc:
        return error(400, str(exc))
    if not any(m["role"] != "system" for m in messages):
        return error(400, "messages: at least one message is required")
    if (broken := model_.message_order_error(messages)) is not None:
        return error(400, "messages: " + broken.replace("'tool_calls'", "`tool_use` blocks")
                     .replace("tool messages", "`tool_result` blocks"))
    if not model_.serves(model):
        return error(404, f"model: {model}")
    return body, model, messages, tools


def _server_tool(tool: Any) -> str | None:
    """`web_search` or `web_fetch` for a server tool (`web_search_20250305`, `web_fetch_20250910`, later versions)."""
    kind = tool.get("type") if isinstance(tool, dict) else None
    if isinstance(kind, str) and kind.startswith(("web_search_", "web_fetch_")):
        return kind.rsplit("_", 1)[0]
    return None


def _hosted_reply(request: Request, key: str, model: str, body: dict[str, Any], chat: list[dict[str, Any]]) -> Response:
    """A Messages reply grounded by the server tools: search (and fetch) blocks, then the cited text."""
    servers = {_server_tool(t) for t in body["tools"]}
    question = hosted.question_of(chat)
    hits = hosted.search(sandbox_of(request).world, question)
    said = hosted.answer(question, hits)
    u = model_.turn_usage(key, chat, said.text)
    usage = {"input_tokens": u["prompt_tokens"], "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "output_tokens": u["completion_tokens"],
             "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": int("web_fetch" in servers)}}
    reply = wire.message(id_=f"msg_{digest(key, 'msg', n=24)}", model=model, text=None, calls=[],
                         stop_reason="end_turn", usage=usage)
    reply["content"] = hosted.anthropic_content(key, question, hits, said, fetch="web_fetch" in servers)
    if body.get("stream") is True:
        return event_stream(wire.sse_bytes(e, d) for e, d in wire.stream_events(reply))
    return json_response(reply)


async def count_tokens(request: Request) -> Response:
    opened = await _opening(request)
    if isinstance(opened, Response):
        return opened
    _, _, messages, tools = opened
    return json_response({"input_tokens": model_.prompt_tokens(messages, tools)})


async def messages(request: Request) -> Response:
    opened = await _opening(request)
    if isinstance(opened, Response):
        return opened
    body, model, chat, tools = opened
    if not isinstance(body.get("max_tokens"), int):
        return error(400, "max_tokens: Field required")
    sb = sandbox_of(request)
    key = request_key("anthropic", model_.canon.encode({k: v for k, v in body.items() if k != "stream"}))
    kind = sb.fault("chat", key, message_text(chat[-1].get("content")))
    choice = body.get("tool_choice")
    choice_ = "none" if isinstance(choice, dict) and choice.get("type") == "none" else "auto"

    async def produce() -> Response:
        if any(_server_tool(t) for t in body.get("tools") or []):  # docs/how-to/hosted.md
            return _hosted_reply(request, key, model, body, chat)
        said = model_.answer(key=key, model=model, messages=chat, tools=tools, choice=choice_, json_mode=False,
                             kind=kind)
        calls = [ToolCall(call_id=f"toolu_{digest(key, str(i), n=24)}", name=c["function"]["name"],
                          arguments=c["function"]["arguments"]) for i, c in enumerate(said.calls)]
        u = said.usage
        usage = {"input_tokens": u["prompt_tokens"] - u["cached_tokens"], "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": u["cached_tokens"], "output_tokens": u["completion_tokens"],
                 "output_tokens_details": {"thinking_tokens": u["reasoning_tokens"]}}
        reply = wire.message(id_=f"msg_{digest(key, 'msg', n=24)}", model=model, text=said.text, calls=calls,
                             stop_reason="tool_use" if calls else "end_turn", usage=usage)
        if body.get("stream") is True:
            events = (wire.sse_bytes(e, d) for e, d in wire.stream_events(reply))
            return event_stream(events)
        return json_response(reply)

    return await model_.run_turn(request, kind, key, produce, _fault)

