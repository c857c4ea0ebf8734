"""Jina Search (s.jina.ai): POST /; the description is the surface, plus each page's text when `content` is on."""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters.http import Reply
from searchtrace.adapters.jina import envelope_message
from searchtrace.adapters.keys import json_headers
from searchtrace.adapters.search_base import SearchAdapter, clean_text, domain_or_url, join_surface
from searchtrace.adapters.types import SearchHit

DEFAULT_BASE_URL = "https://s.jina.ai"


class _Item(msgspec.Struct):
    url: str | None = None  # third-party parsers met items without one
    title: str | None = None
    description: str | None = None
    content: str | None = None
    date: str | None = None


class _Body(msgspec.Struct):
    data: list[_Item] | None = None


class JinaSearch(SearchAdapter):
    """Jina Search with 10 results and `X-Respond-With: no-content` (it inlines every whole page unless told not to).

    `content = true` in params turns page text on; it is sent as the header, never in the body.
    """

    kind = "jina_search"
    label = "Jina Search"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"num": 10, "content": False}

    @classmethod
    def page_text(cls, params: dict[str, Any]) -> bool:
        return bool(params.get("content"))

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = json_headers(self._key)
        if not self.page_text(self.params):
            headers["X-Respond-With"] = "no-content"
        body = {"q": query, **{k: v for k, v in self.params.items() if k != "content"}}
        return await self._http.call("POST", "", what=f"search:{self.name}", headers=headers, json=body,
                                     trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        hits: list[SearchHit] = []
        for item in parsed.data or []:
            if not item.url:
                continue
            meta = {"date": item.date} if item.date else {}
            hits.append(SearchHit(rank=len(hits) + 1, title=clean_text(item.title), url=item.url,
                                  domain=domain_or_url(None, item.url),
                                  snippet=join_surface([item.description, item.content]), metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """Jina's envelope: `{"code", "name", "status", "message", "readableMessage"}`."""
        return envelope_message(body, text) if isinstance(body, dict) else text
