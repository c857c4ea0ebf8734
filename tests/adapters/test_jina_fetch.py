"""The fetch backend: read cap while streaming, the on-disk cache keyed by the normalised URL, concurrency 4."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from searchtrace.adapters import FetchCache, JinaFetcher, build_fetcher, default_endpoint, normalize_url
from searchtrace.adapters._jina import READ_CAP
from tests.adapters.support import Recorder, fast_endpoint

CHUNK = 64 * 1024


def _page(url: str, content: str) -> httpx.Response:
    body = {"code": 200, "status": 20000, "data": {"title": "T", "url": url, "content": content}}
    return httpx.Response(200, json=body)


@pytest.mark.anyio
async def test_read_cap_stops_reading_mid_stream() -> None:
    produced = 0

    async def stream() -> AsyncIterator[bytes]:
        nonlocal produced
        for _ in range(3 * 1024 * 1024 // CHUNK):
            produced += CHUNK
            yield b"x" * CHUNK

    transport = httpx.MockTransport(lambda r: httpx.Response(200, content=stream()))
    async with JinaFetcher(fast_endpoint("http://j", None), transport=transport) as j:
        resp = await j.fetch("https://big.example/")
    assert (resp.status, resp.content, resp.retries) == ("too_large", None, [])
    assert READ_CAP < resp.n_bytes <= READ_CAP + CHUNK
    assert produced <= READ_CAP + CHUNK  # the generator was not drained: the rest was never read


@pytest.mark.anyio
async def test_cache_survives_instances_and_keys_on_the_normalised_url(tmp_path: Path) -> None:
    rec = Recorder(lambda r, n: _page(str(r.url), f"page body {n}"))
    async with JinaFetcher(fast_endpoint("http://j", None), cache_dir=tmp_path, transport=rec.transport) as j:
        first = await j.fetch("https://Example.org/a/?utm_source=x&b=1#top")
    assert (first.status, first.cache_hit, first.content) == ("ok", False, "page body 1")
    async with JinaFetcher(fast_endpoint("http://j", None), cache_dir=tmp_path, transport=rec.transport) as j:
        again = await j.fetch("https://example.org/a?b=1")  # another spelling, same normalised URL
        other = await j.fetch("https://example.org/a?b=2")
    assert (again.status, again.cache_hit, again.content, again.n_bytes) == ("ok", True, "page body 1",
                                                                           first.n_bytes)
    assert again.n_tokens == first.n_tokens == len("page body 1") // 4
    assert (other.cache_hit, other.content) == (False, "page body 2")
    assert len(rec.requests) == 2
    stored = FetchCache(tmp_path).path_for(normalize_url("https://example.org/a?b=1"))
    assert json.loads(gzip.decompress(stored.read_bytes()))["content"] == "page body 1"  # compressed on disk


@pytest.mark.anyio
async def test_failures_are_not_cached_and_damaged_entries_are_refetched(tmp_path: Path) -> None:
    rec = Recorder(lambda r, n: httpx.Response(404, json={"code": 404, "name": "NotFound", "message": "gone",
                                                          "readableMessage": "NotFoundError: gone"})
                   if n == 1 else _page(str(r.url), "now here"))
    async with JinaFetcher(fast_endpoint("http://j", None), cache_dir=tmp_path, transport=rec.transport) as j:
        failed = await j.fetch("https://example.org/x")
        ok = await j.fetch("https://example.org/x")
        FetchCache(tmp_path).path_for("https://example.org/x").write_bytes(b"not gzip")
        refetched = await j.fetch("https://example.org/x")
    assert (failed.status, failed.error) == ("http_error", "HTTP 404: NotFoundError: gone")
    assert (ok.status, ok.cache_hit, refetched.cache_hit, refetched.content) == ("ok", False, False, "now here")


@pytest.mark.anyio
async def test_at_most_four_fetches_in_flight() -> None:
    in_flight = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.02)
        in_flight -= 1
        return _page(str(request.url), "c")

    ep = default_endpoint("jina", base_url="http://j", rps=0.0)
    assert (ep.concurrency, ep.timeout_s) == (4, 15.0)
    fetcher = build_fetcher("jina", ep, transport=httpx.MockTransport(handler), key_fallback="k")
    async with fetcher, anyio.create_task_group() as tg:
        for i in range(12):
            tg.start_soon(fetcher.fetch, f"https://example.org/{i}")
    assert peak == 4


@pytest.mark.anyio
async def test_html_edge_error_is_summarised() -> None:
    rec = Recorder(lambda r, n: httpx.Response(524, text="<!DOCTYPE html><html><body>cloudflare 524</body></html>",
                                               headers={"content-type": "text/html"}))
    async with JinaFetcher(fast_endpoint("http://j", None, max_retries=1), transport=rec.transport) as j:
        resp = await j.fetch("https://slow.example/")
    assert resp.status == "http_error" and resp.http_status == 524 and [r.reason for r in resp.retries] == ["5xx"]
    assert resp.error == "HTTP 524: HTML error page from the edge (HTTP 524)"
