"""OpenAI-compatible chat completions with tool calling (OpenAI, Moonshot Kimi, the sandbox), or the same
conversation over OpenAI's Responses API (`api="responses"`, adapters._responses_api), Anthropic's Messages API
(`api="anthropic"`, adapters._anthropic_messages) or Google's Gemini API (`api="gemini"`, adapters._gemini)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

import httpx
import msgspec
import structlog

import searchtrace.adapters._anthropic_messages as anthropic
import searchtrace.adapters._gemini as gemini
from searchtrace.adapters._errors import ChatError, key_rejected
from searchtrace.adapters._http import OwnsClient, Reply
from searchtrace.adapters._keys import Secret, json_headers, scrub_bytes, scrub_parsed, scrub_text
from searchtrace.adapters._responses_api import (
    assemble_events,
    chat_messages,
    input_items,
    parse_response,
    text_format,
    tools_to_chat,
    tools_to_responses,
)
from searchtrace.adapters._search_base import shorten
from searchtrace.adapters._types import ChatResponse, Endpoint, EndpointSpec, Limits, Tokens
from searchtrace.store import ToolCall, Usage

log = structlog.get_logger("searchtrace.adapters")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
ENDPOINT = EndpointSpec(name="openai", key_env="OPENAI_API_KEY", base_url_env="OPENAI_BASE_URL",
                        default_base_url=DEFAULT_BASE_URL, limits=Limits(rps=5.0, concurrency=8, timeout_s=120.0),
                        sandbox_path="openai/v1")


class _Function(msgspec.Struct):
    name: str = ""
    arguments: Any = ""  # a JSON string; some servers send an object


class _ToolCall(msgspec.Struct):
    function: _Function
    id: str | None = None


class _Message(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None


# A token count of one reply: >= 0 and at most 10^12, so the sums over a run's calls still fit the store's 64-bit
# integers (a reply claiming 2^70 tokens is a bad response, not a HUGEINT that breaks every reader of the run)


class _PromptDetails(msgspec.Struct):
    cached_tokens: Tokens | None = None


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: Tokens | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: Tokens | None = None
    completion_tokens: Tokens | None = None
    cached_tokens: Tokens | None = None  # Moonshot v1 models report it at the top level
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _Body(msgspec.Struct):
    choices: list[_Choice] = []
    usage: _Usage | None = None


def usage_of(u: _Usage | None) -> Usage:
    """Token counts with every missing detail as 0; cached from prompt_tokens_details or the top level."""
    if u is None:
        return Usage()
    cached = (u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else None) or u.cached_tokens or 0
    reasoning = (u.completion_tokens_details.reasoning_tokens if u.completion_tokens_details else None) or 0
    return Usage(input_tokens=u.prompt_tokens or 0, output_tokens=u.completion_tokens or 0,
                 reasoning_tokens=reasoning, cached_tokens=cached)


def parse_completion(body: bytes) -> tuple[str | None, list[ToolCall], Usage, str | None]:
    """Text, tool calls (from message.tool_calls, whatever finish_reason says), usage, finish_reason."""
    parsed = msgspec.json.decode(body, type=_Body)
    if not parsed.choices:
        raise ValueError("no choices in the completion")
    choice = parsed.choices[0]
    calls = []
    for i, tc in enumerate(choice.message.tool_calls or []):
        args = tc.function.arguments
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        calls.append(ToolCall(call_id=tc.id or f"call_{i}", name=tc.function.name, arguments=arguments))
    return choice.message.content, calls, usage_of(parsed.usage), choice.finish_reason


def error_message(body: Any, text: str) -> str:
    """`{"error": {"message", "type", "code"}}` (OpenAI, Kimi), else the text."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        msg = str(err.get("message") or text)
        kind = err.get("code") or err.get("type")
        return f"{kind}: {msg}" if kind else msg
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return text


