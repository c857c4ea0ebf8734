"""One httpx transport per endpoint, its rate and concurrency limits, and the retrying call every adapter uses."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Self

import anyio
import httpx
import msgspec
import structlog

from searchtrace.adapters._keys import Secret, configured_secrets, read_key
from searchtrace.adapters._limiter import RateLimiter, domain_limiter
from searchtrace.adapters._retry import backoff, retry_reason, stated_wait
from searchtrace.adapters._types import TRACE_HEADER, Endpoint, RetryInfo

log = structlog.get_logger("searchtrace.adapters")

USER_AGENT = "searchtrace/0.1"
DEFAULT_READ_CAP = 16 * 1024 * 1024  # search and chat bodies; the fetch backend sets its own (2 MB)
_URL_CACHE = 256  # parsed request URLs kept per endpoint
_ERROR_PEEK = 4096  # bytes of an error body looked at to decide on a retry

Outcome = Literal["ok", "http_error", "timeout", "bad_response", "too_large"]


@dataclass
class Reply:
    """How one logical call ended, after its retries: outcome, status, body (partial when too large)."""

    outcome: Outcome
    http_status: int | None = None
    body: bytes = b""
    headers: httpx.Headers | None = None
    error: str | None = None  # transport-level message (timeouts, refused connections); never a header
    n_read: int = 0  # body bytes read from the wire (decoded)
    latency_ms: float = 0.0  # the whole call: queueing, every attempt, backoff sleeps
    provider_ms: float = 0.0  # the final attempt: request handed to the transport -> last body byte read
    queue_ms: float = 0.0  # waiting for our own concurrency slot and rate limiter, all attempts
    retries: list[RetryInfo] = field(default_factory=list)
    final: bool = False  # a local fault (e.g. an invalid URL): retrying cannot help

    def json_or_none(self) -> Any:
        """The body decoded as JSON, or None when it is not JSON (error bodies may be HTML or plain text)."""
        try:
            return msgspec.json.decode(self.body)
        except (msgspec.DecodeError, RecursionError):  # not JSON, or nested deeper than can be followed
            return None


def make_limiter(endpoint: Endpoint) -> RateLimiter | None:
    """A leaky bucket of rps/10 per 0.1 s (no first-second burst; docs/concepts/performance.md), or `burst` when set; an endpoint
    naming a quota domain paces through the domain's one limiter (rps is the domain's rate R)."""
    if endpoint.rps <= 0:
        return None
    if endpoint.quota:
        return domain_limiter(endpoint.quota, endpoint.rps)
    return RateLimiter(endpoint.rps, float(endpoint.burst) if endpoint.burst > 0 else None)


def default_headers() -> list[tuple[str, str]]:
    """What httpx.AsyncClient sends on every request (decodings httpx always has), with our User-Agent."""
    return [("Accept", "*/*"), ("Accept-Encoding", "gzip, deflate"), ("Connection", "keep-alive"),
            ("User-Agent", USER_AGENT)]


def default_transport(endpoint: Endpoint) -> httpx.AsyncBaseTransport:
    """aiohttp underneath for real hosts, a keep-alive pool sized to the endpoint's concurrency."""
    # imported lazily: aiohttp is heavy and tests inject transports
    from searchtrace.adapters._aiohttp_transport import AiohttpTransport

    return AiohttpTransport(max(1, endpoint.concurrency))


def _body_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The decoded body: an identity body is the transport's stream itself (no decoder, chunker or context)."""
    if "content-encoding" in response.headers or not isinstance(response.stream, httpx.AsyncByteStream):
        return response.aiter_bytes()
    return response.stream.__aiter__()


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


