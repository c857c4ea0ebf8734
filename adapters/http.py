"""One httpx client per endpoint, its rate and concurrency limits, and the retrying call every adapter uses."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx
import msgspec
import structlog
from aiolimiter import AsyncLimiter

from adapters.retry import backoff, retry_reason, stated_wait
from adapters.types import Endpoint, RetryInfo

log = structlog.get_logger("searchtrace.adapters")

TRACE_HEADER = "X-Searchtrace-Trace"
USER_AGENT = "searchtrace/0.1"
DEFAULT_READ_CAP = 16 * 1024 * 1024  # search and chat bodies; the fetch backend sets its own (2 MB)
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
    latency_ms: float = 0.0
    retries: list[RetryInfo] = field(default_factory=list)
    final: bool = False  # a local fault (e.g. an invalid URL): retrying cannot help

    def json(self) -> Any:
        """The body decoded as JSON (raises msgspec.DecodeError on a malformed body)."""
        return msgspec.json.decode(self.body)


def make_limiter(endpoint: Endpoint) -> AsyncLimiter | None:
    """A leaky bucket of rps/10 per 0.1 s (no first-second burst; perf.md §4), or `burst` when set."""
    if endpoint.rps <= 0:
        return None
    bucket = float(endpoint.burst) if endpoint.burst > 0 else max(1.0, endpoint.rps / 10.0)
    return AsyncLimiter(bucket, bucket / endpoint.rps)


def make_client(endpoint: Endpoint, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """An AsyncClient for one endpoint: explicit timeouts; aiohttp underneath for real HTTP, else `transport`."""
    timeout = httpx.Timeout(endpoint.timeout_s, connect=min(endpoint.timeout_s, 10.0))
    conns = max(1, endpoint.concurrency)
    limits = httpx.Limits(max_connections=conns, max_keepalive_connections=conns)
    if transport is None:
        # imported lazily: aiohttp is heavy and tests inject transports
        from httpx_aiohttp import AiohttpTransport

        transport = AiohttpTransport(limits=limits)
    return httpx.AsyncClient(
        base_url=endpoint.base_url.rstrip("/") + "/",
        timeout=timeout,
        limits=limits,
        transport=transport,
        headers={"User-Agent": USER_AGENT},
        follow_redirects=False,
    )


class EndpointClient:
    """Holds the endpoint's client and limiters; `call` does one request with timeouts, read cap and retries."""

    def __init__(self, endpoint: Endpoint, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.endpoint = endpoint
        self.client = make_client(endpoint, transport)
        self._base = str(self.client.base_url)  # ends in "/"; absolute URLs skip httpx's second parse per request
        self._rate = make_limiter(endpoint)
        self._slots = anyio.CapacityLimiter(max(1, endpoint.concurrency))

    async def aclose(self) -> None:
        await self.client.aclose()

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
    ) -> Reply:
        """Send the request, retrying 429 / 5xx / timeouts / transport errors with capped backoff."""
        hdrs = dict(headers or {})
        if trace_id is not None:
            hdrs[TRACE_HEADER] = trace_id
        started = time.perf_counter()
        retries: list[RetryInfo] = []
        while True:
            reply = await self._attempt(method, path, hdrs, params, json, read_cap)
            reason, wait_hint = self._retry_decision(reply)
            if reason is None or len(retries) >= self.endpoint.max_retries:
                break
            wait = backoff(len(retries) + 1, cap_s=self.endpoint.max_wait_s, stated_s=wait_hint)
            retries.append(RetryInfo(what=what, attempt=len(retries) + 1, reason=reason, wait_s=wait))
            log.info("retrying", what=what, attempt=len(retries), reason=reason, wait_s=round(wait, 3))
            await anyio.sleep(wait)
        reply.retries = retries
        reply.latency_ms = (time.perf_counter() - started) * 1000.0
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
        try:
            body = msgspec.json.decode(reply.body)
        except msgspec.DecodeError:
            body = None
        return reason, stated_wait(reply.headers, body, peek)

    async def _attempt(
        self, method: str, path: str, headers: dict[str, str], params: Any, json: Any, read_cap: int
    ) -> Reply:
        """One attempt under the concurrency and rate limits, bounded by anyio.fail_after (ASGI has no timeouts)."""
        async with self._slots:
            if self._rate is not None:
                await self._rate.acquire()
            status: int | None = None
            got = 0
            try:
                url = self._base + path.lstrip("/")
                request = self.client.build_request(method, url, headers=headers, params=params, json=json)
            except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
                return Reply("http_error", None, error=f"invalid request: {exc}", final=True)
            try:
                with anyio.fail_after(self.endpoint.timeout_s):
                    response = await self.client.send(request, stream=True)
                    try:
                        status = response.status_code
                        buf = bytearray()
                        async for chunk in response.aiter_bytes():
                            buf += chunk
                            got = len(buf)
                            if got > read_cap:
                                return Reply("too_large", status, bytes(buf[:read_cap]), response.headers,
                                             f"body larger than {read_cap} bytes; stopped reading", got)
                    finally:
                        await response.aclose()
            except (TimeoutError, httpx.TimeoutException):
                return Reply("timeout", status, error=f"no complete answer within {self.endpoint.timeout_s:g} s",
                             n_read=got)
            except httpx.HTTPError as exc:
                if status is not None:  # headers came, the body broke off: a truncated answer
                    return Reply("bad_response", status, error=f"body cut off: {type(exc).__name__}", n_read=got)
                return Reply("http_error", None, error=f"transport error: {type(exc).__name__}: {exc}")
            body = bytes(buf)
            outcome: Outcome = "ok" if 200 <= status < 300 else "http_error"
            return Reply(outcome, status, body, response.headers, None, len(body))
