"""`searchtrace search` and `searchtrace fetch`: one normalised call printed as JSON, to try a provider or a key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click
import msgspec

from searchtrace import pipeline
from searchtrace.adapters import SEARCH_PROVIDERS, normalize_url
from searchtrace.store import BadInput


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
    params, resp = anyio.run(lambda: pipeline.probe_search(
        provider, query, sandbox=sandbox, base_url=base_url, timeout_s=timeout_s, max_retries=max_retries,
        trace_id=trace_id), backend="asyncio")
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
    resp = anyio.run(lambda: pipeline.probe_fetch(
        url, sandbox=sandbox, base_url=base_url, timeout_s=timeout_s, cache_dir=cache_dir, no_cache=no_cache,
        max_retries=max_retries, trace_id=trace_id), backend="asyncio")
    _emit({
        "url": url, "url_normalized": normalize_url(url), "status": resp.status, "http_status": resp.http_status,
        "cache_hit": resp.cache_hit, "n_bytes": resp.n_bytes, "n_tokens": resp.n_tokens,
        "n_tokens_method": "len(content) // 4", "latency_ms": round(resp.latency_ms, 1), "error": resp.error,
        "retries": resp.retries, "content": resp.content,
    })
    _finish(resp.status, resp.error)
