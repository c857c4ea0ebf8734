"""HTTP responses the sandbox sends: JSON bodies, provider-style fault replies, hangs and endless pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.responses import Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from searchtrace.adapters.sandbox import wire

OVERSIZED_BYTES = 3 * 1024 * 1024
_CHUNK = 64 * 1024


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(wire.encode(body), status_code=status, headers=headers, media_type="application/json")


class Hang(Response):
    """A reply that never comes (until `seconds` pass): ends early when the client disconnects or is cancelled."""

    def __init__(self, seconds: float) -> None:
        super().__init__(b"upstream timed out", status_code=504)
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = False
        with anyio.move_on_after(self.seconds):
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    nonlocal gone
                    while True:
                        message: Message = await receive()
                        if message["type"] == "http.disconnect":
                            gone = True
                            tg.cancel_scope.cancel()
                            return

                tg.start_soon(watch)
                await anyio.sleep(self.seconds)
                tg.cancel_scope.cancel()
        if not gone:
            await super().__call__(scope, receive, send)


async def _oversized_chunks(head: bytes, tail: bytes) -> AsyncIterator[bytes]:
    line = b"Lorem sandbox ipsum: this paragraph repeats to make a page far larger than any read cap.\n\n"
    block = line * (_CHUNK // len(line) + 1)
    yield head
    sent = len(head)
    while sent < OVERSIZED_BYTES - len(tail):
        chunk = block[: min(_CHUNK, OVERSIZED_BYTES - len(tail) - sent)]
        sent += len(chunk)
        yield chunk
        await anyio.sleep(0)  # a checkpoint: a client that stops reading cancels the rest
    yield tail


def oversized(url: str, as_json: bool) -> StreamingResponse:
    """A 3 MB Jina page, streamed in 64 KiB chunks without a Content-Length."""
    if as_json:
        head = b'{"code":200,"status":20000,"data":{"title":"A very large page","url":' + wire.encode(url) + b',"content":"'
        return StreamingResponse(_oversized_chunks(head, b'"}}'), media_type="application/json")
    head = f"Title: A very large page\n\nURL Source: {url}\n\nMarkdown Content:\n".encode()
    return StreamingResponse(_oversized_chunks(head, b"The end.\n"), media_type="text/plain; charset=utf-8")


MALFORMED = b'{"type": "search", "results": [{"title": "half a record",, }]'


def mangle(response: Response, kind: str) -> Response:
    """`malformed`: a 200 whose JSON does not parse; `truncated`: the real body cut in the middle."""
    body = bytes(response.body)
    media = response.media_type or "application/json"
    if kind == "malformed":
        if media.startswith("text/plain"):
            html = b"<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>checking</body></html>"
            return Response(html, status_code=200, media_type="text/html")
        return Response(MALFORMED, status_code=200, media_type=media)
    return Response(body[: max(1, len(body) // 2)], status_code=200, media_type=media)


RETRY_HEADERS = {"Retry-After": "1"}


def fault_reply(route: str, kind: str, key: str) -> Response:
    """The provider's own error reply for an HTTP fault kind (429 / 500 / 503 / 401)."""
    status = int(kind)
    headers = dict(RETRY_HEADERS) if status == 429 else {}
    if route == "brave":
        if status == 429:
            return json_response(wire.brave_rate_limited(key), 429, {**headers, **wire.BRAVE_RATE_HEADERS})
        if status == 401:
            return json_response(wire.brave_token_invalid(401, key), 401)
        code = "INTERNAL_ERROR" if status == 500 else "SERVICE_UNAVAILABLE"
        return json_response(wire.brave_error(status, code, "Something went wrong, please try again later.",
                                              {"component": "web_search"}, key), status)
    if route == "tavily":
        msg = {429: wire.TAVILY_429, 401: wire.TAVILY_401, 500: "Internal Server Error",
               503: "Service Unavailable"}[status]
        return json_response(wire.tavily_error(msg), status, headers)
    if route == "firecrawl":
        msg = {429: wire.FIRECRAWL_429, 401: wire.FIRECRAWL_401,
               500: f"An unexpected error occurred. Please contact help@firecrawl.com for help. Your exception ID is {wire.digest(key, n=32)}",
               503: "Service Unavailable"}[status]
        return json_response(wire.firecrawl_error(msg), status, headers)
    if route == "jina":
        jina: dict[int, tuple[str, int, str]] = {
            429: ("RateLimitTriggeredError", 42903, "Per IP rate limit exceeded (20 RPM)"),
            401: wire.JINA_401,
            500: ("InternalServerError", 50000, "Internal server error"),
            503: ("ServiceUnavailableError", 50301, "Service temporarily unavailable, please try again later"),
        }
        jname, jcode, jmsg = jina[status]
        return json_response(wire.jina_error(status, jname, jcode, jmsg), status, headers)
    if route in _MORE:
        return _more_fault(route, status, key, headers)
    if status == 429:
        return json_response(wire.openai_error(wire.OPENAI_429, "requests", "rate_limit_exceeded"), 429,
                             {**headers, "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
                              "x-ratelimit-reset-requests": "1s"})
    if status == 401:
        return json_response(wire.openai_error(wire.OPENAI_401, "invalid_request_error", "invalid_api_key"), 401)
    if status == 500:
        return json_response(wire.openai_error("The server had an error while processing your request. Sorry about that!",
                                               "server_error", None), 500)
    return json_response(wire.openai_error("The engine is currently overloaded, please try again later.",
                                           "server_error", None), 503)


