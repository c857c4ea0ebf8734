"""The real providers' response bodies (success and error), built from persona hits; see research/providers.md."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import msgspec

from searchtrace.adapters.sandbox.corpus import Page
from searchtrace.adapters.sandbox.personas import Hit
from searchtrace.adapters.urls import domain_of

EPOCH = 1767225600  # 2026-01-01T00:00:00Z: a fixed clock, so bodies are byte-identical across runs
_enc = msgspec.json.Encoder()
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


def encode(obj: Any) -> bytes:
    return _enc.encode(obj)


def stable_uuid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "sandbox:" + "|".join(parts)))


def digest(*parts: str, n: int = 24) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:n]


def _age(published: str) -> str:
    y, m, d = published.split("-")
    return f"{_MONTHS[int(m) - 1]} {int(d)}, {y}"


# ---------------------------------------------------------------- Brave

def brave_ok(query: str, hits: list[Hit], *, country: str = "us", more: bool = False) -> dict[str, Any]:
    results = []
    for h in hits:
        host = domain_of(h.url)
        path = h.url.split("://", 1)[1].partition("/")[2].split("?")[0].strip("/")
        r: dict[str, Any] = {
            "title": h.title,
            "url": h.url,
            "is_source_local": False,
            "is_source_both": False,
            "description": h.description,
            "page_age": f"{h.page.published}T00:00:00",
            "profile": {"name": h.page.site, "url": h.url, "long_name": host,
                        "img": f"https://imgs.search.brave.example/{digest(host, n=16)}/favicon"},
            "language": "en",
            "family_friendly": True,
            "type": "search_result",
            "subtype": "article" if h.page.kind in ("outdated", "distractor") else "generic",
            "is_live": False,
            "meta_url": {"scheme": "https", "netloc": host.removeprefix("www."), "hostname": host,
                         "favicon": f"https://imgs.search.brave.example/{digest(host, n=16)}/favicon",
                         "path": " › ".join([""] + path.split("/")).strip() if path else ""},
            "age": _age(h.page.published),
        }
        if h.extra_snippets:
            r["extra_snippets"] = h.extra_snippets
        results.append(r)
    body: dict[str, Any] = {
        "query": {"original": query, "show_strict_warning": False, "is_navigational": False,
                  "is_news_breaking": False, "spellcheck_off": True, "country": country, "bad_results": False,
                  "should_fallback": False, "postal_code": "", "city": "", "header_country": "",
                  "more_results_available": more, "state": ""},
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": i, "all": False} for i in range(len(hits))],
                  "top": [], "side": []},
        "type": "search",
    }
    if results:  # Brave omits `web` when there is no result
        body["web"] = {"type": "search", "results": results, "family_friendly": True}
    return body


BRAVE_RATE_HEADERS = {"X-RateLimit-Limit": "1, 15000", "X-RateLimit-Policy": "1;w=1, 15000;w=2592000",
                      "X-RateLimit-Remaining": "1, 14000", "X-RateLimit-Reset": "1, 1419704"}


def brave_error(status: int, code: str, detail: str, meta: dict[str, Any] | None = None, key: str = "") -> dict[str, Any]:
    return {"type": "ErrorResponse",
            "error": {"id": stable_uuid("brave", code, key), "status": status, "code": code, "detail": detail,
                      "meta": meta or {}},
            "time": EPOCH}


def brave_token_invalid(status: int, key: str = "") -> dict[str, Any]:
    """Brave's answer to a bad token: 422 live, 401 as an injected fault."""
    return brave_error(status, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.",
                       {"component": "authentication"}, key)


def brave_validation(loc: list[str], msg: str, input_: Any, key: str = "") -> dict[str, Any]:
    return brave_error(422, "VALIDATION", "Unable to validate request parameter(s)",
                       {"errors": [{"type": "missing" if input_ is None else "value_error", "loc": loc, "msg": msg,
                                    "input": input_}]}, key)


