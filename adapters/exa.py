"""Exa search: POST /search; highlights (and summary / text when asked for) form the snippet surface."""

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

DEFAULT_BASE_URL = "https://api.exa.ai"


class _Result(msgspec.Struct):
    url: str
    title: str | None = None  # exa-js types it `string | null`
    publishedDate: str | None = None  # noqa: N815 (wire name)
    author: str | None = None
    highlights: list[str] | None = None
    summary: str | None = None
    text: str | None = None


class _Body(msgspec.Struct):
    results: list[_Result] = []


class ExaSearch(SearchAdapter):
    """Exa with highlights only: the raw API's page `text` (the SDK's default) stays off unless params ask for it."""

    kind = "exa"
    label = "Exa"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"type": "auto", "numResults": 10, "contents": {"highlights": True}}

    @classmethod
    def page_text(cls, params: dict[str, Any]) -> bool:
        contents = params.get("contents")
        return isinstance(contents, dict) and bool(contents.get("text"))

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = {"Accept": "application/json", "Content-Type": "application/json",
                   "x-api-key": self._key.reveal() if self._key else ""}
        return await self._http.call("POST", "search", what=f"search:{self.name}", headers=headers,
                                     json={"query": query, **self.params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        hits = []
        for rank, r in enumerate(parsed.results, start=1):
            snippet = join_surface([*(r.highlights or []), r.summary, r.text])
            meta = {k: v for k, v in (("published_date", r.publishedDate), ("author", r.author)) if v}
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.url, domain=domain_or_url(None, r.url),
                                  snippet=snippet, metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"requestId", "error": msg, "tag": TAG}`."""
        if not isinstance(body, dict):
            return text
        msg = str_message(body.get("error")) or text
        return f"{body['tag']}: {msg}" if body.get("tag") else msg
