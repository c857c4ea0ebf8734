"""The request path: the requests httpx.AsyncClient would build, straight to the transport, no cookies, httpx decodes."""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest
from aiohttp import web

from searchtrace.adapters import Endpoint, EndpointClient
from searchtrace.adapters._aiohttp_transport import AiohttpTransport
from searchtrace.adapters._http import USER_AGENT
from searchtrace.adapters.sandbox import free_port

CASES: list[tuple[str, str, dict[str, str], Any, Any]] = [
    ("GET", "/https://x.example/a b/ü?q=1", {"Accept": "application/json", "Authorization": "Bearer k"}, None, None),
    ("POST", "chat/completions", {"accept": "application/json", "user-agent": "me"}, None,
     {"model": "m", "messages": [{"role": "user", "content": "héllo"}]}),
    ("GET", "res/v1/web/search", {"X-Subscription-Token": "t"}, {"q": "a b&c", "count": 10}, None),
    ("POST", "search", {}, None, {}),
]


@pytest.mark.parametrize("method,path,headers,params,body", CASES)
def test_requests_are_what_httpx_async_client_builds(method: str, path: str, headers: dict[str, str], params: Any,
                                                     body: Any) -> None:
    ec = EndpointClient(Endpoint(base_url="https://api.example.com/v1"), httpx.MockTransport(lambda r: httpx.Response(200)))
    ours = ec._request(method, path, headers, params, body)
    timeout = httpx.Timeout(30.0, connect=10.0)
    ref = httpx.AsyncClient(base_url="https://api.example.com/v1/", headers={"User-Agent": USER_AGENT},
                            timeout=timeout).build_request(method, ec._base + path.lstrip("/"), headers=headers,
                                                           params=params, json=body)
    # the decodings httpx always has: httpx adds zstd / br to its default when optional packages are installed
    ref.headers["Accept-Encoding"] = "gzip, deflate"
    assert (ours.method, str(ours.url), ours.headers.raw, ours.content) == (
        ref.method, str(ref.url), ref.headers.raw, ref.content)
    # the attempt's deadline bounds reads, so no per-read timeout; connect and pool timeouts as the client's
    assert ours.extensions == {"timeout": {**ref.extensions["timeout"], "read": None}}


def test_parsed_urls_are_cached_and_equal_to_a_fresh_parse() -> None:
    ec = EndpointClient(Endpoint(base_url="https://api.example.com"), httpx.MockTransport(lambda r: httpx.Response(200)))
    text = "https://api.example.com/a b?x=ü"
    assert ec.parsed_url(text) is ec.parsed_url(text)
    assert ec.parsed_url(text) == httpx.URL(text)
    with pytest.raises(httpx.InvalidURL):
        ec.parsed_url("https://api.example.com/\x00")  # an invalid URL raises as httpx.URL does, uncached


@pytest.mark.anyio
async def test_calls_keep_no_cookies_follow_no_redirects_and_stop_once_closed() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/old":
            return httpx.Response(302, headers={"Location": "/new"})
        return httpx.Response(200, headers={"Set-Cookie": "s=1; Path=/"}, text="ok")

    ec = EndpointClient(Endpoint(base_url="http://h"), httpx.MockTransport(handler))
    r = await ec.call("GET", "a", what="t")
    assert (r.outcome, r.body, seen[-1].url.path) == ("ok", b"ok", "/a")
    await ec.call("GET", "a", what="t")
    assert "cookie" not in seen[-1].headers  # nothing kept between requests
    moved = await ec.call("GET", "old", what="t")
    assert (moved.outcome, moved.http_status, [q.url.path for q in seen[-1:]]) == ("http_error", 302, ["/old"])
    await ec.aclose()
    with pytest.raises(RuntimeError):
        await ec.call("GET", "a", what="t")


@pytest.mark.anyio
async def test_aiohttp_transport_over_loopback_leaves_decoding_to_httpx_and_keeps_no_cookies() -> None:
    page = b"decoded body " * 1000
    cookies: list[str | None] = []

    async def handle(request: web.Request) -> web.Response:
        cookies.append(request.headers.get("Cookie"))
        resp = web.Response(body=gzip.compress(page), headers={"Content-Encoding": "gzip"})
        resp.set_cookie("s", "1")
        return resp

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        ec = EndpointClient(Endpoint(base_url=f"http://127.0.0.1:{port}", timeout_s=120.0, concurrency=2))
        assert isinstance(ec.transport, AiohttpTransport)
        first = await ec.call("GET", "p", what="t")
        second = await ec.call("GET", "p", what="t", read_cap=1000)
        await ec.aclose()
    finally:
        await runner.cleanup()
    assert (first.outcome, first.body, first.n_read) == ("ok", page, len(page))
    assert (second.outcome, second.body) == ("too_large", page[:1000])  # the cap counts decoded bytes
    assert cookies == [None, None]


@pytest.mark.anyio
async def test_a_refused_connection_is_a_retried_connect_error_not_a_timeout() -> None:
    port = free_port()  # nothing listens: refused
    ec = EndpointClient(Endpoint(base_url=f"http://127.0.0.1:{port}", timeout_s=60.0, max_retries=1, max_wait_s=0.01))
    reply = await ec.call("GET", "x", what="t")
    await ec.aclose()
    assert (reply.outcome, reply.http_status, [r.reason for r in reply.retries]) == ("http_error", None, ["transport"])
    assert reply.error is not None and reply.error.startswith("transport error: ConnectError: ClientConnectorError")
