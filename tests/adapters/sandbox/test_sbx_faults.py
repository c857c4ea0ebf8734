"""Every fault kind happens as specified, on every route, by marker or by FaultPlan."""

from __future__ import annotations

import json
import time

import anyio
import httpx
import pytest

from searchtrace.adapters.sandbox import FaultPlan, parse_rates
from searchtrace.adapters.sandbox._faults import find_markers
from tests.adapters.sandbox.harness import HEADERS, app_client

ROUTES = ["brave", "tavily", "firecrawl", "jina", "chat"]
QUERY = "founding year Athletic"


async def call(client: httpx.AsyncClient, route: str, marker: str = "", accept_json: bool = True) -> httpx.Response:
    """One request with `marker` where that route reads it (query, URL or last message)."""
    q = f"{QUERY} {marker}".strip()
    if route == "brave":
        return await client.get("/brave/res/v1/web/search", params={"q": q, "count": 3}, headers=HEADERS["brave"])
    if route == "tavily":
        return await client.post("/tavily/search", json={"query": q, "max_results": 3}, headers=HEADERS["tavily"])
    if route == "firecrawl":
        return await client.post("/firecrawl/v2/search", json={"query": q, "limit": 3}, headers=HEADERS["firecrawl"])
    if route == "jina":
        headers = {"Accept": "application/json"} if accept_json else {}
        return await client.get(f"/jina/https://faults.sandbox.test/page?{marker}", headers=headers)
    return await client.post("/openai/v1/chat/completions", headers=HEADERS["chat"],
                             json={"model": "sandbox-agent", "messages": [{"role": "user", "content": f"What is the founding year of Elmwyn Athletic? {marker}"}]})


def test_marker_syntax() -> None:
    assert [(m.kind, m.limit) for m in find_markers("a !fault:429x2 b !fault:timeout !fault:500x")] == [
        ("429", 2), ("timeout", None), ("500", None)]
    assert parse_rates(["429=0.5,timeout=0.1", "slow=1"]) == {"429": 0.5, "timeout": 0.1, "slow": 1.0}
    with pytest.raises(ValueError):
        parse_rates(["nope=1"])


@pytest.mark.anyio
@pytest.mark.parametrize("route", ROUTES)
async def test_status_faults_with_provider_bodies(client: httpx.AsyncClient, route: str) -> None:
    ok = await call(client, route)
    assert ok.status_code == 200 and ok.json()
    for kind in ("429", "500", "503", "401"):
        r = await call(client, route, f"!fault:{kind}")
        assert r.status_code == int(kind), (route, kind)
        body = r.json()
        assert (r.headers.get("retry-after") == "1") == (kind == "429")
        if route == "brave":
            assert body["type"] == "ErrorResponse" and body["error"]["status"] == int(kind)
        elif route == "tavily":
            assert isinstance(body["detail"]["error"], str)
        elif route == "firecrawl":
            assert body["success"] is False and body["error"]
        elif route == "jina":
            assert body["code"] == int(kind) and body["data"] is None and body["readableMessage"]
        else:
            assert set(body["error"]) == {"message", "type", "param", "code"}


@pytest.mark.anyio
@pytest.mark.parametrize("route", ROUTES)
async def test_body_faults(client: httpx.AsyncClient, route: str) -> None:
    malformed = await call(client, route, "!fault:malformed")
    assert malformed.status_code == 200
    with pytest.raises(ValueError):
        json.loads(malformed.content)
    truncated = await call(client, route, "!fault:truncatedx1")
    whole = await call(client, route, "!fault:truncatedx1")  # the second attempt of the same request succeeds
    assert truncated.status_code == 200 and whole.status_code == 200
    with pytest.raises(ValueError):
        json.loads(truncated.content)
    assert whole.content.startswith(truncated.content) and len(truncated.content) < len(whole.content)
    t0 = time.monotonic()
    slow = await call(client, route, "!fault:slow")
    assert slow.status_code == 200 and slow.json() and time.monotonic() - t0 >= 0.25


@pytest.mark.anyio
@pytest.mark.parametrize("route", ROUTES)
async def test_timeout_hangs_until_cancelled(route: str) -> None:
    async with app_client() as c:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.2):
                await call(c, route, "!fault:timeout")
        assert time.monotonic() - t0 < 60  # a hang guard, not a tolerance: uncancelled, the fault hangs for an hour
    async with app_client(hang_s=0.05) as c:  # a short hang ends as a gateway timeout
        assert (await call(c, route, "!fault:timeout")).status_code == 504


@pytest.mark.anyio
@pytest.mark.parametrize("route", ROUTES)
async def test_first_n_attempts_fail_then_succeed(client: httpx.AsyncClient, route: str) -> None:
    statuses = [(await call(client, route, "!fault:503x2")).status_code for _ in range(4)]
    assert statuses == [503, 503, 200, 200]


@pytest.mark.anyio
async def test_oversized_streams_three_megabytes(client: httpx.AsyncClient) -> None:
    for accept_json in (False, True):
        async with client.stream("GET", "/jina/https://faults.sandbox.test/!fault:oversized/big",
                                 headers={"Accept": "application/json"} if accept_json else {}) as r:
            assert r.status_code == 200 and "content-length" not in r.headers
            n = 0
            async for chunk in r.aiter_raw():
                n += len(chunk)
        assert n == 3 * 1024 * 1024
    other = await call(client, "brave", "!fault:oversized")  # Jina only
    assert other.status_code == 200


@pytest.mark.anyio
async def test_fault_plan_is_deterministic_and_retries_draw_afresh() -> None:
    plan = FaultPlan(seed=7, rates={"500": 0.3, "429": 0.2}, routes=frozenset({"tavily", "chat"}))
    runs = []
    for _ in range(2):
        async with app_client(faults=plan) as c:
            statuses = []
            for i in range(40):
                r = await c.post("/tavily/search", json={"query": f"q{i % 20}"}, headers=HEADERS["tavily"])
                statuses.append(r.status_code)
            brave = [(await call(c, "brave")).status_code for _ in range(10)]
            runs.append(statuses)
            assert brave == [200] * 10  # route not in the plan
    assert runs[0] == runs[1]
    assert set(runs[0]) == {200, 429, 500}
    assert runs[0][:20] != runs[0][20:]  # the second attempt of each query is a fresh draw
    with pytest.raises(ValueError):
        FaultPlan(seed=1, rates={"bogus": 1.0})
