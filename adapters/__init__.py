"""Provider adapters: search (one module each in providers/, found by the registry), the Jina fetch backend,
OpenAI-compatible chat."""

from searchtrace.adapters.errors import AdapterError, ChatError, MissingKey
from searchtrace.adapters.fetch_cache import FetchCache, default_cache_dir
from searchtrace.adapters.jina import JinaFetcher
from searchtrace.adapters.openai_chat import OpenAIChat
from searchtrace.adapters.protocols import ChatModel, Fetcher, SearchProvider
from searchtrace.adapters.providers.brave import BraveSearch
from searchtrace.adapters.providers.firecrawl import FirecrawlSearch
from searchtrace.adapters.providers.tavily import TavilySearch
from searchtrace.adapters.registry import (
    SANDBOX_KEY,
    SEARCH_PROVIDERS,
    build_chat,
    build_fetcher,
    build_search,
    default_endpoint,
    sandbox_endpoint,
)
from searchtrace.adapters.types import (
    ChatResponse,
    Endpoint,
    FetchResponse,
    RetryInfo,
    SearchHit,
    SearchResponse,
)
from searchtrace.adapters.urls import domain_of, normalize_url

__all__ = [
    "SANDBOX_KEY",
    "SEARCH_PROVIDERS",
    "AdapterError",
    "BraveSearch",
    "ChatError",
    "ChatModel",
    "ChatResponse",
    "Endpoint",
    "FetchCache",
    "FetchResponse",
    "Fetcher",
    "FirecrawlSearch",
    "JinaFetcher",
    "MissingKey",
    "OpenAIChat",
    "RetryInfo",
    "SearchHit",
    "SearchProvider",
    "SearchResponse",
    "TavilySearch",
    "build_chat",
    "build_fetcher",
    "build_search",
    "default_cache_dir",
    "default_endpoint",
    "domain_of",
    "normalize_url",
    "sandbox_endpoint",
]
