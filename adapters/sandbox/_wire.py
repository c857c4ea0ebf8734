"""The Jina Reader and OpenAI chat bodies the sandbox sends (success and error); see research/providers.md.

Each search provider's bodies live in its own module (adapters/providers/<name>.py).
"""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters._persona import EPOCH, digest, jina_error, stable_uuid
from searchtrace.adapters.sandbox._corpus import Page

__all__ = ["EPOCH", "digest", "encode", "jina_error", "stable_uuid"]

_enc = msgspec.json.Encoder()


def encode(obj: Any) -> bytes:
    return _enc.encode(obj)


# ---------------------------------------------------------------- Jina Reader

def jina_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def jina_text(page: Page, url: str, warning: str | None = None) -> str:
    head = f"Title: {page.title}\n\nURL Source: {url}\n\nPublished Time: {page.published}T00:00:00.000Z\n\n"
    if warning:
        head += f"Warning: {warning}\n\n"
    return head + "Markdown Content:\n" + page.body


def jina_json(page: Page, url: str, warning: str | None = None) -> dict[str, Any]:
    tokens = jina_tokens(page.body)
    data: dict[str, Any] = {"title": page.title, "description": page.description, "url": url,
                            "content": page.body, "publishedTime": f"{page.published}T00:00:00.000Z",
                            "metadata": {"lang": "en", "viewport": "width=device-width, initial-scale=1"},
                            "usage": {"tokens": tokens}}
    if warning:
        data["warning"] = warning
    return {"code": 200, "status": 20000, "data": data, "meta": {"usage": {"tokens": tokens}}}


JINA_401 = ("AuthenticationFailedError", 40103, "Invalid API key, please get a new one from https://jina.ai")


# ---------------------------------------------------------------- OpenAI chat completions

def chat_completion(*, key: str, model: str, content: str | None, tool_calls: list[dict[str, Any]] | None,
                    prompt_tokens: int, completion_tokens: int, reasoning_tokens: int, cached_tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-{digest(key, n=29)}",
        "object": "chat.completion",
        "created": EPOCH,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_sandbox01",
    }


def openai_error(message: str, type_: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


OPENAI_401 = ("Incorrect API key provided: ********. You can find your API key at "
              "https://platform.openai.com/account/api-keys.")
OPENAI_429 = ("Rate limit reached for sandbox-agent in organization org-sandbox on requests per min (RPM): "
              "Limit 60, Used 60, Requested 1. Please try again in 1s. Visit "
              "https://platform.openai.com/account/rate-limits to learn more.")


# ---------------------------------------------------------------- OpenAI Responses API

def response_object(*, key: str, model: str, request: dict[str, Any], text: str | None,
                    tool_calls: list[dict[str, Any]], prompt_tokens: int, completion_tokens: int,
                    reasoning_tokens: int, cached_tokens: int) -> dict[str, Any]:
    """A completed `response` object: a reasoning item when the model reasoned, its message, its function calls.

    Request fields the reply echoes (instructions, tools, tool_choice, previous_response_id ...) come from
    `request`, as OpenAI echoes them."""
    output: list[dict[str, Any]] = []
    if reasoning_tokens:
        output.append({"id": f"rs_{digest(key, 'rs', n=48)}", "type": "reasoning", "summary": []})
    if text is not None:
        output.append({"id": f"msg_{digest(key, 'msg', n=48)}", "type": "message", "status": "completed",
                       "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]})
    for i, call in enumerate(tool_calls):
        fn = call["function"]
        output.append({"id": f"fc_{digest(key, 'fc', str(i), n=48)}", "type": "function_call", "status": "completed",
                       "arguments": fn["arguments"], "call_id": call["id"], "name": fn["name"]})
    text_cfg = request.get("text")
    fmt: dict[str, Any] = text_cfg if isinstance(text_cfg, dict) else {}
    return {
        "id": f"resp_{digest(key, 'resp', n=48)}",
        "object": "response",
        "created_at": EPOCH,
        "status": "completed",
        "background": False,
        "completed_at": EPOCH + 1,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": {"effort": "medium" if reasoning_tokens else None, "summary": None},
        "service_tier": "default",
        "store": request.get("store", True),
        "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium", **fmt},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": {
            "input_tokens": prompt_tokens,
            "input_tokens_details": {"cached_tokens": cached_tokens, "cache_write_tokens": 0},
            "output_tokens": completion_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "user": None,
        "metadata": request.get("metadata") or {},
    }
