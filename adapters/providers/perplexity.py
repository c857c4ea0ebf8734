"""Perplexity Search API: POST /search; its `snippet` (a page extract within a token budget) is the surface.

Sandbox persona: BM25 ranking; long excerpts (the page from its start, about 4 characters per token of
`max_tokens_per_page`, default 512).
"""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters._http import Reply
from searchtrace.adapters._keys import json_headers
from searchtrace.adapters._persona import (
    FAULT_TEXT,
    Deferred,
    Hit,
    SandboxRoute,
    Shelf,
    WireReply,
    WireRequest,
    canon,
    clip,
    int_field,
    rejected,
    request_key,
    retry_headers,
    stable_uuid,
)
from searchtrace.adapters._search_base import (
    ProviderSpec,
    SearchAdapter,
    clean_text,
    domain_or_url,
    join_surface,
    str_message,
)
from searchtrace.adapters._types import Limits, SearchHit

DEFAULT_BASE_URL = "https://api.perplexity.ai"


class _Page(msgspec.Struct):
    url: str
    title: str | None = None
    snippet: str | None = None
    date: str | None = None
    last_updated: str | None = None


class _Body(msgspec.Struct):
    results: list[_Page | list[_Page]] = []  # a multi-query request groups results per query (nested lists)


class PerplexitySearch(SearchAdapter):
    """Perplexity with 10 results; the snippet is page text by design, sized by `max_tokens_per_page`."""

    kind = "perplexity"
    label = "Perplexity"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"max_results": 10}

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        return await self._http.call("POST", "search", what=f"search:{self.name}", headers=json_headers(self._key),
                                     json={"query": query, **self.params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        pages: list[_Page] = []
        for item in parsed.results:
            pages.extend(item if isinstance(item, list) else [item])
        hits = []
        for rank, p in enumerate(pages, start=1):
            meta = {k: v for k, v in (("date", p.date), ("last_updated", p.last_updated)) if v}
            hits.append(SearchHit(rank=rank, title=clean_text(p.title), url=p.url, domain=domain_or_url(None, p.url),
                                  snippet=join_surface([p.snippet]), metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"error": {"message", "type", "code"}}`; the type tells a bad key from an exhausted quota."""
        if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
            return text
        err = body["error"]
        msg = str_message(err) or text
        return f"{err['type']}: {msg}" if err.get("type") else msg

    def is_auth_failure(self, http_status: int, body: Any) -> bool:
        """Out of credit is also a 401 (`insufficient_quota`): that is not a bad key."""
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and err.get("type") == "insufficient_quota":
            return False
        return http_status in self.auth_statuses


# ---------------------------------------------------------------- sandbox persona

def persona(shelf: Shelf, query: str, n: int, chars: int = 2048) -> list[Hit]:
    pages = shelf.pages
    return [Hit(page=pages[i], url=pages[i].url, title=pages[i].title, rank=rank,
                content=clip(f"## {pages[i].title}\n\n{shelf.plain(i)}", chars))
            for rank, i in shelf.bm25_hits("perplexity", query, max(0, n))]


# ---------------------------------------------------------------- sandbox wire bodies

def perplexity_ok(hits: list[Hit], *, key: str) -> dict[str, Any]:
    return {"id": stable_uuid("perplexity", key),
            "results": [{"title": h.title, "url": h.url, "snippet": h.content, "date": h.page.published,
                         "last_updated": "2026-01-01"} for h in hits]}


def perplexity_error(message: str, type_: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "code": code}}


PERPLEXITY_401 = "Invalid API key provided. You can find your API key at https://www.perplexity.ai/settings/api."


# ---------------------------------------------------------------- sandbox route and faults

def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    if rejected(req.bearer()):
        return WireReply(perplexity_error(PERPLEXITY_401, "invalid_api_key", 401), 401)
    body = req.body or {}
    query = body.get("query")
    n = int_field(body.get("max_results"), 10)
    tokens = int_field(body.get("max_tokens_per_page"), 512)
    if not isinstance(query, str) or not query.strip() or n is None or not 1 <= n <= 20 or not tokens or tokens < 1:
        return WireReply(perplexity_error("query must be a string; max_results 1-20", "invalid_request", 400), 400)
    key = request_key("perplexity", canon.encode(body))
    count, budget = n, tokens

    def produce() -> WireReply:
        return WireReply(perplexity_ok(persona(shelf, query, count, chars=4 * budget), key=key))

    return Deferred(key, query, produce)


def fault(status: int, key: str) -> WireReply:
    kind = {429: "rate_limit_exceeded", 401: "invalid_api_key", 500: "api_error", 503: "api_error"}[status]
    body = perplexity_error(PERPLEXITY_401 if status == 401 else FAULT_TEXT[status], kind, status)
    return WireReply(body, status, retry_headers(status))


def quota(key: str) -> WireReply:
    return WireReply(perplexity_error("You exceeded your current quota, please check your plan and billing details.",
                                      "insufficient_quota", 401), 401)


PROVIDER = ProviderSpec(
    adapter=PerplexitySearch, order=5,
    key_env="PERPLEXITY_API_KEY", base_url_env="SEARCHTRACE_PERPLEXITY_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=5.0, concurrency=4, timeout_s=60.0),  # 50 req/s, any tier
    routes=(SandboxRoute("/search", ("POST",), search_route),),
    fault=fault, quota=quota,
    example="curl -H 'Authorization: Bearer sandbox' -H 'Content-Type: application/json' -d '{{\"query\": \"Elmwyn Athletic\"}}' {url}/search",
)
