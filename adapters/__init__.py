"""Provider adapters: search (one module each in providers/, found by the registry), the Jina fetch backend,
OpenAI-compatible chat."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.adapters._errors import AdapterError, ChatError, MissingKey
    from searchtrace.adapters._fetch_cache import FetchCache, default_cache_dir
    from searchtrace.adapters._http import EndpointClient, default_transport, quota_limiter
    from searchtrace.adapters._jina import JinaFetcher, estimate_tokens, page_markdown
    from searchtrace.adapters._keys import (
        Secret,
        configured_secrets,
        default_key_env,
        read_key,
        scrub_bytes,
        scrub_parsed,
        scrub_text,
    )
    from searchtrace.adapters._limiter import RateLimiter
    from searchtrace.adapters._local_server import (
        MAX_DEPTH,
        LocalGuard,
        MiB,
        bind_local,
        json_too_deep,
        refusal,
        serve_local,
    )
    from searchtrace.adapters._openai_chat import APIS as CHAT_APIS
    from searchtrace.adapters._openai_chat import ENDPOINT, OpenAIChat, parse_completion
    from searchtrace.adapters._protocols import ChatModel, ClosableChat, Fetcher, SearchProvider
    from searchtrace.adapters._registry import (
        FETCHERS,
        SANDBOX_KEY,
        SEARCH_PROVIDERS,
        build_chat,
        build_fetcher,
        build_search,
        default_endpoint,
        endpoints,
        paper_providers,
        sandbox_endpoint,
        search_provider_names,
        spec,
        specs,
    )
    from searchtrace.adapters._responses_api import chat_messages, input_items, parse_response, tools_to_chat
    from searchtrace.adapters._search_base import SearchAdapter, shorten
    from searchtrace.adapters._toolset import Tools, pick, read_page, read_results
    from searchtrace.adapters._types import (
        TRACE_HEADER,
        TRACE_HEADER_RAW,
        ChatResponse,
        Endpoint,
        FetchResponse,
        RetryInfo,
        SearchHit,
        SearchResponse,
    )
    from searchtrace.adapters._urls import base_url_problem, domain_of, norm_url, normalize_url, url_domain
    from searchtrace.adapters.providers.brave import BraveSearch
    from searchtrace.adapters.providers.firecrawl import FirecrawlSearch
    from searchtrace.adapters.providers.tavily import TavilySearch


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "AdapterError": "searchtrace.adapters._errors",
    "ChatError": "searchtrace.adapters._errors",
    "MissingKey": "searchtrace.adapters._errors",
    "FetchCache": "searchtrace.adapters._fetch_cache",
    "default_cache_dir": "searchtrace.adapters._fetch_cache",
    "EndpointClient": "searchtrace.adapters._http",
    "quota_limiter": "searchtrace.adapters._http",
    "RateLimiter": "searchtrace.adapters._limiter",
    "default_transport": "searchtrace.adapters._http",
    "JinaFetcher": "searchtrace.adapters._jina",
    "estimate_tokens": "searchtrace.adapters._jina",
    "page_markdown": "searchtrace.adapters._jina",
    "Secret": "searchtrace.adapters._keys",
    "configured_secrets": "searchtrace.adapters._keys",
    "default_key_env": "searchtrace.adapters._keys",
    "read_key": "searchtrace.adapters._keys",
    "scrub_bytes": "searchtrace.adapters._keys",
    "scrub_parsed": "searchtrace.adapters._keys",
    "scrub_text": "searchtrace.adapters._keys",
    "LocalGuard": "searchtrace.adapters._local_server",
    "MiB": "searchtrace.adapters._local_server",
    "json_too_deep": "searchtrace.adapters._local_server",
    "bind_local": "searchtrace.adapters._local_server",
    "serve_local": "searchtrace.adapters._local_server",
    "refusal": "searchtrace.adapters._local_server",
    "MAX_DEPTH": "searchtrace.adapters._local_server",
    "CHAT_APIS": "searchtrace.adapters._openai_chat:APIS",
    "ENDPOINT": "searchtrace.adapters._openai_chat",
    "OpenAIChat": "searchtrace.adapters._openai_chat",
    "parse_completion": "searchtrace.adapters._openai_chat",
    "ChatModel": "searchtrace.adapters._protocols",
    "ClosableChat": "searchtrace.adapters._protocols",
    "Fetcher": "searchtrace.adapters._protocols",
    "SearchProvider": "searchtrace.adapters._protocols",
    "FETCHERS": "searchtrace.adapters._registry",
    "SANDBOX_KEY": "searchtrace.adapters._registry",
    "SEARCH_PROVIDERS": "searchtrace.adapters._registry",
    "build_chat": "searchtrace.adapters._registry",
    "build_fetcher": "searchtrace.adapters._registry",
    "build_search": "searchtrace.adapters._registry",
    "default_endpoint": "searchtrace.adapters._registry",
    "endpoints": "searchtrace.adapters._registry",
    "paper_providers": "searchtrace.adapters._registry",
    "sandbox_endpoint": "searchtrace.adapters._registry",
    "search_provider_names": "searchtrace.adapters._registry",
    "spec": "searchtrace.adapters._registry",
    "specs": "searchtrace.adapters._registry",
    "SearchAdapter": "searchtrace.adapters._search_base",
    "chat_messages": "searchtrace.adapters._responses_api",
    "input_items": "searchtrace.adapters._responses_api",
    "parse_response": "searchtrace.adapters._responses_api",
    "tools_to_chat": "searchtrace.adapters._responses_api",
    "shorten": "searchtrace.adapters._search_base",
    "Tools": "searchtrace.adapters._toolset",
    "pick": "searchtrace.adapters._toolset",
    "read_page": "searchtrace.adapters._toolset",
    "read_results": "searchtrace.adapters._toolset",
    "ChatResponse": "searchtrace.adapters._types",
    "Endpoint": "searchtrace.adapters._types",
    "FetchResponse": "searchtrace.adapters._types",
    "RetryInfo": "searchtrace.adapters._types",
    "SearchHit": "searchtrace.adapters._types",
    "SearchResponse": "searchtrace.adapters._types",
    "TRACE_HEADER": "searchtrace.adapters._types",
    "TRACE_HEADER_RAW": "searchtrace.adapters._types",
    "base_url_problem": "searchtrace.adapters._urls",
    "domain_of": "searchtrace.adapters._urls",
    "normalize_url": "searchtrace.adapters._urls",
    "norm_url": "searchtrace.adapters._urls",
    "url_domain": "searchtrace.adapters._urls",
    "BraveSearch": "searchtrace.adapters.providers.brave",
    "FirecrawlSearch": "searchtrace.adapters.providers.firecrawl",
    "TavilySearch": "searchtrace.adapters.providers.tavily",
}

__all__ = [
    "AdapterError",
    "BraveSearch",
    "CHAT_APIS",
    "ChatError",
    "ChatModel",
    "ChatResponse",
    "ClosableChat",
    "ENDPOINT",
    "Endpoint",
    "EndpointClient",
    "quota_limiter",
    "FETCHERS",
    "FetchCache",
    "FetchResponse",
    "Fetcher",
    "FirecrawlSearch",
    "JinaFetcher",
    "LocalGuard",
    "MiB",
    "MissingKey",
    "OpenAIChat",
    "RateLimiter",
    "RetryInfo",
    "SANDBOX_KEY",
    "SEARCH_PROVIDERS",
    "SearchAdapter",
    "SearchHit",
    "SearchProvider",
    "SearchResponse",
    "Secret",
    "TRACE_HEADER",
    "TRACE_HEADER_RAW",
    "TavilySearch",
    "Tools",
    "base_url_problem",
    "bind_local",
    "refusal",
    "build_chat",
    "chat_messages",
    "build_fetcher",
    "build_search",
    "configured_secrets",
    "default_cache_dir",
    "default_endpoint",
    "default_key_env",
    "default_transport",
    "domain_of",
    "endpoints",
    "estimate_tokens",
    "json_too_deep",
    "MAX_DEPTH",
    "input_items",
    "normalize_url",
    "norm_url",
    "url_domain",
    "page_markdown",
    "paper_providers",
    "parse_completion",
    "parse_response",
    "tools_to_chat",
    "pick",
    "read_key",
    "serve_local",
    "read_page",
    "read_results",
    "sandbox_endpoint",
    "scrub_bytes",
    "scrub_parsed",
    "scrub_text",
    "search_provider_names",
    "shorten",
    "spec",
    "specs",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
