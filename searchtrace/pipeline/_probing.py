"""One normalised search or fetch call, to try a provider or a key (real endpoint or the in-process sandbox)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from searchtrace.adapters import (
    SANDBOX_KEY,
    Endpoint,
    FetchResponse,
    SearchResponse,
    build_fetcher,
    build_search,
    default_cache_dir,
    default_endpoint,
    sandbox_endpoint,
)
from searchtrace.adapters.sandbox import in_process


def _target(name: str, sandbox: bool, base_url: str | None, timeout_s: float | None,
            max_retries: int | None) -> tuple[Endpoint, httpx.AsyncBaseTransport | None]:
    limits: dict[str, Any] = {"timeout_s": timeout_s} if timeout_s else {}
    if max_retries is not None:
        limits["max_retries"] = max_retries
    if sandbox:
        box = in_process()
        return sandbox_endpoint(name, box.root, **limits), box.transport
    return default_endpoint(name, base_url=base_url, **limits), None


async def probe_search(
    provider: str, query: str, *, sandbox: bool = False, base_url: str | None = None, timeout_s: float | None = None,
    max_retries: int | None = None, trace_id: str | None = None,
) -> tuple[dict[str, Any], SearchResponse]:
    """One search through the production adapter; returns the adapter's effective params and the response."""
    endpoint, transport = _target(provider, sandbox, base_url, timeout_s, max_retries)
    adapter = build_search(provider, endpoint, transport=transport, key_fallback=SANDBOX_KEY if sandbox else None)
    async with adapter:
        resp = await adapter.search(query, trace_id=trace_id)
    return dict(adapter.params), resp


async def probe_fetch(
    url: str, *, sandbox: bool = False, base_url: str | None = None, timeout_s: float | None = None,
    cache_dir: Path | None = None, no_cache: bool = False, max_retries: int | None = None, trace_id: str | None = None,
) -> FetchResponse:
    """One fetch through the fetch backend (cache default: $SEARCHTRACE_CACHE_DIR, a sandbox subfolder for the sandbox)."""
    endpoint, transport = _target("jina", sandbox, base_url, timeout_s, max_retries)
    cache: Path | None = None
    if not no_cache:
        cache = cache_dir or (default_cache_dir() / "sandbox" if sandbox else default_cache_dir())
    fetcher = build_fetcher("jina", endpoint, cache_dir=cache, transport=transport,
                            key_fallback=SANDBOX_KEY if sandbox else None)
    async with fetcher:
        return await fetcher.fetch(url, trace_id=trace_id)
