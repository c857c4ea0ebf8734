"""Gemini route: POST R/gemini/v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse in Google's
wire format, over the same models as the chat route (`_model.answer`), keyless (a key starting with `bad` is refused
as Google would).

The request's `systemInstruction` and `contents` become chat messages (adapters._gemini), answered exactly as the
chat route answers them; the reply has one candidate with text and `functionCall` parts and `usageMetadata`
(cached tokens as `cachedContentTokenCount`, reasoning as `thoughtsTokenCount`). Faults are drawn as the chat
route's (route `chat`) and answered in Google's error shape.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

import searchtrace.adapters._gemini as wire
import searchtrace.adapters.sandbox._hosted as hosted
import searchtrace.adapters.sandbox._model as model_
from searchtrace.adapters._persona import request_key, retry_headers
from searchtrace.adapters.sandbox._reading import message_text
from searchtrace.adapters.sandbox._responses import json_response
from searchtrace.adapters.sandbox._state import json_body, sandbox_of
from searchtrace.adapters.sandbox._streaming import event_stream
from searchtrace.adapters.sandbox._wire import digest
from searchtrace.store import ToolCall

_FAULTS = {"429": (429, "Resource has been exhausted (e.g. check quota)."),
           "401": (400, "API key not valid. Please pass a valid API key."),
           "500": (500, "An internal error has occurred. Please retry or report in "
                        "https://developers.generativeai.google/guide/troubleshooting"),
           "503": (503, "The model is overloaded. Please try again later."),
           "quota": (429, "You exceeded your current quota, please check your plan and billing details.")}


def error(status: int, message: str) -> Response:
    return json_response(wire.error_body(status, message), status, retry_headers(status))


def _fault(kind: str) -> Response:
    status, message = _FAULTS[kind]
    return error(status, message)


def _grounding(tool: object) -> bool:
    return isinstance(tool, dict) and ("google_search" in tool or "googleSearch" in tool)


def _grounded_reply(request: Request, key: str, model: str, chat: list[dict[str, Any]], stream: bool) -> Response:
    """A reply grounded with the sandbox model's own search: the answer and its groundingMetadata."""
    question = hosted.question_of(chat)
    hits = hosted.search(sandbox_of(request).world, question)
    said = hosted.answer(question, hits)
    u = model_.turn_usage(key, chat, said.text)
    out = wire.reply(response_id=digest(key, "resp", n=22), model=model, text=said.text, calls=[],
                     usage={"promptTokenCount": u["prompt_tokens"], "candidatesTokenCount": u["completion_tokens"],
                            "totalTokenCount": u["prompt_tokens"] + u["completion_tokens"]})
    base = str(request.url).split("/v1beta/", 1)[0]  # where this route was reached: the redirect route is beside it
    grounding = hosted.gemini_grounding(question, hits, said, base)
    out["candidates"][0]["groundingMetadata"] = grounding
    if stream:  # the metadata rides on the last chunk, as Google streams it
        chunks = list(wire.stream_chunks(out))
        chunks[-1]["candidates"][0]["groundingMetadata"] = grounding
        return event_stream(wire.sse_bytes(c) for c in chunks)
    return json_response(out)


async def generate(request: Request) -> Response:
    """`{model}:generateContent`, or `{model}:streamGenerateContent` (server-sent events with `alt=sse`)."""
    sb = sandbox_of(request)
    sb.count("chat", request)
    model, _, method = request.path_params["target"].partition(":")
    if method not in ("generateContent", "streamGenerateContent"):
        return error(404, f"Method {method!r} is not served here: generateContent or streamGenerateContent")
    sent = request.headers.get("x-goog-api-key") or request.query_params.get("key") or ""
    if sent.strip().startswith("bad"):
        return error(400, "API key not valid. Please pass a valid API key.")
    body = await json_body(request)
    if body is None:
        return error(400, "Invalid JSON payload received.")
    try:
        chat = wire.chat_messages(body.get("systemInstruction", body.get("system_instruction")), body.get("contents"))
        raw = body["tools"] if isinstance(body.get("tools"), list) else []
        grounded = any(_grounding(t) for t in raw)
        tools = wire.tools_to_chat([t for t in raw if not _grounding(t)]) or None
    except ValueError as exc:
        return error(400, str(exc))
    if not any(m["role"] != "system" for m in chat):
        return error(400, "* GenerateContentRequest.contents: contents is not specified")
    if (broken := model_.message_order_error(chat)) is not None:
        return error(400, "* GenerateContentRequest.contents: " + broken)
    if not model_.serves(model):
        return error(404, f"models/{model} is not found for API version v1beta, or is not supported for "
                          "generateContent.")
    key = request_key("gemini", model, model_.canon.encode(body))
    kind = sb.fault("chat", key, message_text(chat[-1].get("content")))
    config = body.get("generationConfig") or {}
    json_mode = isinstance(config, dict) and config.get("responseMimeType") == "application/json"
    stream = method == "streamGenerateContent"

    async def produce() -> Response:
        if grounded:  # docs/how-to/hosted.md: grounding with the sandbox model's own search
            return _grounded_reply(request, key, model, chat, stream)
        said = model_.answer(key=key, model=model, messages=chat, tools=tools, choice="auto", json_mode=json_mode,
                             kind=kind)
        calls = [ToolCall(call_id=f"call_{digest(key, str(i), n=24)}", name=c["function"]["name"],
                          arguments=c["function"]["arguments"]) for i, c in enumerate(said.calls)]
        u = said.usage
        usage = {"promptTokenCount": u["prompt_tokens"], "cachedContentTokenCount": u["cached_tokens"],
                 "candidatesTokenCount": u["completion_tokens"] - u["reasoning_tokens"],
                 "thoughtsTokenCount": u["reasoning_tokens"],
                 "totalTokenCount": u["prompt_tokens"] + u["completion_tokens"]}
        reply = wire.reply(response_id=digest(key, "resp", n=22), model=model, text=said.text, calls=calls,
                           usage=usage)
        if stream:
            chunks = (wire.sse_bytes(c) for c in wire.stream_chunks(reply))
            return event_stream(chunks)
        return json_response(reply)

    return await model_.run_turn(request, kind, key, produce, _fault)



async def grounding_redirect(request: Request) -> Response:
    """GET grounding-api-redirect/<token>: a 302 to the page a grounding chunk stands for (docs/how-to/hosted.md)."""
    target = hosted.redirect_target(request.path_params["token"])
    if target is None or sandbox_of(request).world.page(target) is None:
        return error(404, "Not Found")
    return RedirectResponse(target, status_code=302)
