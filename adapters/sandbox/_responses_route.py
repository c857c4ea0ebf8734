"""Responses route: POST R/openai/v1/responses, OpenAI's Responses API over the same models as the chat route.

The request's `instructions`, the conversation of `previous_response_id` (kept per server, Sandbox.keep) and
its `input` items become chat messages (adapters._responses_api), which `_model.answer` answers exactly as
the chat route would; the reply is a `response` object with `reasoning`, `message` and `function_call`
items, or with `stream: true` its typed server-sent events (_streaming.py). A response with `store: false` is
not kept. Requests are counted and faulted as the chat route's (route `chat`: one fault plan for both APIs).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

import searchtrace.adapters.sandbox._hosted as hosted
import searchtrace.adapters.sandbox._model as model_
import searchtrace.adapters.sandbox._wire as wire
from searchtrace.adapters._hosted import SOURCES
from searchtrace.adapters._persona import request_key
from searchtrace.adapters._responses_api import chat_messages, tools_to_chat
from searchtrace.adapters.sandbox._faults import JUDGE_KINDS
from searchtrace.adapters.sandbox._reading import message_text
from searchtrace.adapters.sandbox._responses import json_response
from searchtrace.adapters.sandbox._state import Sandbox, sandbox_of
from searchtrace.adapters.sandbox._streaming import typed_sse_response

HOSTED_TOOLS = ("web_search", "web_search_2025_08_26", "web_search_preview")


def _hosted_reply(sb: Sandbox, key: str, model: str, body: dict[str, Any], messages: list[dict[str, Any]]) -> Response:
    """A Responses reply grounded by the `web_search` tool: its web_search_call and the cited message."""
    question = hosted.question_of(messages)
    hits = hosted.search(sb.world, question)
    said = hosted.answer(question, hits)
    include: list[Any] = body["include"] if isinstance(body.get("include"), list) else []
    u = model_.turn_usage(key, messages, said.text)
    reply = wire.response_object(key=key, model=model, request=body, text=None, tool_calls=[], **u)
    reply["output"] = hosted.openai_output(key, question, hits, said, sources=SOURCES in include)
    return typed_sse_response(reply) if body.get("stream") is True else json_response(reply)


async def responses(request: Request) -> Response:
    sb = sandbox_of(request)
    opened = await model_.opening(request)
    if isinstance(opened, Response):
        return opened
    body, model = opened
    if "input" not in body:
        return model_.error(400, "Missing required parameter: 'input'.", "missing_required_parameter", "input")
    try:
        system = chat_messages(body.get("instructions"), [])
        new = chat_messages(None, body["input"])
    except ValueError as exc:
        return model_.error(400, str(exc), None, "input")
    earlier: list[dict[str, Any]] = []
    previous = body.get("previous_response_id")
    if previous is not None:
        found = sb.conversation(str(previous))
        if found is None:
            return model_.error(400, f"Previous response with id '{previous}' not found.", "previous_response_not_found",
                                "previous_response_id")
        earlier = found
    messages = system + earlier + new
    if not messages:
        return model_.error(400, "[] is too short - 'input'", None, "input")
    broken = model_.message_order_error(messages)
    if broken:
        return model_.error(400, broken.replace("messages with role 'tool'", "function_call_output items"), None, "input")
    raw_tools = body.get("tools")
    if raw_tools is not None and not isinstance(raw_tools, list):
        return model_.error(400, "Invalid type for 'tools': expected an array.", None, "tools")
    hosted = [t for t in raw_tools or [] if isinstance(t, dict) and t.get("type") in HOSTED_TOOLS]
    try:
        tools = tools_to_chat([t for t in raw_tools or [] if t not in hosted]) or None
    except ValueError as exc:
        return model_.error(400, str(exc), None, "tools")
    if (unknown := model_.unknown_model(model)) is not None:
        return unknown
    # the streamed and the plain form of one request are the same request (same id, usage and faults)
    key = request_key("responses", model_.canon.encode({k: v for k, v in body.items() if k not in ("stream", "stream_options")}))
    kind = sb.fault("chat", key, message_text(messages[-1].get("content")))
    text_cfg = body.get("text")
    fmt = text_cfg.get("format") if isinstance(text_cfg, dict) else None
    json_mode = isinstance(fmt, dict) and fmt.get("type") != "text"

    async def produce() -> Response:
        if hosted:  # docs/how-to/hosted.md: the sandbox model searches the sandbox world itself
            return _hosted_reply(sb, key, model, body, messages)
        said = model_.answer(key=key, model=model, messages=messages, tools=tools, choice=body.get("tool_choice", "auto"),
                             json_mode=json_mode, kind=kind)
        reply = wire.response_object(key=key, model=model, request=body, text=said.text, tool_calls=said.calls,
                                     **said.usage)
        if body.get("store") is not False:
            turn: dict[str, Any] = {"role": "assistant", "content": said.text}
            if said.calls:
                turn["tool_calls"] = said.calls
            sb.keep(reply["id"], [*earlier, *new, turn])
        return typed_sse_response(reply) if body.get("stream") is True else json_response(reply)

    return await sb.run("chat", None if kind in JUDGE_KINDS else kind, key, produce)


async def perplexity_agent(request: Request) -> Response:
    """POST R/perplexity/v1/responses: Perplexity's Agent API (docs/how-to/hosted.md), keyless; its `web_search`
    (and `fetch_url`) tools run the sandbox model's own search and give search_results (with snippets)."""
    sb = sandbox_of(request)
    opened = await model_.opening(request)
    if isinstance(opened, Response):
        return opened
    body, model = opened
    try:
        messages = chat_messages(body.get("instructions"), body.get("input"))
    except ValueError as exc:
        return model_.error(400, str(exc), None, "input")
    if not messages:
        return model_.error(400, "Missing required parameter: 'input'.", "missing_required_parameter", "input")
    names = {t.get("type") for t in body.get("tools") or [] if isinstance(t, dict)}
    key = request_key("perplexity_agent", model_.canon.encode(body))
    question = hosted.question_of(messages)
    hits = hosted.search(sb.world, question)
    said = hosted.answer(question, hits)
    u = model_.turn_usage(key, messages, said.text)
    searches = int("web_search" in names)
    fetches = int("fetch_url" in names and bool(hits))
    reply = {"id": f"resp_{wire.digest(key, 'resp', n=48)}", "object": "response", "created_at": wire.EPOCH,
             "model": model, "status": "completed",
             "output": hosted.perplexity_output(key, question, hits if searches else [], said, fetch=bool(fetches)),
             "usage": {"input_tokens": u["prompt_tokens"], "output_tokens": u["completion_tokens"],
                       "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
                       "tool_calls_details": {"web_search": {"invocation": searches},
                                              "fetch_url": {"invocation": fetches}}}}
    return json_response(reply)
