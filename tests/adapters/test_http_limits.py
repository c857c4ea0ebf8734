"""The per-endpoint client: explicit timeouts, aiohttp underneath for real HTTP, rate and concurrency limits."""

from __future__ import annotations

import time
from functools import partial

import anyio
import httpx
import pytest

from searchtrace.adapters import TRACE_HEADER, Endpoint, EndpointClient
from searchtrace.adapters._aiohttp_transport import AiohttpTransport
from searchtrace.adapters._http import make_limiter


@pytest.mark.anyio
async def test_real_endpoints_get_aiohttp_and_explicit_timeouts() -> None:
    ec = EndpointClient(Endpoint(base_url="https://api.example.com/v1", timeout_s=12.0, concurrency=6))
    try:
        assert isinstance(ec.transport, AiohttpTransport) and ec.transport.max_connections == 6
        request = ec._request("GET", "x", {}, None, None)
        assert request.extensions["timeout"] == {"connect": 10.0, "read": None, "write": 12.0, "pool": 12.0}
        assert str(request.url) == "https://api.example.com/v1/x"
    finally:
        await ec.aclose()


def test_limiter_has_no_first_second_burst() -> None:
    lim = make_limiter(Endpoint(base_url="http://x", rps=100.0))
    assert lim is not None and (lim.burst, lim.per_second) == (10.0, 100.0)  # 10 per 0.1 s
    slow = make_limiter(Endpoint(base_url="http://x", rps=2.0))
    assert slow is not None and (slow.burst, slow.per_second) == (1.0, 2.0)  # 1 per 0.5 s
    burst = make_limiter(Endpoint(base_url="http://x", rps=2.0, burst=5))
    assert burst is not None and (burst.burst, burst.per_second) == (5.0, 2.0)
    assert make_limiter(Endpoint(base_url="http://x", rps=0.0)) is None


@pytest.mark.anyio
async def test_rate_limit_spaces_requests() -> None:
    starts: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        starts.append(time.perf_counter())
        return httpx.Response(200, json={})

    ep = Endpoint(base_url="http://x", rps=20.0, concurrency=16, timeout_s=5.0)
    client = EndpointClient(ep, httpx.MockTransport(handler))
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(lambda: client.call("GET", "a", what="t"))
    await client.aclose()
    assert len(starts) == 10
    assert sum(1 for s in starts if s - t0 < 0.09) <= 3  # bucket of 2 per 0.1 s, not 20 at once
    assert starts[-1] - t0 >= 0.3


@pytest.mark.anyio
async def test_concurrency_limit_and_trace_header() -> None:
    in_flight = peak = 0
    seen: list[str | None] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        seen.append(request.headers.get(TRACE_HEADER))
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.01)
        in_flight -= 1
        return httpx.Response(200, json={})

    client = EndpointClient(Endpoint(base_url="http://x", rps=0.0, concurrency=3), httpx.MockTransport(handler))
    async with anyio.create_task_group() as tg:
        for i in range(9):
            tg.start_soon(partial(client.call, "GET", "a", what="t", trace_id=f"tr{i}"))
        tg.start_soon(lambda: client.call("GET", "a", what="t"))
    await client.aclose()
    assert peak == 3
    assert sorted(s for s in seen if s) == [f"tr{i}" for i in range(9)] and seen.count(None) == 1
