"""HTTP responses the sandbox sends: JSON bodies, provider-style fault replies, hangs and endless pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.responses import Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

import searchtrace.adapters.sandbox._wire as wire
from searchtrace.adapters._persona import WireReply, retry_headers
from searchtrace.adapters._registry import search_provider_names, spec

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


def _reply(reply: WireReply) -> Response:
    return json_response(reply.body, reply.status, reply.headers)


def fault_reply(route: str, kind: str, key: str) -> Response:
    """The provider's own error reply for an HTTP fault kind (429 / 500 / 503 / 401)."""
    status = int(kind)
    headers = retry_headers(status)
    if route in search_provider_names():
        return _reply(spec(route).fault(status, key))
    if route == "jina":
        jina: dict[int, tuple[str, int, str]] = {
            429: ("RateLimitTriggeredError", 42903, "Per IP rate limit exceeded (20 RPM)"),
            401: wire.JINA_401,
            500: ("InternalServerError", 50000, "Internal server error"),
            503: ("ServiceUnavailableError", 50301, "Service temporarily unavailable, please try again later"),
        }
        jname, jcode, jmsg = jina[status]
        return json_response(wire.jina_error(status, jname, jcode, jmsg), status, headers)
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


def quota_reply(route: str, key: str) -> Response:
    """Each provider's own out-of-credit reply; the status says little (research/providers*.md), the body tells."""
    if route in search_provider_names():
        return _reply(spec(route).quota(key))
    if route == "jina":
        return json_response(wire.jina_error(402, "InsufficientBalanceError", 40203,
                                             "Account balance not enough to run this query, please recharge."), 402)
    return json_response(wire.openai_error(
        "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota",
        "insufficient_quota"), 429)
