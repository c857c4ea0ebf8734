"""`searchtrace search` and `searchtrace fetch`: one normalised call printed as JSON, to try a provider or a key."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

import anyio
import click
import httpx
import msgspec

from searchtrace.adapters.fetch_cache import default_cache_dir
from searchtrace.adapters.registry import (
    SANDBOX_KEY,
    SEARCH_PROVIDERS,
    build_fetcher,
    build_search,
    default_endpoint,
    sandbox_endpoint,
)
from searchtrace.adapters.types import Endpoint, FetchResponse, SearchResponse
from searchtrace.adapters.urls import normalize_url
from searchtrace.store.errors import BadInput

SANDBOX_ROOT = "http://sandbox"


def sandbox_transport() -> httpx.AsyncBaseTransport:
    """The sandbox world mounted in-process (no network)."""
    if importlib.util.find_spec("searchtrace.adapters.sandbox") is None:
        raise BadInput("--sandbox: the sandbox world (adapters.sandbox) is not available in this installation")
    app = importlib.import_module("searchtrace.adapters.sandbox").create_app()
    return httpx.ASGITransport(app=app)


def _endpoint(name: str, sandbox: bool, base_url: str | None, timeout_s: float | None,
              max_retries: int | None) -> Endpoint:
    limits: dict[str, Any] = {"timeout_s": timeout_s} if timeout_s else {}
    if max_retries is not None:
        limits["max_retries"] = max_retries
    if sandbox:
        return sandbox_endpoint(name, SANDBOX_ROOT, **limits)
    return default_endpoint(name, base_url=base_url, **limits)


def _emit(doc: dict[str, Any]) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(doc), indent=2).decode())


def _finish(status: str, error: str | None) -> None:
    """Exit 1 with one stderr line when the call did not succeed (the JSON above says the rest)."""
    if status != "ok":
        click.echo(f"searchtrace: {status}: {error or 'call failed'}", err=True)
        raise SystemExit(1)  # not click's Exit: with standalone_mode=False its code would be dropped


@click.command("search")
@click.option("--provider", "-p", "provider", required=True,
              help=f"Search provider: {', '.join(sorted(SEARCH_PROVIDERS))}.")
@click.option("--sandbox", is_flag=True, help="Call the in-process sandbox world instead of the real API.")
@click.option("--base-url", default=None, help="Override the provider's base URL (else its SEARCHTRACE_*_BASE_URL).")
@click.option("--timeout", "timeout_s", type=float, default=None, help="Seconds per attempt.")
@click.option("--max-retries", type=click.IntRange(0, 20), default=None, help="Retries on 429 / 5xx / timeouts.")
@click.option("--trace-id", default=None, help="Value of the X-Searchtrace-Trace header.")
@click.argument("query")
def search(provider: str, sandbox: bool, base_url: str | None, timeout_s: float | None, max_retries: int | None,
           trace_id: str | None, query: str) -> None:
    """Run one search and print the normalised results as JSON (the key comes from the environment)."""
    if provider not in SEARCH_PROVIDERS:
        raise BadInput(f"--provider: unknown search provider {provider!r} (known: {', '.join(sorted(SEARCH_PROVIDERS))})")
    if not query.strip():
        raise BadInput("QUERY: empty search query")
    endpoint = _endpoint(provider, sandbox, base_url, timeout_s, max_retries)
    transport = sandbox_transport() if sandbox else None

    async def run() -> tuple[dict[str, Any], SearchResponse]:
        adapter = build_search(provider, endpoint, transport=transport, key_fallback=SANDBOX_KEY if sandbox else None)
        async with adapter:
            resp = await adapter.search(query, trace_id=trace_id)
        return dict(adapter.params), resp

    params, resp = anyio.run(run, backend="asyncio")
    _emit({
        "provider": provider, "query": query, "params": params, "status": resp.status,
        "http_status": resp.http_status, "latency_ms": round(resp.latency_ms, 1), "error": resp.error,
        "retries": resp.retries,
        "results": [{"rank": h.rank, "title": h.title, "url": h.url, "url_normalized": normalize_url(h.url),
                     "domain": h.domain, "snippet": h.snippet, "metadata": h.metadata} for h in resp.hits],
    })
    _finish(resp.status, resp.error)


@click.command("fetch")
@click.option("--sandbox", is_flag=True, help="Fetch through the in-process sandbox world.")
@click.option("--base-url", default=None, help="Override the Reader base URL (else SEARCHTRACE_JINA_BASE_URL).")
@click.option("--timeout", "timeout_s", type=float, default=None, help="Seconds per attempt (default 15).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Fetch cache folder (default $SEARCHTRACE_CACHE_DIR or ~/.cache/searchtrace/fetch).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the fetch cache.")
@click.option("--max-retries", type=click.IntRange(0, 20), default=None, help="Retries on 429 / 5xx / timeouts.")
@click.option("--trace-id", default=None, help="Value of the X-Searchtrace-Trace header.")
@click.argument("url")
def fetch(sandbox: bool, base_url: str | None, timeout_s: float | None, cache_dir: Path | None, no_cache: bool,
          max_retries: int | None, trace_id: str | None, url: str) -> None:
    """Fetch one page through the fetch backend and print it as JSON (markdown in `content`)."""
    if not url.strip().lower().startswith(("http://", "https://")):
        raise BadInput(f"URL: not an http(s) URL: {url!r}")
    endpoint = _endpoint("jina", sandbox, base_url, timeout_s, max_retries)
    transport = sandbox_transport() if sandbox else None
    cache: Path | None = None
    if not no_cache:
        cache = cache_dir or (default_cache_dir() / "sandbox" if sandbox else default_cache_dir())

    async def run() -> FetchResponse:
        fetcher = build_fetcher("jina", endpoint, cache_dir=cache, transport=transport,
                                key_fallback=SANDBOX_KEY if sandbox else None)
        async with fetcher:
            return await fetcher.fetch(url, trace_id=trace_id)

    resp = anyio.run(run, backend="asyncio")
    _emit({
        "url": url, "url_normalized": normalize_url(url), "status": resp.status, "http_status": resp.http_status,
        "cache_hit": resp.cache_hit, "n_bytes": resp.n_bytes, "n_tokens": resp.n_tokens,
        "n_tokens_method": "len(content) // 4", "latency_ms": round(resp.latency_ms, 1), "error": resp.error,
        "retries": resp.retries, "content": resp.content,
    })
    _finish(resp.status, resp.error)
