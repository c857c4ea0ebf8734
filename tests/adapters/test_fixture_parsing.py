"""Every provider fixture in research/fixtures parses into the normalised schema or the right typed error."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from searchtrace.adapters import (
    BraveSearch,
    ChatError,
    FirecrawlSearch,
    JinaFetcher,
    OpenAIChat,
    SearchAdapter,
    SearchResponse,
    TavilySearch,
)
from searchtrace.adapters._search_base import join_surface
from tests.adapters.support import FIXTURES, fast_endpoint, fixture, serve_fixture


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BRAVE_API_KEY", "TAVILY_API_KEY", "FIRECRAWL_API_KEY", "JINA_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.setenv(var, "test-key-123")


async def _search(cls: type[SearchAdapter], name: str, status: int = 200, headers: dict[str, str] | None = None,
                  base: str = "http://provider") -> tuple[SearchResponse, int]:
    rec = serve_fixture(name, status, headers)
    key_env = {BraveSearch: "BRAVE_API_KEY", TavilySearch: "TAVILY_API_KEY", FirecrawlSearch: "FIRECRAWL_API_KEY"}[cls]
    async with cls(fast_endpoint(base, key_env), transport=rec.transport) as adapter:
        resp = await adapter.search("a query", trace_id="t-1")
    assert all(r.headers["X-Searchtrace-Trace"] == "t-1" for r in rec.requests)
    return resp, len(rec.requests)


# ------------------------------------------------------------------ Brave

@pytest.mark.anyio
async def test_brave_ok_joins_snippets_strips_tags_and_keeps_small_metadata() -> None:
    resp, n = await _search(BraveSearch, "brave_web_search_ok.json")
    assert (resp.status, n, resp.http_status) == ("ok", 1, 200)
    first, second = resp.hits
    assert [h.rank for h in resp.hits] == [1, 2]
    assert first.url == "https://www.nytimes.com" and first.domain == "www.nytimes.com"
    assert "<strong>" not in first.snippet and "The New York Times from more than 150" in first.snippet
    assert "New York Times CookingRecipes" in first.snippet  # extra snippets are part of the surface
    assert first.snippet.count("\n") == 2
    assert first.metadata == {"age": "1 week ago", "language": "en"}
    assert second.metadata["page_age"] == "2025-06-30T05:41:00"
    assert resp.raw == fixture("brave_web_search_ok.json")


@pytest.mark.anyio
async def test_brave_sends_the_paper_params() -> None:
    rec = serve_fixture("brave_web_search_ok.json")
    async with BraveSearch(fast_endpoint("http://b", "BRAVE_API_KEY"), transport=rec.transport) as b:
        await b.search("who won")
    req = rec.requests[0]
    assert req.url.path == "/res/v1/web/search"
    assert dict(req.url.params) == {"q": "who won", "country": "US", "search_lang": "en", "ui_lang": "en-US",
                                    "safesearch": "moderate", "count": "10", "extra_snippets": "true"}
    assert req.headers["X-Subscription-Token"] == "test-key-123"


@pytest.mark.anyio
async def test_brave_rate_limit_headers_on_a_success() -> None:
    headers = {k: v for k, v in json.loads(fixture("brave_rate_limit_headers.json")).items() if not k.startswith("_")}
    resp, _ = await _search(BraveSearch, "brave_web_search_ok.json", headers=headers)
    assert resp.status == "ok" and len(resp.hits) == 2


@pytest.mark.anyio
async def test_brave_token_invalid_is_a_key_error_naming_the_variable() -> None:
    resp, n = await _search(BraveSearch, "brave_422_subscription_token_invalid.json", 422)
    assert (resp.status, resp.http_status, n) == ("http_error", 422, 1)
    assert resp.error is not None and "BRAVE_API_KEY" in resp.error and "Brave" in resp.error
    assert "The provided subscription token is invalid." in resp.error


@pytest.mark.anyio
async def test_brave_validation_keeps_the_field_message() -> None:
    resp, n = await _search(BraveSearch, "brave_422_validation.json", 422)
    assert (resp.status, n) == ("http_error", 1)
    assert resp.error is not None and "VALIDATION" in resp.error and "query.country" in resp.error
    assert "BRAVE_API_KEY" not in resp.error


@pytest.mark.anyio
async def test_brave_rate_limited_is_retried_quota_is_not() -> None:
    resp, n = await _search(BraveSearch, "brave_429_rate_limited.json", 429)
    assert (resp.status, n) == ("http_error", 3)
    assert [r.reason for r in resp.retries] == ["429", "429"] and [r.attempt for r in resp.retries] == [1, 2]
    assert resp.error is not None and "Request rate limit exceeded for plan" in resp.error
    resp, n = await _search(BraveSearch, "brave_429_quota_limited.json", 429)
    assert (resp.status, n, resp.retries) == ("http_error", 1, [])
    assert resp.error is not None and "QUOTA_LIMITED" in resp.error


@pytest.mark.anyio
async def test_brave_without_web_key_is_zero_hits() -> None:
    body = json.loads(fixture("brave_web_search_ok.json"))
    del body["web"]
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json=body))
    async with BraveSearch(fast_endpoint("http://b", "BRAVE_API_KEY"), transport=transport) as b:
        resp = await b.search("q")
    assert resp.status == "ok" and resp.hits == []


# ------------------------------------------------------------------ Tavily

@pytest.mark.anyio
@pytest.mark.parametrize("name,n_hits", [("tavily_search_ok.json", 1), ("tavily_search_minimal_ok.json", 1),
                                         ("tavily_search_news_ok.json", 1)])
async def test_tavily_ok(name: str, n_hits: int) -> None:
    resp, _ = await _search(TavilySearch, name)
    assert resp.status == "ok" and len(resp.hits) == n_hits
    src = json.loads(fixture(name))["results"][0]
    hit = resp.hits[0]
    assert (hit.url, hit.snippet, hit.rank) == (src["url"], src["content"], 1)
    assert hit.domain == httpx.URL(src["url"]).host
    assert hit.metadata["score"] == src["score"]
    assert hit.metadata.get("published_date") == src.get("published_date")


@pytest.mark.anyio
async def test_tavily_sends_basic_general_no_raw_content() -> None:
    rec = serve_fixture("tavily_search_ok.json")
    async with TavilySearch(fast_endpoint("http://t", "TAVILY_API_KEY"), transport=rec.transport) as t:
        await t.search("messi")
    req = rec.requests[0]
    assert (req.method, req.url.path) == ("POST", "/search")
    sent = json.loads(req.content)
    assert sent["query"] == "messi" and sent["search_depth"] == "basic" and sent["topic"] == "general"
    assert sent["max_results"] == 10 and sent["include_raw_content"] is False
    assert req.headers["Authorization"] == "Bearer test-key-123" and "api_key" not in sent


@pytest.mark.anyio
@pytest.mark.parametrize("name,status,retried,auth", [
    ("tavily_400_query_too_long.json", 400, False, False),
    ("tavily_401.json", 401, False, True),
    ("tavily_429.json", 429, True, False),
    ("tavily_432.json", 432, False, False),
    ("tavily_433.json", 433, False, False),
])
async def test_tavily_errors(name: str, status: int, retried: bool, auth: bool) -> None:
    resp, n = await _search(TavilySearch, name, status)
    assert (resp.status, resp.http_status) == ("http_error", status)
    assert n == (3 if retried else 1) and len(resp.retries) == (2 if retried else 0)
    assert resp.error is not None and json.loads(fixture(name))["detail"]["error"] in resp.error
    assert ("TAVILY_API_KEY" in resp.error) is auth


# ------------------------------------------------------------------ Firecrawl

@pytest.mark.anyio
@pytest.mark.parametrize("name,urls", [
    ("firecrawl_v1_search_ok.json", ["https://firecrawl.dev/", "https://firecrawl.dev/guides/web-scraping/",
                                     "https://docs.firecrawl.dev/"]),
    ("firecrawl_v1_search_scrape_ok.json", ["https://firecrawl.dev/"]),
    ("firecrawl_v1_search_empty.json", []),
    ("firecrawl_v2_search_ok.json", ["https://www.firecrawl.dev/", "https://github.com/firecrawl/firecrawl"]),
    ("firecrawl_v2_search_web_only_ok.json", ["https://www.firecrawl.dev/"]),
])
async def test_firecrawl_v1_and_v2_shapes(name: str, urls: list[str]) -> None:
    resp, _ = await _search(FirecrawlSearch, name)
    assert resp.status == "ok"
    assert [h.url for h in resp.hits] == urls  # v2: web only, images and news are not web results
    data = json.loads(fixture(name))["data"]
    items = data if isinstance(data, list) else data["web"]
    # with scrape options the page markdown is part of the surface (docs/how-to/providers.md)
    assert [h.snippet for h in resp.hits] == [join_surface([i["description"], i.get("markdown")]) for i in items]
    assert [h.rank for h in resp.hits] == list(range(1, len(urls) + 1))
    if isinstance(data, dict):
        assert [h.metadata["position"] for h in resp.hits] == [i["position"] for i in items]


@pytest.mark.anyio
async def test_firecrawl_request_web_search_scrape_off() -> None:
    rec = serve_fixture("firecrawl_v2_search_ok.json")
    async with FirecrawlSearch(fast_endpoint("http://f", "FIRECRAWL_API_KEY"), transport=rec.transport) as f:
        await f.search("q")
    assert rec.requests[0].url.path == "/v2/search"
    assert json.loads(rec.requests[0].content) == {"query": "q", "sources": ["web"], "limit": 10}
    rec = serve_fixture("firecrawl_v1_search_ok.json")
    async with FirecrawlSearch(fast_endpoint("http://f", "FIRECRAWL_API_KEY"), params={"api": "v1"},
                               transport=rec.transport) as f:
        resp = await f.search("q")
    assert rec.requests[0].url.path == "/v1/search" and json.loads(rec.requests[0].content) == {"query": "q",
                                                                                                "limit": 10}
    assert len(resp.hits) == 3


@pytest.mark.anyio
@pytest.mark.parametrize("name,status,retried,auth,needle", [
    ("firecrawl_400_bad_request.json", 400, False, False, "Unrecognized key in body"),
    ("firecrawl_401.json", 401, False, True, "Unauthorized: Invalid token"),
    ("firecrawl_402.json", 402, False, False, "Insufficient credits"),
    ("firecrawl_408_timeout.json", 408, False, False, "SCRAPE_TIMEOUT: Scrape timed out"),
    ("firecrawl_429.json", 429, True, False, "Rate limit exceeded"),
])
async def test_firecrawl_errors(name: str, status: int, retried: bool, auth: bool, needle: str) -> None:
    resp, n = await _search(FirecrawlSearch, name, status)
    assert (resp.status, resp.http_status) == ("http_error", status)
    assert n == (3 if retried else 1)
    assert resp.error is not None and needle in resp.error
    assert ("FIRECRAWL_API_KEY" in resp.error) is auth


# ------------------------------------------------------------------ Jina Reader

async def _fetch(name: str, status: int = 200, content_type: str = "application/json") -> tuple:
    rec = serve_fixture(name, status, content_type=content_type)
    async with JinaFetcher(fast_endpoint("http://jina", "JINA_API_KEY"), transport=rec.transport) as j:
        resp = await j.fetch("https://example.com/", trace_id="t-9")
    return resp, rec


@pytest.mark.anyio
async def test_jina_json_and_text_modes_give_the_same_markdown() -> None:
    resp_json, rec = await _fetch("jina_reader_ok.json")
    resp_text, _ = await _fetch("jina_reader_ok_text.txt", content_type="text/plain; charset=utf-8")
    expected = json.loads(fixture("jina_reader_ok.json"))["data"]["content"]
    assert resp_json.status == resp_text.status == "ok"
    assert resp_json.content == expected and resp_text.content.strip() == expected
    assert resp_json.n_tokens == len(expected) // 4 and resp_json.n_bytes == len(fixture("jina_reader_ok.json"))
    assert str(rec.requests[0].url) == "http://jina/https://example.com/"
    assert rec.requests[0].headers["Authorization"] == "Bearer test-key-123"
    assert rec.requests[0].headers["X-Searchtrace-Trace"] == "t-9"


@pytest.mark.anyio
@pytest.mark.parametrize("name,status,retried", [
    ("jina_402_insufficient_balance.json", 402, False),
    ("jina_422_assertion_failure.json", 422, False),
    ("jina_429_rate_limit.json", 429, True),
    ("jina_451_security_compromise.json", 451, False),
])
async def test_jina_errors(name: str, status: int, retried: bool) -> None:
    resp, rec = await _fetch(name, status)
    assert (resp.status, resp.http_status, resp.content) == ("http_error", status, None)
    assert len(rec.requests) == (3 if retried else 1)
    assert resp.error is not None and json.loads(fixture(name))["readableMessage"] in resp.error


# ------------------------------------------------------------------ chat (OpenAI, Kimi)

async def _chat(name: str, status: int = 200, headers: dict[str, str] | None = None, **kw: object):
    rec = serve_fixture(name, status, headers)
    async with OpenAIChat(fast_endpoint("http://oa/v1", "OPENAI_API_KEY"), "gpt-x", transport=rec.transport) as c:
        try:
            return await c.complete([{"role": "user", "content": "hi"}], trace_id="t-2", **kw), rec  # type: ignore[arg-type]
        except ChatError as exc:
            return exc, rec


@pytest.mark.anyio
async def test_openai_tool_call_and_usage() -> None:
    resp, rec = await _chat("openai_chat_tool_call.json")
    assert resp.text is None and resp.finish_reason == "tool_calls"
    assert [(t.call_id, t.name, json.loads(t.arguments)) for t in resp.tool_calls] == [
        ("call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "web_search", {"query": "Edinburgh weather today", "max_results": 5})]
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.reasoning_tokens,
            resp.usage.cached_tokens) == (76, 24, 0, 0)
    assert rec.requests[0].url.path == "/v1/chat/completions"


@pytest.mark.anyio
async def test_parallel_tool_calls_without_prompt_details_default_to_zero() -> None:
    resp, _ = await _chat("openai_chat_parallel_tool_calls.json")
    assert [t.name for t in resp.tool_calls] == ["GetWeatherArgs", "get_stock_price"]
    assert resp.usage.cached_tokens == 0 and resp.usage.input_tokens == 149


@pytest.mark.anyio
async def test_json_mode_reply_and_cached_tokens() -> None:
    resp, _ = await _chat("openai_chat_json_schema_ok.json", response_format={"type": "json_object"})
    assert json.loads(resp.text)["answer"].startswith("Light rain")
    assert resp.tool_calls == [] and resp.usage.cached_tokens == 384


@pytest.mark.anyio
async def test_kimi_tool_call_ids_are_kept_verbatim() -> None:
    resp, _ = await _chat("kimi_chat_tool_call.json")
    assert [t.call_id for t in resp.tool_calls] == ["web_search:0"]
    assert resp.usage.input_tokens == 180


@pytest.mark.anyio
async def test_tool_calls_detected_even_when_finish_reason_is_stop() -> None:
    body = json.loads(fixture("openai_chat_tool_call.json"))
    body["choices"][0]["finish_reason"] = "stop"
    body["usage"] = {"prompt_tokens": 5, "completion_tokens": 2, "cached_tokens": 3}  # Moonshot v1 top level
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json=body))
    async with OpenAIChat(fast_endpoint("http://oa/v1", "OPENAI_API_KEY"), "m", transport=transport) as c:
        resp = await c.complete([{"role": "user", "content": "x"}])
    assert len(resp.tool_calls) == 1 and resp.finish_reason == "stop" and resp.usage.cached_tokens == 3


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["openai_chat_request_tool_call.json", "openai_chat_request_json_schema.json"])
async def test_request_bodies_have_the_documented_shape(name: str) -> None:
    req_doc = json.loads(fixture(name))
    rec = serve_fixture("openai_chat_tool_call.json")
    params = {k: v for k, v in req_doc.items() if k not in ("model", "messages", "tools", "response_format")}
    async with OpenAIChat(fast_endpoint("http://oa/v1", "OPENAI_API_KEY"), req_doc["model"], params=params,
                          transport=rec.transport) as c:
        await c.complete(req_doc["messages"], tools=req_doc.get("tools"), response_format=req_doc.get("response_format"))
    assert json.loads(rec.requests[0].content) == req_doc


@pytest.mark.anyio
@pytest.mark.parametrize("name,status,retried,auth,key_env_hint", [
    ("openai_401.json", 401, False, True, True),
    ("openai_429.json", 429, True, False, False),
    ("openai_429_insufficient_quota.json", 429, False, False, False),
    ("openai_429_request_too_large.json", 429, False, False, False),
    ("kimi_401.json", 401, False, True, True),
    ("kimi_400_content_filter.json", 400, False, False, False),
    ("kimi_429_rate_limit.json", 429, True, False, False),
])
async def test_chat_errors_raise_chat_error(name: str, status: int, retried: bool, auth: bool,
                                            key_env_hint: bool) -> None:
    exc, rec = await _chat(name, status)
    assert isinstance(exc, ChatError)
    assert (exc.status, exc.http_status, exc.auth) == ("http_error", status, auth)
    assert len(rec.requests) == (3 if retried else 1) and len(exc.retries) == (2 if retried else 0)
    assert json.loads(fixture(name))["error"]["message"] in exc.message
    assert ("OPENAI_API_KEY" in exc.message) is key_env_hint


@pytest.mark.anyio
async def test_openai_429_headers_set_the_wait() -> None:
    headers = {k: v for k, v in json.loads(fixture("openai_429_headers.json")).items() if not k.startswith("_")}
    rec = serve_fixture("openai_429.json", 429, headers)
    ep = fast_endpoint("http://oa/v1", "OPENAI_API_KEY", max_retries=1, max_wait_s=0.3)
    async with OpenAIChat(ep, "m", transport=rec.transport) as c:
        with pytest.raises(ChatError) as info:
            await c.complete([{"role": "user", "content": "x"}])
    # retry-after: 1 (header) beats the body's "644ms"; capped by max_wait_s
    assert [r.wait_s for r in info.value.retries] == [0.3]


def _provider_message(name: str) -> str:
    """The provider's own message in an error fixture, wherever that provider puts it."""
    body = json.loads(fixture(name))
    if name.startswith("brave"):
        return str(body["error"]["detail"])
    if name.startswith("tavily"):
        return str(body["detail"]["error"])
    if name.startswith("firecrawl"):
        return str(body["error"])
    if name.startswith("jina"):
        return str(body["readableMessage"])
    return str(body["error"]["message"])