_MORE = ("exa", "perplexity", "serpapi", "serper", "parallel", "youcom", "linkup", "jina_search")


def _more_fault(route: str, status: int, key: str, headers: dict[str, str]) -> Response:
    """The SPEC §14 providers' own replies for an injected 429 / 401 / 500 / 503 (research/providers2.md)."""
    from searchtrace.adapters.sandbox import wire_more as w

    text = {429: "Rate limit exceeded", 401: "Invalid API key", 500: "Internal server error",
            503: "Service temporarily unavailable"}[status]
    body: object
    if route == "exa":
        tag = {429: "RATE_LIMIT_EXCEEDED", 401: "INVALID_API_KEY", 500: "INTERNAL_ERROR", 503: "SERVICE_OVERLOADED"}
        body = w.exa_error(tag[status], text, key)
    elif route == "perplexity":
        kind = {429: "rate_limit_exceeded", 401: "invalid_api_key", 500: "api_error", 503: "api_error"}[status]
        body = w.perplexity_error(w.PERPLEXITY_401 if status == 401 else text, kind, status)
    elif route == "serpapi":
        body = w.serpapi_error({429: w.SERPAPI_THROUGHPUT, 401: w.SERPAPI_401}.get(status, text))
    elif route == "serper":
        body = w.serper_error({401: "Unauthorized."}.get(status, text), status)
    elif route == "parallel":
        body = w.parallel_error(text + ".", key)
    elif route == "youcom":
        body = {"detail": {429: "Too Many Requests", 401: "Invalid or expired API key"}.get(status, text)}
        if status == 429:
            headers = {**headers, **w.YOUCOM_RATE_HEADERS, "X-RateLimit-Remaining": "0"}
    elif route == "linkup":
        body = w.linkup_error(status, {429: "TOO_MANY_REQUESTS", 401: "UNAUTHORIZED", 500: "INTERNAL_SERVER_ERROR",
                                       503: "SERVICE_UNAVAILABLE"}[status], text)
    else:
        jina: dict[int, tuple[str, int]] = {429: ("RateLimitTriggeredError", 42903),
                                            401: ("AuthenticationFailedError", 40103),
                                            500: ("InternalServerError", 50000), 503: ("ServiceUnavailableError", 50301)}
        body = wire.jina_error(status, jina[status][0], jina[status][1], text)
    return json_response(body, status, headers)


def quota_reply(route: str, key: str) -> Response:
    """Each provider's own out-of-credit reply; the status says little (research/providers*.md), the body tells."""
    from searchtrace.adapters.sandbox import wire_more as w

    replies: dict[str, tuple[object, int]] = {
        "brave": (wire.brave_error(429, "QUOTA_LIMITED", "Request quota limit exceeded for plan",
                                   {"plan": "Free", "quota_limit": 2000, "quota_current": 2000}, key), 429),
        "tavily": (wire.tavily_error("This request exceeds your plan's set usage limit. Please upgrade your plan or "
                                     "contact support@tavily.com"), 432),
        "firecrawl": (wire.firecrawl_error("Payment required to access this resource."), 402),
        "exa": (w.exa_error("NO_MORE_CREDITS", "You have exceeded your credits limit", key), 402),
        "perplexity": (w.perplexity_error("You exceeded your current quota, please check your plan and billing "
                                          "details.", "insufficient_quota", 401), 401),
        "serpapi": (w.serpapi_error(w.SERPAPI_429), 429),
        "serper": (w.serper_error("Not enough credits", 400), 400),
        "parallel": (w.parallel_error("Insufficient credit in account, please check your plan and billing settings.",
                                      key), 402),
        "youcom": ({"error": "payment_required", "message": "Your account has no remaining API credits.",
                    "upgrade_url": "https://you.com/platform/billing", "limit": 20000, "used": 20000,
                    "period": "lifetime", "reset_at": None}, 402),
        "linkup": (w.linkup_error(429, "INSUFFICIENT_FUNDS_CREDITS", "Insufficient funds credits"), 429),
        "jina_search": (wire.jina_error(402, "InsufficientBalanceError", 40203,
                                        "Account balance not enough to run this query, please recharge."), 402),
        "jina": (wire.jina_error(402, "InsufficientBalanceError", 40203,
                                 "Account balance not enough to run this query, please recharge."), 402),
    }
    body, status = replies.get(route, (wire.openai_error(
        "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota",
        "insufficient_quota"), 429))
    return json_response(body, status)