def assemble_chunks(stream: bytes) -> bytes:
    """The `chat.completion` JSON equivalent of a `chat.completion.chunk` event stream (model, text, tool calls,
    usage)."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: Any = None
    model: Any = None
    seen = False
    for line in stream.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data or data == "[DONE]":
            continue
        chunk = msgspec.json.decode(data)
        if not isinstance(chunk, dict):
            raise ValueError("a stream chunk is not a JSON object")
        seen = True
        if model is None and isinstance(chunk.get("model"), str):
            model = chunk["model"]
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(str(delta["content"]))
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(int(tc.get("index", len(calls))), {"id": None, "name": "", "arguments": ""})
                if tc.get("id"):
                    slot["id"] = tc["id"]
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    if not seen:
        raise ValueError("no data chunks in the event stream")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) if content else None}
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(calls.items())
        ]
    body = {"object": "chat.completion", "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage}
    return msgspec.json.encode(body)


Api = Literal["chat", "responses", "anthropic", "gemini"]
APIS: tuple[Api, ...] = ("chat", "responses", "anthropic", "gemini")
# the endpoint (adapters._registry.endpoints) each model API is reached at by default
API_ENDPOINTS: dict[str, str] = {"chat": ENDPOINT.name, "responses": ENDPOINT.name, "anthropic": anthropic.ENDPOINT.name,
                                 "gemini": gemini.ENDPOINT.name}
Parsed = tuple[str | None, list[ToolCall], Usage, str | None]
_PARSERS: dict[str, Callable[[bytes], Parsed]] = {"chat": parse_completion, "responses": parse_response,
                                                  "anthropic": anthropic.parse_message, "gemini": gemini.parse_reply}
_ERRORS: dict[str, Callable[[Any, str], str]] = {"chat": error_message, "responses": error_message,
                                                 "anthropic": anthropic.error_message, "gemini": gemini.error_message}


_ASSEMBLERS: dict[str, Callable[[bytes], bytes]] = {"chat": assemble_chunks, "responses": assemble_events,
                                                    "anthropic": anthropic.assemble, "gemini": gemini.assemble}


def assemble(api: str, stream: bytes) -> bytes:
    """The one reply body a streamed reply of `api` carries (server-sent events put back together)."""
    return _ASSEMBLERS[api](stream)


def parse_reply(api: str, body: bytes) -> Parsed:
    """Text, tool calls, usage (the one rule) and finish reason of a reply of `api`."""
    return _PARSERS[api](body)


Evidence = tuple[list[dict[str, Any]], list[dict[str, Any]] | None, list[dict[str, Any]] | None]


def request_evidence(api: str, request: dict[str, Any]) -> Evidence:
    """What a model request of `api` sent, as chat messages and chat tools (so every API records the same request
    the same way, docs/concepts/shown.md): the messages of its own instructions (Responses: not carried on to a later
    `previous_response_id`), the conversation, the tools (a hosted tool kept as sent); None where the body does not
    say."""
    raw_tools = request.get("tools")
    if api == "chat":
        messages = request["messages"] if isinstance(request.get("messages"), list) else None
        return [], messages, raw_tools if isinstance(raw_tools, list) else None
    head: list[dict[str, Any]] = []
    conversation: list[dict[str, Any]] | None
    try:
        if api == "responses":
            head, conversation = chat_messages(request.get("instructions"), []), chat_messages(None, request.get("input"))
        elif api == "anthropic":
            conversation = anthropic.chat_messages(request.get("system"), request.get("messages"))
        else:
            system = request.get("systemInstruction", request.get("system_instruction"))
            conversation = gemini.chat_messages(system, request.get("contents"))
    except ValueError:
        conversation = None
    if not isinstance(raw_tools, list):
        return head, conversation, None
    to_chat = {"responses": tools_to_chat, "anthropic": anthropic.tools_to_chat, "gemini": gemini.tools_to_chat}[api]
    try:
        return head, conversation, to_chat(raw_tools)
    except ValueError:  # a hosted tool (web_search, file_search, google_search …): kept as sent
        return head, conversation, raw_tools


def model_of(api: str, body: bytes) -> str | None:
    """The model a reply names (Gemini: its `modelVersion`), or None."""
    if api == "gemini":
        return gemini.model_of(body)
    return anthropic.model_of(body)  # chat, Responses and Messages replies name it in `model`


def call_path(api: str, model: str, *, stream: bool = False) -> str:
    """The path below the endpoint's base URL of one model call."""
    if api == "gemini":
        return gemini.path(model, stream=stream)
    return {"chat": "chat/completions", "responses": "responses", "anthropic": anthropic.PATH}[api]


def api_headers(api: str, key: Secret | None) -> dict[str, str]:
    """The headers of one model call: each API carries its key its own way."""
    if api == "anthropic":
        return anthropic.headers(key)
    if api == "gemini":
        return gemini.headers(key)
    return json_headers(key)
_BAD_BODY = (ValueError, TypeError, RecursionError, msgspec.DecodeError, msgspec.ValidationError)


def _parses(parse: Callable[[bytes], Parsed]) -> Callable[[bytes], bool]:
    """A 2xx body we can use; a malformed or truncated one is worth another attempt (it was not an answer)."""

    def accept(body: bytes) -> bool:
        try:
            parse(body)
        except _BAD_BODY:
            return False
        return True

    return accept


def request_body(api: Api, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 response_format: dict[str, Any] | None, params: dict[str, Any]) -> dict[str, Any]:
    """The request body of one turn: chat `messages`, or Responses `input` items (not stored upstream: every
    turn sends the whole conversation, as a chat request does), or a Messages or Gemini request; `params` are merged
    over each."""
    if api == "anthropic":
        return anthropic.request_body(model, messages, tools, response_format, params)
    if api == "gemini":
        return gemini.request_body(model, messages, tools, response_format, params)
    if api == "chat":
        body: dict[str, Any] = {"model": model, "messages": messages, **params}
        if tools:
            body["tools"] = tools
        if response_format is not None:
            body["response_format"] = response_format
        return body
    body = {"model": model, "input": input_items(messages), "store": False, **params}
    if tools:
        body["tools"] = tools_to_responses(tools)
    if response_format is not None:
        body["text"] = {**(body.get("text") or {}), "format": text_format(response_format)}
    return body


