"""What the chat and the Responses routes share: the key check, request validation and the models' reply.

Both routes turn their request into chat messages and ask `answer`, so `sandbox-agent` and the judges behave
the same whichever API asks. Token usage is derived from message lengths (about 4 characters per token), so
it is plausible and deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

import searchtrace.adapters._toolset as toolset
import searchtrace.adapters.sandbox._agent as agent
import searchtrace.adapters.sandbox._judge as judge
import searchtrace.adapters.sandbox._wire as wire
from searchtrace.adapters.sandbox._faults import JUDGE_KINDS
from searchtrace.adapters.sandbox._reading import message_text
from searchtrace.adapters.sandbox._responses import json_response
from searchtrace.adapters.sandbox._state import json_body, sandbox_of

AGENT_MODELS = ("sandbox-agent",)
AGENT_ALIAS = "sandbox-agent-"  # `sandbox-agent-<name>` is the same agent under another name (an arm of its own)


def serves(model: str) -> bool:
    """Whether the sandbox answers as `model`: its agent (or an alias of it) or a judge."""
    return model in AGENT_MODELS + JUDGE_MODELS or (model.startswith(AGENT_ALIAS) and len(model) > len(AGENT_ALIAS))
JUDGE_MODELS = ("sandbox-judge", "sandbox-judge-sloppy")
canon = msgspec.json.Encoder(order="sorted")


class Reply(msgspec.Struct, kw_only=True):
    """A model's reply in chat terms: text, tool calls (chat `tool_calls` objects) and usage counts."""

    text: str | None
    calls: list[dict[str, Any]]
    usage: dict[str, int]  # prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens


def _tokens(chars: int) -> int:
    return (chars + 3) // 4


def _prompt_chars(messages: list[dict[str, Any]]) -> int:
    n = 0
    for m in messages:
        n += 16 + len(message_text(m.get("content")))
        for tc in m.get("tool_calls") or []:
            n += 24 + len(str(tc.get("function", {}).get("arguments", "")))
    return n


def prompt_tokens(messages: list[dict[str, Any]], tools: Any) -> int:
    """The prompt tokens of chat messages and tools (what every API's reply and count_tokens report)."""
    return _tokens(_prompt_chars(messages) + (len(json.dumps(tools)) if tools else 0))


def _usage(key: str, messages: list[dict[str, Any]], tools: Any, output: str, reasoning: bool) -> dict[str, int]:
    prompt = prompt_tokens(messages, tools)
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    cached = (_tokens(_prompt_chars(messages[: last_assistant + 1])) // 64) * 64 if last_assistant >= 0 else 0
    think = 24 + int(wire.digest(key, n=4), 16) % 200 if reasoning else 0
    return {"prompt_tokens": prompt, "completion_tokens": _tokens(len(output)) + 4 + think,
            "reasoning_tokens": think, "cached_tokens": min(cached, prompt)}


def turn_usage(key: str, messages: list[dict[str, Any]], output: str) -> dict[str, int]:
    """The usage of a turn without tools or reasoning (a hosted search layer's grounded answer, docs/how-to/hosted.md)."""
    return _usage(key, messages, None, output, reasoning=False)


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


def error(status: int, message: str, code: str | None, param: str | None = None) -> Response:
    return json_response(wire.openai_error(message, "invalid_request_error", code, param), status)


def key_error(request: Request) -> Response | None:
    """OpenAI's 401 for a missing Bearer key or a `bad…` one; None when the key is accepted."""
    auth = request.headers.get("authorization", "")
    token = auth.partition(" ")[2].strip() if auth.lower().startswith("bearer") else ""
    if not token:
        return error(401, "You didn't provide an API key. You need to provide your API key in an Authorization header "
                     "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", None)
    if token.startswith("bad"):
        return error(401, wire.OPENAI_401, "invalid_api_key")
    return None


def no_model(model: Any) -> Response | None:
    """The 400 for a request without a model name."""
    if not isinstance(model, str) or not model:
        return error(400, "you must provide a model parameter", None)
    return None


async def opening(request: Request) -> tuple[dict[str, Any], str] | Response:
    """What both model routes do first: count the request (route `chat`), check its key, parse its JSON body and
    its `model`; the body and the model name, or the error reply."""
    sandbox_of(request).count("chat", request)
    if (refused := key_error(request)) is not None:
        return refused
    body = await json_body(request)
    if body is None:
        return error(400, "We could not parse the JSON body of your request.", None)
    model = body.get("model")
    if (missing := no_model(model)) is not None:
        return missing
    assert isinstance(model, str)
    return body, model


def unknown_model(model: str) -> Response | None:
    """The 404 for a model the sandbox does not serve; None for one it serves."""
    if not serves(model):
        return json_response(wire.openai_error(f"The model `{model}` does not exist or you do not have access to it.",
                                               "invalid_request_error", "model_not_found"), 404)
    return None


def answer(*, key: str, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
           choice: Any, json_mode: bool, kind: str | None) -> Reply:
    """The reply of `model` (one the sandbox serves) to chat `messages` with chat `tools`; `kind` is the fault drawn.

    `sandbox-agent` decides its turn from the messages (_agent.decide); a judge reads the user messages, and
    without JSON mode fences its JSON."""
    if model not in JUDGE_MODELS:  # the agent, or an alias of it
        turn = agent.decide(messages, can_call_tools=bool(tools) and choice != "none", tools=toolset.pick(tools))
        calls = [{"id": f"call_{wire.digest(key, str(i), n=24)}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False, separators=(",", ":"))}}
                 for i, (name, args) in enumerate(turn.calls)]
        output = turn.text or json.dumps(calls)
        return Reply(text=turn.text, calls=calls, usage=_usage(key, messages, tools, output, reasoning=True))
    prompt = "\n".join(message_text(m.get("content")) for m in messages if m.get("role") == "user")
    bad = kind if kind in JUDGE_KINDS else None
    if bad is None and model == "sandbox-judge-sloppy":
        bad = judge.sloppy_kind(prompt)
    text = judge.reply(prompt, bad, fenced=not json_mode)
    return Reply(text=text, calls=[], usage=_usage(key, messages, None, text, reasoning=False))


HTTP_FAULTS = ("429", "500", "503", "401", "quota")


async def run_turn(request: Request, kind: str | None, key: str, produce: Callable[[], Awaitable[Response]],
                   fault: Callable[[str], Response]) -> Response:
    """`Sandbox.run` for the Anthropic and Gemini routes: an HTTP fault is answered by `fault(kind)` in the API's
    own error shape; every other kind (timeouts, slow, malformed, truncated) as on the chat route."""
    if kind in HTTP_FAULTS:
        return fault(kind)
    return await sandbox_of(request).run("chat", None if kind in JUDGE_KINDS else kind, key, produce)
