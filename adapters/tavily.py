"""Tavily search: POST /search; `content` is the snippet surface (basic depth, general topic, no raw content)."""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters.http import Reply
from searchtrace.adapters.keys import json_headers
from searchtrace.adapters.search_base import SearchAdapter, clean_text, domain_or_url, join_surface
from searchtrace.adapters.types import SearchHit

DEFAULT_BASE_URL = "https://api.tavily.com"


class _Result(msgspec.Struct):
    url: str
    title: str | None = None
    content: str | None = None
    raw_content: str | None = None  # only with include_raw_content: page text, part of the surface (SPEC §14)
    score: float | None = None
    published_date: str | None = None


class _Body(msgspec.Struct):
    results: list[_Result] = []  # the SDK also treats a missing list as empty


class TavilySearch(SearchAdapter):
    """Tavily with the paper's settings: basic / general, raw content off, 10 results."""

    kind = "tavily"
    label = "Tavily"
    auth_statuses = (401,)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"search_depth": "basic", "topic": "general", "max_results": 10, "include_raw_content": False,
                "include_answer": False, "include_images": False}

    @classmethod
    def page_text(cls, params: dict[str, Any]) -> bool:
        return bool(params.get("include_raw_content"))

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = json_headers(self._key)
        return await self._http.call("POST", "search", what=f"search:{self.name}", headers=headers,
                                     json={"query": query, **self.params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        hits = []
        for rank, r in enumerate(parsed.results, start=1):
            meta: dict[str, Any] = {}
            if r.score is not None:
                meta["score"] = r.score
            if r.published_date:
                meta["published_date"] = r.published_date
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.url, domain=domain_or_url(None, r.url),
                                  snippet=join_surface([r.content, r.raw_content]), metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"detail": {"error": msg}}`, `{"detail": msg}`, or the keyless `{"error": {"message"}}` envelope."""
        if not isinstance(body, dict):
            return text
        detail = body.get("detail")
        if isinstance(detail, dict) and detail.get("error"):
            return str(detail["error"])
        if isinstance(detail, str):
            return detail
        err = body.get("error")
        if isinstance(err, dict):
            return str(err.get("message") or err.get("code") or text)
        if isinstance(err, str):
            return err
        return text