class OpenAIChat(OwnsClient):
    """Chat completions (or Responses) for one model at one endpoint; raises ChatError once retries are exhausted."""

    label = "OpenAI-compatible chat"

    def __init__(
        self,
        endpoint: Endpoint,
        model: str,
        *,
        params: dict[str, Any] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        key: Secret | None = None,
        key_fallback: str | None = None,
        api: Api = "chat",
    ) -> None:
        self.model = model
        self.name = model
        self.params: dict[str, Any] = dict(params or {})
        self.api: Api = api
        super().__init__(endpoint, transport, key, key_fallback)

    def __repr__(self) -> str:
        api = "" if self.api == "chat" else f", api={self.api!r}"
        return f"OpenAIChat(model={self.model!r}, base_url={self.endpoint.base_url!r}{api})"

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        trace_id: str | None = None,
    ) -> ChatResponse:
        """One completion; tool calls are read from message.tool_calls (finish_reason may say "stop"), or with the
        Responses API from the reply's function_call items."""
        body = self.request(messages, tools=tools, response_format=response_format)
        headers = api_headers(self.api, self._key)
        path = call_path(self.api, self.model)
        reply = await self._http.call("POST", path, what=f"chat:{self.model}", headers=headers,
                                      json=body, trace_id=trace_id, accept=_parses(_PARSERS[self.api]))
        if reply.outcome != "ok":
            error = self._error(reply)
            error.provider_ms, error.queue_ms = reply.provider_ms, reply.queue_ms
            raise error
        return self.response(reply.body, reply)

    def request(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        """The request body of one completion (a model batch's items are these bodies, docs/how-to/batch.md)."""
        return request_body(self.api, self.model, messages, tools, response_format, self.params)

    def response(self, body: bytes, reply: Reply | None = None) -> ChatResponse:
        """A reply body read as one completion (online, `reply` gives its timing and retries; or a batch item's);
        ChatError when the body is unusable."""
        try:
            text, calls, usage, finish = scrub_parsed(_PARSERS[self.api](body), self.secrets())
        except _BAD_BODY as exc:
            raise ChatError("bad_response", scrub_text(f"{self.model}: unusable body: {exc}", self._key),
                            reply.retries if reply is not None else [],
                            http_status=reply.http_status if reply is not None else None) from None
        timing: dict[str, Any] = {}
        if reply is not None:
            log.info("chat", model=self.model, tool_calls=len(calls), finish_reason=finish,
                     latency_ms=round(reply.latency_ms, 1), retries=len(reply.retries))
            timing = {"latency_ms": reply.latency_ms, "provider_ms": reply.provider_ms, "queue_ms": reply.queue_ms,
                      "retries": reply.retries}
        return ChatResponse(text=text, tool_calls=calls, usage=usage, finish_reason=finish,
                            raw=scrub_bytes(body, *self.secrets()), model=model_of(self.api, body) or self.model,
                            api=self.api, **timing)

    def _error(self, reply: Reply) -> ChatError:
        status = "bad_response" if reply.outcome == "too_large" else reply.outcome
        if reply.outcome != "http_error" or reply.http_status is None:
            msg = f"{self.model}: {reply.error or reply.outcome}"
            return ChatError(status, scrub_text(msg, self._key), reply.retries, http_status=reply.http_status)
        text = reply.body.decode("utf-8", "replace")
        message = shorten(_ERRORS[self.api](reply.json_or_none(), text)) or f"HTTP {reply.http_status}"
        auth = reply.http_status in (401, 403)
        if auth:
            message = key_rejected(self.label, self.endpoint.key_env, reply.http_status, message)
        else:
            message = f"{self.model}: HTTP {reply.http_status}: {message}"
        if reply.retries:
            message += f" (after {len(reply.retries)} retries)"
        return ChatError("http_error", scrub_text(message, self._key), reply.retries,
                         http_status=reply.http_status, auth=auth)


class AnthropicChat(OpenAIChat):
    """The chat model asked over Anthropic's Messages API: its own name in error lines."""

    label = "Anthropic Messages"


class GeminiChat(OpenAIChat):
    """The chat model asked over Gemini's API: its own name in error lines."""

    label = "Gemini"


def chat_class(api: str) -> type[OpenAIChat]:
    """The adapter class of a model API (one engine, each API named as itself in its errors)."""
    return {"anthropic": AnthropicChat, "gemini": GeminiChat}.get(api, OpenAIChat)
