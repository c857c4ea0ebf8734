"""Building adapters by name: known names, base URLs from config over env over default, paper defaults."""

from __future__ import annotations

import pytest

import searchtrace.adapters as adapters
from searchtrace.adapters import (
    BraveSearch,
    ChatModel,
    Fetcher,
    FirecrawlSearch,
    SearchProvider,
    TavilySearch,
    build_chat,
    build_fetcher,
    build_search,
    default_endpoint,
    sandbox_endpoint,
)
from searchtrace.store import BadInput


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BRAVE_API_KEY", "TAVILY_API_KEY", "FIRECRAWL_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.setenv(var, "k-test")


def test_unknown_names_list_the_known_ones() -> None:
    known = "brave, exa, firecrawl, jina_search, linkup, parallel, perplexity, serpapi, serper, tavily, youcom"
    with pytest.raises(BadInput, match=rf"unknown search provider 'bing' \(known providers: {known}\)"):
        build_search("bing")
    with pytest.raises(BadInput, match="known fetch backends: jina"):
        build_fetcher("curl")
    with pytest.raises(BadInput, match="unknown endpoint"):
        default_endpoint("yahoo")


@pytest.mark.anyio
async def test_classes_and_protocols() -> None:
    built = [build_search(n) for n in ("brave", "tavily", "firecrawl")]
    assert [type(b) for b in built] == [BraveSearch, TavilySearch, FirecrawlSearch]
    assert all(isinstance(b, SearchProvider) for b in built)
    fetcher, chat = build_fetcher(), build_chat("gpt-x")
    assert isinstance(fetcher, Fetcher) and isinstance(chat, ChatModel) and chat.name == "gpt-x"
    for b in built:
        await b.aclose()
    await fetcher.aclose()
    await chat.aclose()


def test_paper_params_are_what_search_called_records() -> None:
    assert build_search("brave").params == {"country": "US", "search_lang": "en", "ui_lang": "en-US",
                                            "safesearch": "moderate", "count": 10, "extra_snippets": True}
    assert build_search("tavily").params["search_depth"] == "basic"
    assert build_search("tavily", params={"max_results": 5}).params["max_results"] == 5
    assert build_search("firecrawl").params == {"api": "v2", "sources": ["web"], "limit": 10}


def test_base_url_config_beats_env_beats_default(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {"brave": "https://api.search.brave.com", "tavily": "https://api.tavily.com",
                "firecrawl": "https://api.firecrawl.dev", "jina": "https://r.jina.ai",
                "openai": "https://api.openai.com/v1"}
    envs = {"brave": "SEARCHTRACE_BRAVE_BASE_URL", "tavily": "SEARCHTRACE_TAVILY_BASE_URL",
            "firecrawl": "SEARCHTRACE_FIRECRAWL_BASE_URL", "jina": "SEARCHTRACE_JINA_BASE_URL",
            "openai": "OPENAI_BASE_URL"}
    for name, var in envs.items():
        monkeypatch.delenv(var, raising=False)
        assert default_endpoint(name).base_url == expected[name]
        monkeypatch.setenv(var, f"http://127.0.0.1:9/{name}")
        assert default_endpoint(name).base_url == f"http://127.0.0.1:9/{name}"
        assert default_endpoint(name, base_url="http://config/x").base_url == "http://config/x"


def test_fetch_backend_defaults_and_sandbox_endpoints() -> None:
    jina = default_endpoint("jina")
    assert (jina.timeout_s, jina.concurrency, jina.key_env) == (15.0, 4, "JINA_API_KEY")
    assert default_endpoint("openai", key_env="MOONSHOT_API_KEY").key_env == "MOONSHOT_API_KEY"
    assert sandbox_endpoint("openai", "http://127.0.0.1:5/").base_url == "http://127.0.0.1:5/openai/v1"
    assert sandbox_endpoint("brave", "http://sandbox").base_url == "http://sandbox/brave"
    assert sandbox_endpoint("jina", "http://sandbox").concurrency == 4


def test_public_surface() -> None:
    for name in adapters.__all__:
        assert getattr(adapters, name) is not None
    assert {"normalize_url", "build_search", "ChatError", "SearchHit", "JinaFetcher"} <= set(adapters.__all__)


@pytest.mark.anyio
async def test_a_kind_can_run_under_another_name() -> None:
    a = build_search("brave", run_name="brave-eu")
    b = build_search("brave")
    assert (a.name, a.kind, b.name) == ("brave-eu", "brave", "brave")
    a.name = "renamed"  # the engine may also set it after building
    await a.aclose()
    await b.aclose()
