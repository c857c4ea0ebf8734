"""Provider adapters: search (Brave, Tavily, Firecrawl), the Jina fetch backend, OpenAI-compatible chat."""

from adapters.brave import BraveSearch
from adapters.errors import AdapterError, ChatError, MissingKey
from adapters.fetch_cache import FetchCache, default_cache_dir
from adapters.firecrawl import FirecrawlSearch
from adapters.jina import JinaFetcher
from adapters.openai_chat import OpenAIChat
from adapters.protocols import ChatModel, Fetcher, SearchProvider
from adapters.registry import (
    SANDBOX_KEY,
    SEARCH_PROVIDERS,
    build_chat,
    build_fetcher,
    build_search,
    default_endpoint,
    sandbox_endpoint,
)
from adapters.tavily import TavilySearch
from adapters.types import ChatResponse, Endpoint, FetchResponse, RetryInfo, SearchHit, SearchResponse
from adapters.urls import domain_of, normalize_url

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
