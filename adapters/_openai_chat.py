"""OpenAI-compatible chat completions with tool calling (OpenAI, Moonshot Kimi, the sandbox)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import httpx
import msgspec
import structlog

from searchtrace.adapters._errors import ChatError, key_rejected
from searchtrace.adapters._http import OwnsClient, Reply
from searchtrace.adapters._keys import Secret, json_headers, scrub_bytes, scrub_parsed, scrub_text
from searchtrace.adapters._search_base import shorten
from searchtrace.adapters._types import ChatResponse, Endpoint, EndpointSpec, Limits
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
Tokens = Annotated[int, msgspec.Meta(ge=0, le=10**12)]


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


def _parses(body: bytes) -> bool:
    """A 2xx chat body we can use; a malformed or truncated one is worth another attempt (it was not an answer)."""
    try:
        parse_completion(body)
    except (ValueError, TypeError, RecursionError, msgspec.DecodeError, msgspec.ValidationError):
        return False
    return True


class OpenAIChat(OwnsClient):
    """Chat completions for one model at one endpoint; raises ChatError once retries are exhausted."""

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
    ) -> None:
        self.model = model
        self.name = model
        self.params: dict[str, Any] = dict(params or {})
        super().__init__(endpoint, transport, key, key_fallback)

    def __repr__(self) -> str:
        return f"OpenAIChat(model={self.model!r}, base_url={self.endpoint.base_url!r})"

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        trace_id: str | None = None,
    ) -> ChatResponse:
        """One completion; tool calls are read from message.tool_calls (finish_reason may say "stop")."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.params}
        if tools:
            body["tools"] = tools
        if response_format is not None:
            body["response_format"] = response_format
        headers = json_headers(self._key)
        reply = await self._http.call("POST", "chat/completions", what=f"chat:{self.model}", headers=headers,
                                      json=body, trace_id=trace_id, accept=_parses)
        if reply.outcome != "ok":
            error = self._error(reply)
            error.provider_ms, error.queue_ms = reply.provider_ms, reply.queue_ms
            raise error
        try:
            text, calls, usage, finish = scrub_parsed(parse_completion(reply.body), self.secrets())
        except (ValueError, TypeError, RecursionError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ChatError("bad_response", scrub_text(f"{self.model}: unusable body: {exc}", self._key),
                            reply.retries, http_status=reply.http_status) from None
        log.info("chat", model=self.model, tool_calls=len(calls), finish_reason=finish,
                 latency_ms=round(reply.latency_ms, 1), retries=len(reply.retries))
        return ChatResponse(text=text, tool_calls=calls, usage=usage, latency_ms=reply.latency_ms,
                            provider_ms=reply.provider_ms, queue_ms=reply.queue_ms,
                            finish_reason=finish, raw=scrub_bytes(reply.body, *self.secrets()), retries=reply.retries)

    def _error(self, reply: Reply) -> ChatError:
        status = "bad_response" if reply.outcome == "too_large" else reply.outcome
        if reply.outcome != "http_error" or reply.http_status is None:
            msg = f"{self.model}: {reply.error or reply.outcome}"
            return ChatError(status, scrub_text(msg, self._key), reply.retries, http_status=reply.http_status)
        text = reply.body.decode("utf-8", "replace")
        message = shorten(error_message(reply.json_or_none(), text)) or f"HTTP {reply.http_status}"
        auth = reply.http_status in (401, 403)
        if auth:
            message = key_rejected(self.label, self.endpoint.key_env, reply.http_status, message)
        else:
            message = f"{self.model}: HTTP {reply.http_status}: {message}"
        if reply.retries:
            message += f" (after {len(reply.retries)} retries)"
        return ChatError("http_error", scrub_text(message, self._key), reply.retries,
                         http_status=reply.http_status, auth=auth)