class EndpointClient:
    """One endpoint's transport and limits; `call` does one request with timeouts, read cap and retries.

    It builds each `httpx.Request` itself and hands it to the transport's `handle_async_request` (httpx's public
    transport API): our endpoints authenticate by key headers, follow no redirects and keep no cookies, so an
    AsyncClient's auth flow, redirect loop, hooks and cookie jar would be per-request work for nothing (issue #5).
    Any `httpx.AsyncBaseTransport` plugs in: aiohttp for real hosts, ASGI for the sandbox, mock and replay ones.
    """

    def __init__(self, endpoint: Endpoint, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.endpoint = endpoint
        self.transport = transport if transport is not None else default_transport(endpoint)
        self._base = str(httpx.URL(endpoint.base_url.rstrip("/") + "/"))  # absolute URLs: one parse per request
        self._headers = default_headers()
        # no per-read timeout: the attempt's deadline (timeout_s, from before the send) always comes first, and a
        # read timeout costs aiohttp a timer reset on every packet received
        timeout = httpx.Timeout(endpoint.timeout_s, connect=min(endpoint.timeout_s, 10.0))
        self._timeout = {**timeout.as_dict(), "read": None}
        self._urls: dict[str, httpx.URL] = {}
        self._rate = make_limiter(endpoint)
        # a semaphore that skips the scheduling checkpoint when a slot is free (every attempt then awaits I/O)
        self._slots = anyio.Semaphore(max(1, endpoint.concurrency), fast_acquire=True)
        self._closed = False

    @property
    def limiter(self) -> RateLimiter | None:
        """The endpoint's rate limiter (None: unlimited); `set_rate` on it changes the pace (a quota share)."""
        return self._rate

    async def aclose(self) -> None:
        self._closed = True
        await self.transport.aclose()

    def parsed_url(self, text: str) -> httpx.URL:
        """httpx.URL(text), from a small cache (a parse costs ~10 us; chat and search URLs repeat)."""
        urls = self._urls
        url = urls.get(text)
        if url is None:
            url = httpx.URL(text)
            if len(urls) >= _URL_CACHE:
                urls.clear()
            urls[text] = url
        return url

    async def call(
        self,
        method: str,
        path: str,
        *,
        what: str,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        json: Any = None,
        trace_id: str | None = None,
        read_cap: int = DEFAULT_READ_CAP,
        accept: Callable[[bytes], bool] | None = None,
        content: bytes | None = None,
    ) -> Reply:
        """Send the request, retrying 429 / 5xx / timeouts / transport errors with capped backoff.

        `accept` checks a 2xx body; one it refuses (malformed or truncated JSON) is retried as `bad_body`.
        The Reply's latency_ms is the whole call; provider_ms the final attempt on the wire; queue_ms the waits
        for our own concurrency and rate limits over all attempts (backoff sleeps are in neither, see retries).
        `content`: a body of bytes instead of `json` (a file upload, its Content-Type in `headers`).
        """
        if self._closed:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        hdrs = dict(headers or {})
        if trace_id is not None:
            hdrs[TRACE_HEADER] = trace_id
        started = time.perf_counter()
        retries: list[RetryInfo] = []
        queued = 0.0
        while True:
            reply = await self._attempt(method, path, hdrs, params, json, read_cap, content)
            queued += reply.queue_ms
            reason, wait_hint = self._retry_decision(reply)
            if reason is None and accept is not None and reply.outcome == "ok" and not accept(reply.body):
                reason = "bad_body"
            if reason is None or len(retries) >= self.endpoint.max_retries:
                break
            wait = backoff(len(retries) + 1, cap_s=self.endpoint.max_wait_s, stated_s=wait_hint)
            retries.append(RetryInfo(what=what, attempt=len(retries) + 1, reason=reason, wait_s=wait))
            log.info("retrying", what=what, attempt=len(retries), reason=reason, wait_s=round(wait, 3))
            await anyio.sleep(wait)
        reply.retries = retries
        reply.queue_ms = queued
        reply.latency_ms = _ms(started)
        return reply

    def _retry_decision(self, reply: Reply) -> tuple[str | None, float | None]:
        if reply.final:
            return None, None
        if reply.outcome == "timeout":
            return "timeout", None
        if reply.outcome in ("http_error", "bad_response") and reply.http_status is None:
            return "transport", None  # refused / reset before any status: a new attempt may work
        if reply.outcome != "http_error":
            return None, None
        peek = reply.body[:_ERROR_PEEK].decode("utf-8", "replace")
        reason = retry_reason(reply.http_status, peek)
        if reason is None:
            return None, None
        return reason, stated_wait(reply.headers, reply.json_or_none(), peek)

    def _request(self, method: str, path: str, headers: dict[str, str], params: Any, json: Any,
                 content: bytes | None = None) -> httpx.Request:
        """The request httpx.AsyncClient.build_request makes of our call (its default headers overridden by ours)."""
        own = {k.lower() for k in headers}
        merged = [kv for kv in self._headers if kv[0].lower() not in own]
        merged += headers.items()
        url = self.parsed_url(self._base + path.lstrip("/"))
        return httpx.Request(method, url, params=params, headers=merged, json=json, content=content,
                             extensions={"timeout": dict(self._timeout)})

    async def _attempt(
        self, method: str, path: str, headers: dict[str, str], params: Any, json: Any, read_cap: int,
        content: bytes | None = None,
    ) -> Reply:
        """One attempt under the concurrency and rate limits, bounded by a deadline (ASGI has no timeouts)."""
        try:
            request = self._request(method, path, headers, params, json, content)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
            return Reply("http_error", None, error=f"invalid request: {exc}", final=True)
        queued = time.perf_counter()
        async with self._slots:
            if self._rate is not None:
                await self._rate.acquire()
            sent = time.perf_counter()
            reply = await self._exchange(request, read_cap)
            reply.provider_ms = _ms(sent)
            reply.queue_ms = (sent - queued) * 1000.0
            return reply

    async def _exchange(self, request: httpx.Request, read_cap: int) -> Reply:
        """Send the request and read its body up to `read_cap`; transport faults become outcomes."""
        status: int | None = None
        got = 0
        # the cancel scope anyio.fail_after would make, without its two generator context managers
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.endpoint.timeout_s)
        try:
            with scope:
                response = await self.transport.handle_async_request(request)
                try:
                    status = response.status_code
                    buf = bytearray()
                    async for chunk in _body_chunks(response):
                        buf += chunk
                        got = len(buf)
                        if got > read_cap:
                            return Reply("too_large", status, bytes(buf[:read_cap]), response.headers,
                                         f"body larger than {read_cap} bytes; stopped reading", got)
                finally:
                    await response.aclose()
                body = bytes(buf)
                outcome: Outcome = "ok" if 200 <= status < 300 else "http_error"
                return Reply(outcome, status, body, response.headers, None, len(body))
            raise TimeoutError  # reached only when the deadline cancelled the scope
        except (TimeoutError, httpx.TimeoutException):
            return Reply("timeout", status, error=f"no complete answer within {self.endpoint.timeout_s:g} s",
                         n_read=got)
        except httpx.HTTPError as exc:
            if status is not None:  # headers came, the body broke off: a truncated answer
                return Reply("bad_response", status, error=f"body cut off: {type(exc).__name__}", n_read=got)
            # a request no server will take (scheme, a header aiohttp refuses): another attempt cannot help
            final = isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError)
            return Reply("http_error", None, error=f"transport error: {type(exc).__name__}: {exc}", final=final)


