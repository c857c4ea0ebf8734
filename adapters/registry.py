"""Build a search provider, the fetch backend or a chat model by name, with endpoints from config and env."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx

from searchtrace.adapters import (
    brave,
    exa,
    firecrawl,
    jina,
    jina_search,
    linkup,
    openai_chat,
    parallel,
    perplexity,
    serpapi,
    serper,
    tavily,
    youcom,
)
from searchtrace.adapters.brave import BraveSearch
from searchtrace.adapters.exa import ExaSearch
from searchtrace.adapters.firecrawl import FirecrawlSearch
from searchtrace.adapters.jina import JinaFetcher
from searchtrace.adapters.jina_search import JinaSearch
from searchtrace.adapters.keys import DEFAULT_KEY_ENV
from searchtrace.adapters.linkup import LinkupSearch
from searchtrace.adapters.openai_chat import OpenAIChat
from searchtrace.adapters.parallel import ParallelSearch
from searchtrace.adapters.perplexity import PerplexitySearch
from searchtrace.adapters.search_base import SearchAdapter
from searchtrace.adapters.serpapi import SerpApiSearch
from searchtrace.adapters.serper import SerperSearch
from searchtrace.adapters.tavily import TavilySearch
from searchtrace.adapters.types import Endpoint
from searchtrace.adapters.urls import base_url_problem
from searchtrace.adapters.youcom import YouComSearch
from searchtrace.store.errors import BadInput

SEARCH_PROVIDERS: dict[str, type[SearchAdapter]] = {
    "brave": BraveSearch,
    "tavily": TavilySearch,
    "firecrawl": FirecrawlSearch,
    "exa": ExaSearch,
    "perplexity": PerplexitySearch,
    "serpapi": SerpApiSearch,
    "serper": SerperSearch,
    "parallel": ParallelSearch,
    "youcom": YouComSearch,
    "linkup": LinkupSearch,
    "jina_search": JinaSearch,
}
PAPER_PROVIDERS = ("brave", "tavily", "firecrawl")  # the paper's three: the default demo and sandbox personas
FETCHERS = ("jina",)

# name -> (default base URL, env var overriding it, sandbox sub-path)
BASE_URLS: dict[str, tuple[str, str, str]] = {
    "brave": (brave.DEFAULT_BASE_URL, "SEARCHTRACE_BRAVE_BASE_URL", "brave"),
    "tavily": (tavily.DEFAULT_BASE_URL, "SEARCHTRACE_TAVILY_BASE_URL", "tavily"),
    "firecrawl": (firecrawl.DEFAULT_BASE_URL, "SEARCHTRACE_FIRECRAWL_BASE_URL", "firecrawl"),
    "exa": (exa.DEFAULT_BASE_URL, "SEARCHTRACE_EXA_BASE_URL", "exa"),
    "perplexity": (perplexity.DEFAULT_BASE_URL, "SEARCHTRACE_PERPLEXITY_BASE_URL", "perplexity"),
    "serpapi": (serpapi.DEFAULT_BASE_URL, "SEARCHTRACE_SERPAPI_BASE_URL", "serpapi"),
    "serper": (serper.DEFAULT_BASE_URL, "SEARCHTRACE_SERPER_BASE_URL", "serper"),
    "parallel": (parallel.DEFAULT_BASE_URL, "SEARCHTRACE_PARALLEL_BASE_URL", "parallel"),
    "youcom": (youcom.DEFAULT_BASE_URL, "SEARCHTRACE_YOUCOM_BASE_URL", "youcom"),
    "linkup": (linkup.DEFAULT_BASE_URL, "SEARCHTRACE_LINKUP_BASE_URL", "linkup"),
    "jina_search": (jina_search.DEFAULT_BASE_URL, "SEARCHTRACE_JINA_SEARCH_BASE_URL", "jina_search"),
    "jina": (jina.DEFAULT_BASE_URL, "SEARCHTRACE_JINA_BASE_URL", "jina"),
    "openai": (openai_chat.DEFAULT_BASE_URL, "OPENAI_BASE_URL", "openai/v1"),
}
# Conservative real-world defaults (free / entry plans, providers.md); config raises them.
_LIMITS: dict[str, dict[str, Any]] = {
    "brave": {"rps": 1.0, "concurrency": 2, "timeout_s": 30.0},
    "tavily": {"rps": 1.5, "concurrency": 4, "timeout_s": 60.0},
    "firecrawl": {"rps": 1.5, "concurrency": 4, "timeout_s": 60.0},
    "exa": {"rps": 5.0, "concurrency": 4, "timeout_s": 60.0},  # /search 10 QPS
    "perplexity": {"rps": 5.0, "concurrency": 4, "timeout_s": 60.0},  # 50 req/s, any tier
    "serpapi": {"rps": 1.0, "concurrency": 2, "timeout_s": 60.0},  # hourly caps per plan
    "serper": {"rps": 5.0, "concurrency": 4, "timeout_s": 30.0},  # 50 QPS on the smallest pack
    "parallel": {"rps": 5.0, "concurrency": 4, "timeout_s": 60.0},  # 600 per minute
    "youcom": {"rps": 5.0, "concurrency": 4, "timeout_s": 30.0},  # 10 req/s
    "linkup": {"rps": 5.0, "concurrency": 4, "timeout_s": 60.0},  # 10 QPS per organisation
    "jina_search": {"rps": 1.5, "concurrency": 2, "timeout_s": 60.0},  # 100 RPM on a free key
    "jina": {"rps": 3.0, "concurrency": jina.CONCURRENCY, "timeout_s": jina.TIMEOUT_S},
    "openai": {"rps": 5.0, "concurrency": 8, "timeout_s": 120.0},
}
SANDBOX_KEY = "sandbox-key"  # what the sandbox accepts when no key variable is set


def _known(kind: str, names: Any) -> str:
    return f"known {kind}: {', '.join(sorted(names))}"


def default_endpoint(name: str, *, base_url: str | None = None, key_env: str | None = None, **limits: Any) -> Endpoint:
    """An Endpoint for `name`: base URL from the argument (config), else its env variable, else the real default."""
    if name not in BASE_URLS:
        raise BadInput(f"unknown endpoint {name!r} ({_known('endpoints', BASE_URLS)})")
    default, env, _ = BASE_URLS[name]
    url = base_url or os.environ.get(env, "").strip() or default
    if not base_url and (problem := base_url_problem(url)):
        raise BadInput(f"{env}: base URL {problem}")
    fields = {**_LIMITS[name], **limits}
    return Endpoint(base_url=url, key_env=key_env or DEFAULT_KEY_ENV.get(name), **fields)


def sandbox_endpoint(name: str, root: str, **limits: Any) -> Endpoint:
    """An Endpoint for `name` inside the sandbox app at `root` (e.g. http://sandbox or http://127.0.0.1:PORT)."""
    if name not in BASE_URLS:
        raise BadInput(f"unknown endpoint {name!r} ({_known('endpoints', BASE_URLS)})")
    fields: dict[str, Any] = {"rps": 0.0, "concurrency": 16, "timeout_s": 10.0, "max_wait_s": 2.0}
    if name == "jina":
        fields["concurrency"] = jina.CONCURRENCY
    fields.update(limits)
    return Endpoint(base_url=f"{root.rstrip('/')}/{BASE_URLS[name][2]}", key_env=DEFAULT_KEY_ENV.get(name), **fields)


def build_search(
    name: str,
    endpoint: Endpoint | None = None,
    *,
    params: dict[str, Any] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    key_fallback: str | None = None,
    run_name: str | None = None,
) -> SearchAdapter:
    """A search provider by kind (`run_name`: what this run calls it); unknown kinds are BadInput listing the known."""
    cls = SEARCH_PROVIDERS.get(name)
    if cls is None:
        raise BadInput(f"unknown search provider {name!r} ({_known('providers', SEARCH_PROVIDERS)})")
    return cls(endpoint or default_endpoint(name), params=params, transport=transport, key_fallback=key_fallback,
               name=run_name)


def build_fetcher(
    name: str = "jina",
    endpoint: Endpoint | None = None,
    *,
    cache_dir: Path | None = None,
    read_cap: int = jina.READ_CAP,
    transport: httpx.AsyncBaseTransport | None = None,
    key_fallback: str | None = None,
) -> JinaFetcher:
    """The fetch backend by name (only "jina" so far); `cache_dir=None` disables the cache."""
    if name not in FETCHERS:
        raise BadInput(f"unknown fetch backend {name!r} ({_known('fetch backends', FETCHERS)})")
    return JinaFetcher(endpoint or default_endpoint(name), cache_dir=cache_dir, read_cap=read_cap,
                       transport=transport, key_fallback=key_fallback)


def build_chat(
    model: str,
    endpoint: Endpoint | None = None,
    *,
    params: dict[str, Any] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    key_fallback: str | None = None,
) -> OpenAIChat:
    """A chat model at an OpenAI-compatible endpoint (OPENAI_BASE_URL / OPENAI_API_KEY unless configured)."""
    if not model:
        raise BadInput("chat model: empty model name")
    return OpenAIChat(endpoint or default_endpoint("openai"), model, params=params, transport=transport,
                      key_fallback=key_fallback)
