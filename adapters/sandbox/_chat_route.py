"""Chat route: POST R/openai/v1/chat/completions in OpenAI's wire format, dispatching on `model` (_model.py).

`sandbox-agent` is the scripted agent (_agent.py), `sandbox-judge` the deterministic judge (_judge.py),
`sandbox-judge-sloppy` the same judge with a bad reply for ~2% of documents. `stream: true` answers with
server-sent events (_streaming.py).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

import searchtrace.adapters.sandbox._model as model_
import searchtrace.adapters.sandbox._wire as wire
from searchtrace.adapters._persona import request_key
from searchtrace.adapters.sandbox._faults import JUDGE_KINDS
from searchtrace.adapters.sandbox._reading import message_text
from searchtrace.adapters.sandbox._responses import json_response
from searchtrace.adapters.sandbox._state import sandbox_of
from searchtrace.adapters.sandbox._streaming import sse_response


async def chat_completions(request: Request) -> Response:
    sb = sandbox_of(request)
    opened = await model_.opening(request)
    if isinstance(opened, Response):
        return opened
    body, model = opened
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        return model_.error(400, "[] is too short - 'messages'", None, "messages")
    broken = model_.message_order_error(messages)
    if broken:
        return model_.error(400, broken, None, "messages")
    tools = body.get("tools")
    if tools is not None and (not isinstance(tools, list) or not tools):
        return model_.error(400, "[] is too short - 'tools'", "empty_array", "tools")
    if (unknown := model_.unknown_model(model)) is not None:
        return unknown
    # the streamed and the plain form of one request are the same request (same id, usage and faults)
    key = request_key("chat", model_.canon.encode({k: v for k, v in body.items() if k not in ("stream", "stream_options")}))
    last = message_text(messages[-1].get("content"))
    kind = sb.fault("chat", key, last)
    choice = body.get("tool_choice", "auto")
    stream = body.get("stream") is True
    opts = body.get("stream_options")
    include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
    fmt = body.get("response_format")
    json_mode = isinstance(fmt, dict) and fmt.get("type") != "text"

    async def produce() -> Response:
        said = model_.answer(key=key, model=model, messages=messages, tools=tools, choice=choice,
                             json_mode=json_mode, kind=kind)
        reply: dict[str, Any] = wire.chat_completion(key=key, model=model, content=said.text,
                                                     tool_calls=said.calls or None, **said.usage)
        if said.calls and isinstance(choice, dict):  # OpenAI says "stop" when tool_choice names the function
            reply["choices"][0]["finish_reason"] = "stop"
        return sse_response(reply, include_usage=include_usage) if stream else json_response(reply)

    return await sb.run("chat", None if kind in JUDGE_KINDS else kind, key, produce)
