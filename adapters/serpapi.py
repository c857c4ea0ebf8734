"""SerpApi (Google engine): GET /search.json; Google's snippet (+ rich snippet, + the answer box it cites) is the surface."""

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

DEFAULT_BASE_URL = "https://serpapi.com"
_EMPTY = "Fully empty"  # search_information.organic_results_state of a search Google found nothing for


class _RichPart(msgspec.Struct):
    extensions: list[str] | None = None


class _Rich(msgspec.Struct):
    top: _RichPart | None = None
    bottom: _RichPart | None = None


class _Organic(msgspec.Struct):
    link: str
    title: str | None = None
    snippet: str | None = None
    position: int | None = None
    date: str | None = None
    source: str | None = None
    displayed_link: str | None = None
    rich_snippet: _Rich | None = None


class _AnswerBox(msgspec.Struct):
    link: str | None = None
    snippet: str | None = None
    answer: str | None = None


class _Info(msgspec.Struct):
    organic_results_state: str | None = None


class _Body(msgspec.Struct):
    organic_results: list[_Organic] = []
    answer_box: _AnswerBox | None = None
    search_information: _Info | None = None
    error: str | None = None


def _rich(r: _Rich | None) -> str:
    parts = [] if r is None else [x for part in (r.top, r.bottom) if part for x in part.extensions or []]
    return " · ".join(parts)


class SerpApiSearch(SearchAdapter):
    """SerpApi's Google: US / English, about 10 organic results (Google no longer honours larger `num`)."""

    kind = "serpapi"
    label = "SerpApi"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"engine": "google", "gl": "us", "hl": "en", "google_domain": "google.com", "num": 10}

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        params = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in self.params.items()}
        # SerpApi takes the key only as a query parameter; URLs never reach an event, a log or an error text
        params["api_key"] = self._key.reveal() if self._key else ""
        return await self._http.call("GET", "search.json", what=f"search:{self.name}",
                                     headers={"Accept": "application/json"}, params={"q": query, **params},
                                     trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        empty = parsed.search_information is not None and parsed.search_information.organic_results_state == _EMPTY
        if parsed.error and not parsed.organic_results and not empty:
            raise ValueError(parsed.error)  # a 200 with an error that is not "no results"
        hits = []
        for rank, r in enumerate(parsed.organic_results, start=1):
            meta = {k: v for k, v in (("position", r.position), ("date", r.date), ("source", r.source)) if v}
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.link, domain=domain_or_url(None, r.link),
                                  snippet=join_surface([r.snippet, _rich(r.rich_snippet)]), metadata=meta))
        box = parsed.answer_box
        if box is not None and box.link:
            add_answer(hits, box.link, join_surface([box.answer, box.snippet]))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"error": msg}` for every failure."""
        return (str_message(body.get("error")) if isinstance(body, dict) else "") or text
