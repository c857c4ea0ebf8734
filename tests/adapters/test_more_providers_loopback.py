"""The eight docs/how-to/providers.md adapters against their sandbox personas over real HTTP on 127.0.0.1 (each provider at the
root of its own port): normalisation, the surface rule off and on, 429 retried, quota not retried, bad key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from searchtrace.adapters import Endpoint, SearchResponse, build_search, normalize_url
from searchtrace.adapters._keys import DEFAULT_KEY_ENV
from searchtrace.adapters.sandbox import Served, default_world, running_all

NEW = ("exa", "perplexity", "serpapi", "serper", "parallel", "youcom", "linkup", "jina_search")
QUESTION = "What is the founding year of Elmwyn Athletic?"
GOLD = "https://almanac-central.example/entries/elmwyn-athletic"
# params that put page text into the results, per provider that has such an option (docs/how-to/providers.md)
PAGE_TEXT: dict[str, dict[str, Any]] = {
    "exa": {"contents": {"highlights": True, "text": {"maxCharacters": 10_000}}},
    "youcom": {"extraction": {"extraction_mode": "full_page"}},
    "jina_search": {"content": True},
}


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with running_all() as s:
        yield s


async def _search(served: Served, name: str, query: str = QUESTION, *, key: str = "sandbox-key",
                  params: dict[str, Any] | None = None, monkeypatch: pytest.MonkeyPatch) -> SearchResponse:
    monkeypatch.setenv(DEFAULT_KEY_ENV[name], key)
    ep = Endpoint(base_url=served.urls[name], key_env=DEFAULT_KEY_ENV[name], rps=0.0, timeout_s=120.0, max_retries=2,
                  max_wait_s=0.02)
    async with build_search(name, ep, params=params) as adapter:
        return await adapter.search(query, trace_id=f"t-{name}")


@pytest.mark.anyio
@pytest.mark.parametrize("name", NEW)
async def test_normalised_results(served: Served, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    resp = await _search(served, name, monkeypatch=monkeypatch)
    assert (resp.status, resp.http_status, resp.error) == ("ok", 200, None)
    assert 5 <= len(resp.hits) <= 10 and [h.rank for h in resp.hits] == list(range(1, len(resp.hits) + 1))
    world = default_world()
    for h in resp.hits:
        page = world.page(h.url)
        assert page is not None and h.title == page.title and h.domain == normalize_url(h.url).split("/")[2]
        assert h.snippet.strip() and h.snippet == h.snippet.strip()
    assert GOLD in [h.url for h in resp.hits]
    assert resp.raw is not None and b"sandbox-key" not in resp.raw


@pytest.mark.anyio
@pytest.mark.parametrize("name", NEW)
async def test_page_text_is_off_by_default_and_in_the_surface_when_on(served: Served, name: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from searchtrace.adapters import SEARCH_PROVIDERS

    cls = SEARCH_PROVIDERS[name]
    assert cls.page_text(cls.default_params()) is False
    base = await _search(served, name, monkeypatch=monkeypatch)
    body = {h.url: default_world().page(h.url) for h in base.hits}
    whole = [h for h in base.hits if body[h.url] is not None and body[h.url].body.strip() in h.snippet]  # type: ignore[union-attr]
    assert whole == []  # no whole page in any default surface
    if name not in PAGE_TEXT:
        return
    params = {**cls.default_params(), **PAGE_TEXT[name]}
    assert cls.page_text(params) is True
    on = await _search(served, name, params=params, monkeypatch=monkeypatch)
    assert [h.url for h in on.hits] == [h.url for h in base.hits]
    for before, after in zip(base.hits, on.hits, strict=True):
        page = default_world().page(after.url)
        assert page is not None and page.body.strip()[:2000] in after.snippet  # the page text is what the agent sees
        assert len(after.snippet) > len(before.snippet)


@pytest.mark.anyio
@pytest.mark.parametrize("name", NEW)
async def test_rate_limit_retried_quota_not(served: Served, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    resp = await _search(served, name, f"{QUESTION} !fault:429x2", monkeypatch=monkeypatch)
    assert resp.status == "ok" and [r.reason for r in resp.retries] == ["429", "429"]
    quota = await _search(served, name, f"{QUESTION} !fault:quota", monkeypatch=monkeypatch)
    assert quota.status == "http_error" and quota.retries == [] and quota.error
    assert DEFAULT_KEY_ENV[name] not in quota.error  # out of credit is not a bad key


@pytest.mark.anyio
@pytest.mark.parametrize("name", NEW)
async def test_bad_key_is_named_by_its_variable(served: Served, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    resp = await _search(served, name, key="bad-secret-key", monkeypatch=monkeypatch)
    assert resp.status == "http_error" and resp.http_status in (401, 403) and resp.retries == []
    assert resp.error is not None and DEFAULT_KEY_ENV[name] in resp.error and "bad-secret-key" not in resp.error


@pytest.mark.anyio
async def test_every_own_port_url_works_for_searchtrace_adapters(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/how-to/providers.md: the per-provider URL `sandbox serve` prints works for the adapters too (the paper's three, Reader,
    chat), not only for official clients."""
    from searchtrace.adapters import build_chat, build_fetcher

    for name in ("brave", "tavily", "firecrawl"):
        resp = await _search(served, name, monkeypatch=monkeypatch)
        assert resp.status == "ok" and resp.hits, name
    monkeypatch.setenv("JINA_API_KEY", "sandbox-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sandbox-key")
    fast = {"rps": 0.0, "timeout_s": 5.0, "max_retries": 1, "max_wait_s": 0.02}
    async with build_fetcher("jina", Endpoint(base_url=served.urls["jina"], key_env="JINA_API_KEY", **fast),
                             cache_dir=None) as reader:
        page = await reader.fetch(GOLD)
    assert page.status == "ok" and page.content and "Elmwyn" in page.content
    async with build_chat("sandbox-agent", Endpoint(base_url=served.urls["openai"], key_env="OPENAI_API_KEY",
                                                    **fast)) as chat:
        reply = await chat.complete([{"role": "user", "content": QUESTION}])
    assert reply.text
