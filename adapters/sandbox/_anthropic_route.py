"""Anthropic route: POST R/anthropic/v1/messages (and v1/messages/count_tokens) in Anthropic's wire format, over the
same models as the chat route (`_model.answer`), keyless (a key starting with `bad` is refused as Anthropic would).

The request's `system` and `messages` become chat messages (adapters._anthropic_messages), answered exactly as the
chat route answers them; the reply is a `message` with `text` and `tool_use` blocks and usage with cache fields
(the chat route's cached tokens as `cache_read_input_tokens`, beside `input_tokens`; reasoning as
`output_tokens_details.thinking_tokens`), or with `stream: true` its
server-sent events. Faults are drawn as the chat route's (route `chat`) and answered in Anthropic's error shape.

A turn drawn `pause` (the in-band `!fault:pause` in the last message, or a FaultPlan rate) is answered in two parts,
as Claude answers a long server-tool turn: first `stop_reason: "pause_turn"` with the server-tool blocks (a hosted
turn: its searches and fetches) or, for a client-tool turn, the words said before it paused; then, when the caller
sends the conversation back with that content as the last (assistant) message, the rest of the turn (a judge
model's turn, which runs no server tool, is never paused). A request
ending in an assistant message is such a continuation: it is answered as the conversation before that message,
without what the paused part already gave, and never pauses again.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

import searchtrace.adapters._anthropic_messages as wire
import searchtrace.adapters.sandbox._hosted as hosted
import searchtrace.adapters.sandbox._model as model_
from searchtrace.adapters._persona import request_key, retry_headers
from searchtrace.adapters.sandbox._faults import PAUSE, find_markers, strip_markers
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
PAUSED_TEXT = "Let me look into this."  # what a paused client-tool turn said before it paused


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


def _hosted_reply(request: Request, key: str, model: str, body: dict[str, Any], chat: list[dict[str, Any]],
                  part: str) -> dict[str, Any]:
    """A Messages reply grounded by the server tools: search (and fetch) blocks, then the cited text; `part` says
    which of them: `whole`, `paused` (the server-tool blocks, `pause_turn`) or `rest` (the text after a pause)."""
    servers = {_server_tool(t) for t in body["tools"]}
    question = hosted.question_of(chat)
    question = strip_markers(question) if find_markers(question) else question
    hits = hosted.search(sandbox_of(request).world, question)
    said = hosted.answer(question, hits)
    content = hosted.anthropic_content(key, question, hits, said, fetch="web_fetch" in servers)
    if part != "whole":
        content = [b for b in content if (b["type"] == "text") == (part == "rest")]
    searched = part != "rest"
    u = model_.turn_usage(key, chat, said.text if part != "paused" else "")
    usage = {"input_tokens": u["prompt_tokens"], "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "output_tokens": u["completion_tokens"],
             "server_tool_use": {"web_search_requests": int(searched),
                                 "web_fetch_requests": int(searched and "web_fetch" in servers)}}
    reply = wire.message(id_=f"msg_{digest(key, 'msg', n=24)}", model=model, text=None, calls=[],
                         stop_reason=wire.PAUSE_TURN if part == "paused" else "end_turn", usage=usage)
    reply["content"] = content
    return reply


def _continued(body: dict[str, Any], chat: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The conversation before a paused turn's content when the request sends it back (its last message is the
    assistant's), else None."""
    turns = body.get("messages")
    if isinstance(turns, list) and turns and isinstance(turns[-1], dict) and turns[-1].get("role") == "assistant":
        return chat[:-1] if chat and chat[-1]["role"] == "assistant" else chat
    return None


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
    before = _continued(body, chat)
    paused = kind == PAUSE and model not in model_.JUDGE_MODELS  # a judge's turn runs no server tool: never paused
    part = "rest" if before is not None else "paused" if paused else "whole"
    chat = chat if before is None else before
    choice = body.get("tool_choice")
    choice_ = "none" if isinstance(choice, dict) and choice.get("type") == "none" else "auto"

    async def produce() -> Response:
        if any(_server_tool(t) for t in body.get("tools") or []):  # docs/how-to/hosted.md
            reply = _hosted_reply(request, key, model, body, chat, part)
        else:
            reply = _client_reply(key, model, chat, tools, choice_, kind, part)
        if body.get("stream") is True:
            return event_stream(wire.sse_bytes(e, d) for e, d in wire.stream_events(reply))
        return json_response(reply)

    return await model_.run_turn(request, kind, key, produce, _fault)


def _client_reply(key: str, model: str, chat: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                  choice: str, kind: str | None, part: str) -> dict[str, Any]:
    """The sandbox model's turn with client tools (text, `tool_use` blocks); paused, the words it said first."""
    said = model_.answer(key=key, model=model, messages=chat, tools=tools, choice=choice, json_mode=False, kind=kind)
    calls = [ToolCall(call_id=f"toolu_{digest(key, str(i), n=24)}", name=c["function"]["name"],
                      arguments=c["function"]["arguments"]) for i, c in enumerate(said.calls)]
    u = said.usage
    text = said.text
    if part == "paused":
        text, calls = PAUSED_TEXT, []
        u = {**u, "completion_tokens": model_.turn_usage(key, chat, text)["completion_tokens"], "reasoning_tokens": 0}
    usage = {"input_tokens": u["prompt_tokens"] - u["cached_tokens"], "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": u["cached_tokens"], "output_tokens": u["completion_tokens"],
             "output_tokens_details": {"thinking_tokens": u["reasoning_tokens"]}}
    stop = wire.PAUSE_TURN if part == "paused" else "tool_use" if calls else "end_turn"
    return wire.message(id_=f"msg_{digest(key, 'msg', n=24)}", model=model, text=text, calls=calls,
                        stop_reason=stop, usage=usage)
