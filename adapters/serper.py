"""Serper (Google): POST /search; Google's snippet (+ the answer box it cites) is the surface."""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters.http import Reply
from searchtrace.adapters.search_base import (
    SearchAdapter,
    add_answer,
    clean_text,
    domain_or_url,
    join_surface,
    str_message,
)
from searchtrace.adapters.types import SearchHit

DEFAULT_BASE_URL = "https://google.serper.dev"


class _Organic(msgspec.Struct):
    link: str
    title: str | None = None
    snippet: str | None = None
    position: int | None = None
    date: str | None = None


class _AnswerBox(msgspec.Struct):
    link: str | None = None
    snippet: str | None = None
    answer: str | None = None


class _Body(msgspec.Struct):
    organic: list[_Organic] = []  # left out entirely when nothing was found
    answerBox: _AnswerBox | None = None  # noqa: N815 (wire name)


class SerperSearch(SearchAdapter):
    """Serper's Google: US / English, 10 results."""

    kind = "serper"
    label = "Serper"
    auth_statuses = (401, 403)  # a bad key is 403 "Unauthorized."

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"gl": "us", "hl": "en", "num": 10}

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = {"Accept": "application/json", "Content-Type": "application/json",
                   "X-API-KEY": self._key.reveal() if self._key else ""}
        return await self._http.call("POST", "search", what=f"search:{self.name}", headers=headers,
                                     json={"q": query, **self.params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        hits = []
        for rank, r in enumerate(parsed.organic, start=1):
            meta = {k: v for k, v in (("position", r.position), ("date", r.date)) if v}
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.link, domain=domain_or_url(None, r.link),
                                  snippet=join_surface([r.snippet]), metadata=meta))
        box = parsed.answerBox
        if box is not None and box.link:
            add_answer(hits, box.link, join_surface([box.answer, box.snippet]))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"message", "statusCode"}`."""
        return (str_message(body.get("message")) if isinstance(body, dict) else "") or text
