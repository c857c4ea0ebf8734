"""The lean request path: same requests as httpx builds, straight to the transport, no cookies, httpx decodes."""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest
from aiohttp import web
from httpx_aiohttp import AiohttpTransport

from searchtrace.adapters.aiohttp_transport import LeanAiohttpTransport
from searchtrace.adapters.http import EndpointClient, LeanAsyncClient, make_client
from searchtrace.adapters.sandbox.serve import free_port
from searchtrace.adapters.types import Endpoint

CASES: list[tuple[str, str, dict[str, str], Any, Any]] = [
    ("GET", "/https://x.example/a b/ü?q=1", {"Accept": "application/json", "Authorization": "Bearer k"}, None, None),
    ("POST", "chat/completions", {"accept": "application/json", "user-agent": "me"}, None,
     {"model": "m", "messages": [{"role": "user", "content": "héllo"}]}),
    ("GET", "res/v1/web/search", {"X-Subscription-Token": "t"}, {"q": "a b&c", "count": 10}, None),
    ("POST", "search", {}, None, {}),
]


@pytest.mark.parametrize("method,path,headers,params,body", CASES)
def test_requests_are_what_build_request_makes(method: str, path: str, headers: dict[str, str], params: Any,
                                               body: Any) -> None:
    ec = EndpointClient(Endpoint(base_url="https://api.example.com/v1"), httpx.MockTransport(lambda r: httpx.Response(200)))
    ours = ec._request(method, path, headers, params, body)
    ref = ec.client.build_request(method, ec._base + path.lstrip("/"), headers=headers, params=params, json=body)
    assert (ours.method, str(ours.url), ours.headers.raw, ours.content) == (
        ref.method, str(ref.url), ref.headers.raw, ref.content)
    # the attempt's deadline bounds reads, so no per-read timeout; connect and pool timeouts as the client's
    assert ours.extensions == {"timeout": {**ref.extensions["timeout"], "read": None}}


def test_parsed_urls_are_cached_and_equal_to_a_fresh_parse() -> None:
    client = make_client(Endpoint(base_url="https://api.example.com"), httpx.MockTransport(lambda r: httpx.Response(200)))
    text = "https://api.example.com/a b?x=ü"
    assert client.parsed_url(text) is client.parsed_url(text)
    assert client.parsed_url(text) == httpx.URL(text)
    with pytest.raises(httpx.InvalidURL):
        client.parsed_url("https://api.example.com/\x00")  # an invalid URL raises as httpx.URL does, uncached


@pytest.mark.anyio
async def test_lean_send_keeps_no_cookies_and_falls_back_for_auth_and_redirects() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/old":
            return httpx.Response(302, headers={"Location": "/new"})
        return httpx.Response(200, headers={"Set-Cookie": "s=1; Path=/"}, text="ok")

    async with LeanAsyncClient(base_url="http://h/", transport=httpx.MockTransport(handler)) as client:
        r = await client.get("a")
        assert (r.status_code, r.text, r.request.url.path) == (200, "ok", "/a")
        assert r.request.extensions["timeout"] == client.timeout.as_dict()
        await client.get("a")
        assert not client.cookies and "cookie" not in seen[-1].headers  # nothing kept between requests
        assert (await client.get("old")).status_code == 302  # no redirect followed by default
        assert (await client.get("old", follow_redirects=True)).url.path == "/new"  # AsyncClient.send's path
        await client.get("a", auth=("u", "p"))
        assert seen[-1].headers["authorization"].startswith("Basic ")
    with pytest.raises(RuntimeError):
        await client.get("a")


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
        ec = EndpointClient(Endpoint(base_url=f"http://127.0.0.1:{port}", timeout_s=5.0, concurrency=2))
        assert isinstance(ec.client._transport, LeanAiohttpTransport)
        first = await ec.call("GET", "p", what="t")
        second = await ec.call("GET", "p", what="t", read_cap=1000)
        await ec.aclose()
    finally:
        await runner.cleanup()
    assert (first.outcome, first.body, first.n_read) == ("ok", page, len(page))
    assert (second.outcome, second.body) == ("too_large", page[:1000])  # the cap counts decoded bytes
    assert cookies == [None, None]


@pytest.mark.anyio
async def test_aiohttp_errors_map_to_httpx_errors_as_httpx_aiohttp_maps_them() -> None:
    port = free_port()  # nothing listens: refused
    got = []
    for transport in (AiohttpTransport(limits=httpx.Limits(max_connections=2)), None):
        ec = EndpointClient(Endpoint(base_url=f"http://127.0.0.1:{port}", timeout_s=2.0, max_retries=1,
                                     max_wait_s=0.01), transport)
        reply = await ec.call("GET", "x", what="t")
        await ec.aclose()
        got.append((reply.outcome, reply.http_status, reply.error, [r.reason for r in reply.retries]))
    # httpx_aiohttp maps a refused connection to httpx.ConnectTimeout (its map's order), hence "timeout"
    assert got[0] == got[1] == ("timeout", None, "no complete answer within 2 s", ["timeout"])
