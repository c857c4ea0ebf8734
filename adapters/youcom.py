"""You.com Web Search: POST /v1/search; description + snippets (+ highlights / page text when asked) form the surface."""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters.http import Reply
from searchtrace.adapters.search_base import (
    SearchAdapter,
    clean_text,
    domain_or_url,
    join_surface,
    str_message,
)
from searchtrace.adapters.types import SearchHit

DEFAULT_BASE_URL = "https://ydc-index.io"


class _Contents(msgspec.Struct):
    highlights: list[str] | None = None
    markdown: str | None = None


class _Result(msgspec.Struct):
    url: str | None = None
    title: str | None = None
    description: str | None = None
    snippets: list[str] | None = None
    page_age: str | None = None  # ISO, or whatever the index had ("2 months ago"): kept as text
    contents: _Contents | None = None


class _Sections(msgspec.Struct):
    web: list[_Result] = []
    news: list[_Result] = []  # knowledge answers carry no URL to cite: left in the raw body only


class _Body(msgspec.Struct):
    results: _Sections | None = None


class YouComSearch(SearchAdapter):
    """You.com's raw API defaults: 10 web results, no extraction (the SDK turns highlights and knowledge on)."""

    kind = "youcom"
    label = "You.com"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"count": 10, "country": "US", "safesearch": "moderate"}

    @classmethod
    def page_text(cls, params: dict[str, Any]) -> bool:
        extraction = params.get("extraction")
        return isinstance(extraction, dict) and extraction.get("extraction_mode") == "full_page"

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = {"Accept": "application/json", "Content-Type": "application/json",
                   "X-API-Key": self._key.reveal() if self._key else ""}
        return await self._http.call("POST", "v1/search", what=f"search:{self.name}", headers=headers,
                                     json={"query": query, **self.params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        sections = parsed.results or _Sections()
        hits: list[SearchHit] = []
        for section, items in (("web", sections.web), ("news", sections.news)):
            for r in items:
                if not r.url:
                    continue
                c = r.contents or _Contents()
                snippet = join_surface([r.description, *(r.snippets or []), *(c.highlights or []), c.markdown])
                meta: dict[str, Any] = {"section": section}
                if r.page_age:
                    meta["page_age"] = r.page_age
                hits.append(SearchHit(rank=len(hits) + 1, title=clean_text(r.title), url=r.url,
                                      domain=domain_or_url(None, r.url), snippet=snippet, metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"detail": msg | [validation errors]}`, `{"error": code, "message"}` (402) or `{"error": msg}` (422)."""
        if not isinstance(body, dict):
            return text
        if body.get("message"):
            return f"{body['error']}: {body['message']}" if body.get("error") else str(body["message"])
        detail = body.get("detail")
        if isinstance(detail, list):
            return "; ".join(f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg', '')}"
                             for d in detail if isinstance(d, dict)) or text
        return str_message(detail) or str_message(body.get("error")) or text
