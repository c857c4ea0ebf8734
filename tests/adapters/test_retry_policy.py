"""Retry decisions and waits: stated waits (headers, body) honoured and capped; only 429 / 5xx / timeouts retried."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import anyio
import httpx
import pytest

from searchtrace.adapters import ChatError, JinaFetcher, OpenAIChat, TavilySearch
from searchtrace.adapters._retry import backoff, retry_reason, stated_wait
from tests.adapters.support import FIXTURES, Recorder, fast_endpoint


def test_stated_wait_sources() -> None:
    assert stated_wait(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert stated_wait(httpx.Headers({"Retry-After": "3"})) == 3.0
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (stated_wait(httpx.Headers({"retry-after": when})) or 0) <= 31
    assert stated_wait(None, None, "Please try again in 644ms. Visit") == 0.644
    assert stated_wait(None, None, "or please retry after 1s, resets at Sat") == 1.0
    assert stated_wait(None, {"error": {"retry_after_seconds": 7}}) == 7.0
    assert stated_wait(httpx.Headers({}), {}, "nothing here") is None
    reset = str(int(time.time()) + 20)  # You.com: a Unix time, used when no Retry-After came
    assert 18 <= (stated_wait(httpx.Headers({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})) or 0) <= 21
    assert stated_wait(httpx.Headers({"Retry-After": "2", "X-RateLimit-Reset": reset})) == 2.0
    assert stated_wait(httpx.Headers({"X-RateLimit-Reset": "1, 1419704"})) is None  # Brave's per-window form


def test_retry_reasons() -> None:
    assert retry_reason(429, "Rate limit reached") == "429"
    assert retry_reason(429, '{"error": {"code": "insufficient_quota"}}') is None
    assert retry_reason(429, '"code": "QUOTA_LIMITED"') is None
    assert retry_reason(500) == retry_reason(503) == "5xx"
    assert [retry_reason(s) for s in (400, 401, 402, 404, 408, 422, 432)] == [None] * 7


def test_backoff_is_capped_and_grows() -> None:
    assert backoff(1, cap_s=5, stated_s=2.0) == 2.0
    assert backoff(1, cap_s=0.5, stated_s=60.0) == 0.5
    waits = [backoff(a, cap_s=100.0) for a in (1, 2, 3, 4)]
    assert 0.25 <= waits[0] <= 0.5 and 2.0 <= waits[3] <= 4.0
    assert backoff(30, cap_s=3.0) <= 3.0


def _script(*statuses: int) -> Recorder:
    def answer(_req: httpx.Request, n: int) -> httpx.Response:
        status = statuses[min(n, len(statuses)) - 1]
        body: dict[str, Any] = {"results": []} if status == 200 else {"detail": {"error": f"status {status}"}}
        return httpx.Response(status, json=body)
    return Recorder(answer)


@pytest.mark.anyio
async def test_5xx_then_success() -> None:
    rec = _script(500, 503, 200)
    async with TavilySearch(fast_endpoint("http://t", None), transport=rec.transport, key_fallback="k") as t:
        resp = await t.search("q")
    assert resp.status == "ok" and len(rec.requests) == 3
    assert [(r.what, r.attempt, r.reason) for r in resp.retries] == [("search:tavily", 1, "5xx"),
                                                                       ("search:tavily", 2, "5xx")]


@pytest.mark.anyio
async def test_retries_are_bounded_by_max_retries() -> None:
    rec = _script(502)
    async with TavilySearch(fast_endpoint("http://t", None, max_retries=3), transport=rec.transport,
                            key_fallback="k") as t:
        resp = await t.search("q")
    assert (resp.status, resp.http_status, len(rec.requests), len(resp.retries)) == ("http_error", 502, 4, 3)
    assert resp.error == "HTTP 502: status 502"


@pytest.mark.anyio
async def test_timeouts_are_retried_and_reported() -> None:
    calls = 0

    async def slow(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        await anyio.sleep(10)
        return httpx.Response(200, json={"results": []})

    ep = fast_endpoint("http://t", None, timeout_s=0.1, max_retries=1)
    async with TavilySearch(ep, transport=httpx.MockTransport(slow), key_fallback="k") as t:
        resp = await t.search("q")
    # each 10 s answer was cut at the 0.1 s deadline (an answer waited for would be "ok"): counted, not timed
    assert resp.status == "timeout" and calls == 2 and [r.reason for r in resp.retries] == ["timeout"]


@pytest.mark.anyio
async def test_connection_errors_retry_then_http_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    async with JinaFetcher(fast_endpoint("http://j", None), transport=httpx.MockTransport(refuse)) as j:
        resp = await j.fetch("https://example.org/")
    assert resp.status == "http_error" and resp.http_status is None
    assert [r.reason for r in resp.retries] == ["transport", "transport"]
    assert resp.error is not None and "ConnectError" in resp.error


@pytest.mark.anyio
async def test_chat_error_after_retries_carries_them() -> None:
    rec = _script(500)
    async with OpenAIChat(fast_endpoint("http://o/v1", None), "m", transport=rec.transport, key_fallback="k") as c:
        with pytest.raises(ChatError) as info:
            await c.complete([{"role": "user", "content": "x"}])
    assert info.value.status == "http_error" and info.value.http_status == 500 and len(info.value.retries) == 2
    assert "after 2 retries" in str(info.value)


@pytest.mark.anyio
async def test_malformed_search_bodies_are_bad_response_chat_bodies_are_retried() -> None:
    for body in (b"{not json", b'{"results": [{"url": "https://a.b/", "tit'):
        rec = Recorder(lambda _r, _n, b=body: httpx.Response(200, content=b))  # type: ignore[misc]
        async with TavilySearch(fast_endpoint("http://t", None), transport=rec.transport, key_fallback="k") as t:
            resp = await t.search("q")
        assert (resp.status, len(rec.requests), resp.raw) == ("bad_response", 1, body)
    # a garbled chat body is not an answer: retried (reason bad_body), then a bad_response ChatError
    rec = Recorder(lambda _r, _n: httpx.Response(200, content=b"<html>"))
    async with OpenAIChat(fast_endpoint("http://o/v1", None), "m", transport=rec.transport, key_fallback="k") as c:
        with pytest.raises(ChatError) as info:
            await c.complete([{"role": "user", "content": "x"}])
    assert info.value.status == "bad_response" and len(rec.requests) == 3
    assert [r.reason for r in info.value.retries] == ["bad_body", "bad_body"]
    # and a good body on the next attempt is used
    ok = (FIXTURES / "openai_chat_tool_call.json").read_bytes()
    rec = Recorder(lambda _r, n: httpx.Response(200, content=b'{"id": "x", "cho' if n == 1 else ok))
    async with OpenAIChat(fast_endpoint("http://o/v1", None), "m", transport=rec.transport, key_fallback="k") as c:
        resp = await c.complete([{"role": "user", "content": "x"}])
    assert len(rec.requests) == 2 and resp.tool_calls and [r.reason for r in resp.retries] == ["bad_body"]


@pytest.mark.anyio
async def test_an_unusable_url_is_an_error_not_an_exception() -> None:
    rec = Recorder(lambda _r, _n: httpx.Response(200, json={}))
    async with JinaFetcher(fast_endpoint("http://j", None), transport=rec.transport) as j:
        resp = await j.fetch("https://exa\x00mple.org/\x7f")
    assert (resp.status, resp.retries, rec.requests) == ("http_error", [], [])
    assert resp.error is not None and resp.error.startswith("invalid request")
