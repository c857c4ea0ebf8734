"""Firecrawl search: POST /v2/search (or /v1/search); `description` is the snippet surface, scraping off."""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters.http import Reply
from searchtrace.adapters.keys import json_headers
from searchtrace.adapters.search_base import SearchAdapter, clean_text, domain_or_url, join_surface
from searchtrace.adapters.types import SearchHit

DEFAULT_BASE_URL = "https://api.firecrawl.dev"


class _Result(msgspec.Struct):
    url: str
    title: str | None = None
    description: str | None = None
    position: int | None = None
    category: str | None = None
    markdown: str | None = None  # only with scrapeOptions: page text, part of the surface (SPEC §14)


class _V2Data(msgspec.Struct):
    web: list[_Result] = []


class _Body(msgspec.Struct):
    success: bool = True
    data: list[_Result] | _V2Data | None = None  # v1: a list; v2: an object keyed by source
    error: str | None = None


class FirecrawlSearch(SearchAdapter):
    """Firecrawl with the paper's settings: web search, provider-side scrape off, 10 results."""

    kind = "firecrawl"
    label = "Firecrawl"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"api": "v2", "sources": ["web"], "limit": 10}

    @classmethod
    def page_text(cls, params: dict[str, Any]) -> bool:
        opts = params.get("scrapeOptions")
        return isinstance(opts, dict) and bool(opts.get("formats"))

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        api = str(self.params.get("api", "v2"))
        body: dict[str, Any] = {"query": query, **{k: v for k, v in self.params.items() if k != "api"}}
        if api == "v1":
            body.pop("sources", None)  # v1 rejects unknown keys
        headers = json_headers(self._key)
        return await self._http.call("POST", f"{api}/search", what=f"search:{self.name}", headers=headers,
                                     json=body, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        if not parsed.success:
            raise ValueError(parsed.error or "success: false")
        data = parsed.data
        results = data if isinstance(data, list) else (data.web if data is not None else [])
        hits = []
        for rank, r in enumerate(results, start=1):
            meta = {k: v for k, v in (("position", r.position), ("category", r.category)) if v is not None}
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.url, domain=domain_or_url(None, r.url),
                                  snippet=join_surface([r.description, r.markdown]), metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"success": false, "error": msg, "code"?, "details"?}`."""
        if not isinstance(body, dict):
            return text
        err = body.get("error")
        msg = str((err.get("message") if isinstance(err, dict) else err) or text)
        if body.get("code"):
            msg = f"{body['code']}: {msg}"
        details = body.get("details")
        if isinstance(details, list):
            extra = "; ".join(str(d.get("message", "")) for d in details if isinstance(d, dict) and d.get("message"))
            if extra:
                msg = f"{msg} ({extra})"
        return msg