_STATUS = re.compile(r"_(\d{3})(?:_|\.)")


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
async def test_every_fixture_parses_or_maps_to_its_error(name: str) -> None:
    """Each file in research/fixtures through its adapter: success bodies parse, error bodies keep their message."""
    m = _STATUS.search(name)
    status = int(m.group(1)) if m else 200
    headers: dict[str, str] = {}
    body_name = name
    if "headers" in name or "request" in name:  # header sets and request bodies: served with a success body
        doc = json.loads(fixture(name))
        headers = {k: v for k, v in doc.items() if not k.startswith("_") and isinstance(v, str)} if "headers" in name else {}
        body_name = {"brave": "brave_web_search_ok.json"}.get(name.split("_")[0], "openai_chat_tool_call.json")
        status = 200
    ctype = "text/plain" if name.endswith(".txt") else "application/json"
    rec = serve_fixture(body_name, status, headers, content_type=ctype)
    ep = fast_endpoint("http://p/v1", None, max_retries=1)
    prefix = name.split("_")[0]
    if prefix in ("openai", "kimi"):
        async with OpenAIChat(ep, "m", transport=rec.transport, key_fallback="k") as c:
            if status == 200:
                reply = await c.complete([{"role": "user", "content": "x"}])
                assert reply.tool_calls or reply.text
                return
            with pytest.raises(ChatError) as info:
                await c.complete([{"role": "user", "content": "x"}])
        assert info.value.http_status == status and _provider_message(name) in info.value.message
        return
    if prefix == "jina":
        async with JinaFetcher(ep, transport=rec.transport) as j:
            fetched = await j.fetch("https://example.com/")
        if status == 200:
            assert fetched.status == "ok" and fetched.content and "illustrative examples" in fetched.content
        else:
            assert (fetched.status, fetched.http_status) == ("http_error", status)
            assert fetched.error is not None and _provider_message(name) in fetched.error
        return
    cls = {"brave": BraveSearch, "tavily": TavilySearch, "firecrawl": FirecrawlSearch}[prefix]
    async with cls(ep, transport=rec.transport, key_fallback="k") as s:
        resp = await s.search("q")
    if status == 200:
        assert resp.status == "ok" and resp.raw == fixture(body_name)
        assert all(h.url and h.domain and h.rank == i for i, h in enumerate(resp.hits, start=1))
    else:
        assert (resp.status, resp.http_status) == ("http_error", status)
        assert resp.error is not None and _provider_message(name) in resp.error