class OwnsClient:
    """An adapter with its endpoint, its key and one EndpointClient: `async with` it, or `aclose()` it when done."""

    label: ClassVar[str]  # how messages name the provider ("Brave")

    def __init__(
        self,
        endpoint: Endpoint,
        transport: httpx.AsyncBaseTransport | None,
        key: Secret | None,
        key_fallback: str | None,
        *,
        key_required: bool = True,
    ) -> None:
        """`key`, else the one in `endpoint.key_env`, else `key_fallback`; MissingKey when none and `key_required`."""
        self.endpoint = endpoint
        self._key = key if key is not None else read_key(self.label, endpoint.key_env, required=key_required,
                                                         fallback=key_fallback)
        self._http = EndpointClient(endpoint, transport)

    def secrets(self) -> list[Secret]:
        """This adapter's key and every other configured key: what to scrub from anything parsed out of a reply."""
        return configured_secrets(self._key)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()


def quota_limiter(adapter: object) -> tuple[str, RateLimiter] | None:
    """The quota domain an adapter's endpoint names and the limiter pacing it (docs/how-to/scale.md: a worker paces at its lease's
    share through it), or None for an adapter without both (no `quota`, an unlimited rate, or not built here)."""
    if not isinstance(adapter, OwnsClient):
        return None
    limiter = adapter._http.limiter
    return (adapter.endpoint.quota, limiter) if adapter.endpoint.quota and limiter is not None else None
