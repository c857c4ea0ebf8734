"""Perplexity Search API: POST /search; its `snippet` (a page extract within a token budget) is the surface."""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters.http import Reply
from searchtrace.adapters.keys import json_headers
from searchtrace.adapters.search_base import (
    SearchAdapter,
    clean_text,
    domain_or_url,
    join_surface,
    str_message,
)
from searchtrace.adapters.types import SearchHit

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