def brave_rate_limited(key: str = "") -> dict[str, Any]:
    return brave_error(429, "RATE_LIMITED", "Request rate limit exceeded for plan",
                       {"plan": "Free", "rate_limit": 1, "rate_current": 1, "quota_limit": 2000, "quota_current": 15,
                        "org_rate_limit": None, "org_rate_current": 0, "component": "rate_limiter"}, key)


# ---------------------------------------------------------------- Tavily

def tavily_ok(query: str, hits: list[Hit], *, raw: bool, topic: str, key: str, answer: str | None = None,
              favicon: bool = False, images: str = "", usage: int | None = None,
              auto: dict[str, Any] | None = None) -> dict[str, Any]:
    """Tavily's body; the documented optional parts (answer, favicons, images, usage, auto_parameters) when asked.

    `images`: "" none, "urls" a list of URLs, "described" objects with a description.
    """
    results = []
    for h in hits:
        r: dict[str, Any] = {"url": h.url, "title": h.title, "content": h.content, "score": h.score,
                             "raw_content": h.page.body if raw else None}
        if topic == "news":
            r["published_date"] = h.page.published
        if favicon:
            r["favicon"] = f"https://{domain_of(h.url)}/favicon.ico"
        results.append(r)
    pictures: list[Any] = [f"https://{domain_of(h.url)}/images/{digest(h.url, n=12)}.jpg" for h in hits[:3]]
    if images == "described":
        pictures = [{"url": u, "description": f"An image from {h.title}"} for u, h in zip(pictures, hits, strict=False)]
    body: dict[str, Any] = {"query": query, "follow_up_questions": None, "answer": answer,
                            "images": pictures if images else [], "results": results}
    if auto is not None:
        body["auto_parameters"] = auto
    body["response_time"] = round(0.4 + (int(digest(key, n=4), 16) % 900) / 1000, 2)
    if usage is not None:
        body["usage"] = {"credits": usage}
    body["request_id"] = stable_uuid("tavily", key)
    return body


def tavily_error(message: str) -> dict[str, Any]:
    return {"detail": {"error": message}}


TAVILY_401 = "Unauthorized: missing or invalid API key."
TAVILY_429 = "Your request has been blocked due to excessive requests. Please reduce rate of requests."


# ---------------------------------------------------------------- Firecrawl

def _fc_item(h: Hit, markdown: bool, position: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"url": h.url, "title": h.title, "description": h.description}
    if position:
        item["position"] = h.rank
    if markdown:
        item["markdown"] = h.page.body
        item["metadata"] = {"title": h.title, "description": h.page.description, "sourceURL": h.url,
                            "url": h.page.url, "statusCode": 200}
    return item


def firecrawl_v2_ok(hits: list[Hit], *, markdown: bool) -> dict[str, Any]:
    return {"success": True, "data": {"web": [_fc_item(h, markdown, True) for h in hits]},
            "creditsUsed": max(1, len(hits) if markdown else 1)}


def firecrawl_v1_ok(hits: list[Hit], *, markdown: bool) -> dict[str, Any]:
    if not hits:
        return {"success": True, "data": [], "warning": "No search results found"}
    return {"success": True, "data": [_fc_item(h, markdown, False) for h in hits]}


def firecrawl_error(message: str, code: str | None = None, details: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"success": False}
    if code:
        body["code"] = code
    body["error"] = message
    if details is not None:
        body["details"] = details
    return body


FIRECRAWL_401 = "Unauthorized: Invalid token"
FIRECRAWL_429 = ("Rate limit exceeded. Consumed (req/min): 20, Remaining (req/min): 0. Upgrade your plan at "
                 "https://firecrawl.dev/pricing for increased rate limits or please retry after 1s, resets at "
                 "Thu Jan 01 2026 00:01:00 GMT+0000 (Coordinated Universal Time)")


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


def jina_error(code: int, name: str, status: int, message: str) -> dict[str, Any]:
    return {"data": None, "code": code, "name": name, "status": status, "message": message,
            "readableMessage": f"{name}: {message}"}


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
