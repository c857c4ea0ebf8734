"""Chat route: POST R/openai/v1/chat/completions in OpenAI's wire format, dispatching on `model`.

`sandbox-agent` is the scripted agent (_agent.py), `sandbox-judge` the deterministic judge (_judge.py),
`sandbox-judge-sloppy` the same judge with a bad reply for ~2% of documents. `stream: true` answers with
server-sent events (_streaming.py). Token usage is derived from
message lengths (about 4 characters per token), so it is plausible and deterministic.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

import searchtrace.adapters._toolset as toolset
import searchtrace.adapters.sandbox._agent as agent
import searchtrace.adapters.sandbox._judge as judge
import searchtrace.adapters.sandbox._wire as wire
from searchtrace.adapters._persona import request_key
from searchtrace.adapters.sandbox._faults import JUDGE_KINDS
from searchtrace.adapters.sandbox._reading import message_text
from searchtrace.adapters.sandbox._responses import json_response
from searchtrace.adapters.sandbox._state import json_body, sandbox_of
from searchtrace.adapters.sandbox._streaming import sse_response

AGENT_MODELS = ("sandbox-agent",)
JUDGE_MODELS = ("sandbox-judge", "sandbox-judge-sloppy")
_canon = msgspec.json.Encoder(order="sorted")


def _tokens(chars: int) -> int:
    return (chars + 3) // 4


def _prompt_chars(messages: list[dict[str, Any]]) -> int:
    n = 0
    for m in messages:
        n += 16 + len(message_text(m.get("content")))
        for tc in m.get("tool_calls") or []:
            n += 24 + len(str(tc.get("function", {}).get("arguments", "")))
    return n


def _usage(key: str, messages: list[dict[str, Any]], tools: Any, output: str, reasoning: bool) -> dict[str, int]:
    prompt = _tokens(_prompt_chars(messages) + (len(json.dumps(tools)) if tools else 0))
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    cached = (_tokens(_prompt_chars(messages[: last_assistant + 1])) // 64) * 64 if last_assistant >= 0 else 0
    think = 24 + int(wire.digest(key, n=4), 16) % 200 if reasoning else 0
    return {"prompt_tokens": prompt, "completion_tokens": _tokens(len(output)) + 4 + think,
            "reasoning_tokens": think, "cached_tokens": min(cached, prompt)}


def message_order_error(messages: list[dict[str, Any]]) -> str | None:
    """OpenAI's own 400s for a broken tool-call transcript (so a harness bug fails here as it would live)."""
    pending: list[str] = []
    for m in messages:
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'developer'."
        if role == "tool":
            call_id = str(m.get("tool_call_id"))
            if call_id not in pending:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.")
            pending.remove(call_id)
            continue
        if pending:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}")
        if role == "assistant":
            pending = [str(tc.get("id")) for tc in m.get("tool_calls") or [] if isinstance(tc, dict)]
    if pending:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}")
    return None


def _error(status: int, message: str, code: str | None, param: str | None = None) -> Response:
    return json_response(wire.openai_error(message, "invalid_request_error", code, param), status)


async def chat_completions(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("chat", request)
    auth = request.headers.get("authorization", "")
    token = auth.partition(" ")[2].strip() if auth.lower().startswith("bearer") else ""
    if not token:
        return _error(401, "You didn't provide an API key. You need to provide your API key in an Authorization header "
                      "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", None)
    if token.startswith("bad"):
        return _error(401, wire.OPENAI_401, "invalid_api_key")
    body = await json_body(request)
    if body is None:
        return _error(400, "We could not parse the JSON body of your request.", None)
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        return _error(400, "you must provide a model parameter", None)
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        return _error(400, "[] is too short - 'messages'", None, "messages")
    broken = message_order_error(messages)
    if broken:
        return _error(400, broken, None, "messages")
    tools = body.get("tools")
    if tools is not None and (not isinstance(tools, list) or not tools):
        return _error(400, "[] is too short - 'tools'", "empty_array", "tools")
    if model not in AGENT_MODELS + JUDGE_MODELS:
        return json_response(wire.openai_error(f"The model `{model}` does not exist or you do not have access to it.",
                                               "invalid_request_error", "model_not_found"), 404)
    # the streamed and the plain form of one request are the same request (same id, usage and faults)
    key = request_key("chat", _canon.encode({k: v for k, v in body.items() if k not in ("stream", "stream_options")}))
    last = message_text(messages[-1].get("content"))
    kind = sb.fault("chat", key, last)
    choice = body.get("tool_choice", "auto")
    stream = body.get("stream") is True
    opts = body.get("stream_options")
    include_usage = isinstance(opts, dict) and opts.get("include_usage") is True

    def send(reply: dict[str, Any]) -> Response:
        return sse_response(reply, include_usage=include_usage) if stream else json_response(reply)

    async def produce() -> Response:
        if model in AGENT_MODELS:
            turn = agent.decide(messages, can_call_tools=bool(tools) and choice != "none", tools=toolset.pick(tools))
            calls = [{"id": f"call_{wire.digest(key, str(i), n=24)}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False, separators=(",", ":"))}}
                     for i, (name, args) in enumerate(turn.calls)]
            output = turn.text or json.dumps(calls)
            u = _usage(key, messages, tools, output, reasoning=True)
            reply = wire.chat_completion(key=key, model=model, content=turn.text, tool_calls=calls or None, **u)
            if calls and isinstance(choice, dict):  # OpenAI says "stop" when tool_choice names the function
                reply["choices"][0]["finish_reason"] = "stop"
            return send(reply)
        prompt = "\n".join(message_text(m.get("content")) for m in messages if m.get("role") == "user")
        bad = kind if kind in JUDGE_KINDS else None
        if bad is None and model == "sandbox-judge-sloppy":
            bad = judge.sloppy_kind(prompt)
        fmt = body.get("response_format")
        fenced = not isinstance(fmt, dict) or fmt.get("type") == "text"  # without JSON mode it fences its JSON
        text = judge.reply(prompt, bad, fenced=fenced)
        u = _usage(key, messages, None, text, reasoning=False)
        return send(wire.chat_completion(key=key, model=model, content=text, tool_calls=None, **u))

    return await sb.run("chat", None if kind in JUDGE_KINDS else kind, key, produce)
