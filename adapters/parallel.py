"""Parallel Search (v1): POST /v1/search; the objective-focused `excerpts` form the snippet surface."""

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

DEFAULT_BASE_URL = "https://api.parallel.ai"


class _Result(msgspec.Struct):
    url: str
    title: str | None = None
    publish_date: str | None = None
    excerpts: list[str] | None = None


class _Body(msgspec.Struct):
    results: list[_Result] = []


class ParallelSearch(SearchAdapter):
    """Parallel in `fast` mode (the server default is the costlier `advanced`), 10 results, the query as objective."""

    kind = "parallel"
    label = "Parallel"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"mode": "fast", "advanced_settings": {"max_results": 10}}

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = {"Accept": "application/json", "Content-Type": "application/json",
                   "x-api-key": self._key.reveal() if self._key else ""}
        body = {"objective": query, "search_queries": [query], **self.params}
        return await self._http.call("POST", "v1/search", what=f"search:{self.name}", headers=headers, json=body,
                                     trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        hits = []
        for rank, r in enumerate(parsed.results, start=1):
            meta = {"publish_date": r.publish_date} if r.publish_date else {}
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.url, domain=domain_or_url(None, r.url),
                                  snippet=join_surface(r.excerpts or []), metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"type": "error", "error": {"ref_id", "message", "detail"}}` (422 details name the fields)."""
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict):
            return text
        msg = str_message(err) or text
        detail = err.get("detail")
        errors = detail.get("errors") if isinstance(detail, dict) else None
        if isinstance(errors, list):
            extra = "; ".join(f"{'.'.join(map(str, e.get('loc', [])))}: {e.get('msg', '')}"
                              for e in errors if isinstance(e, dict))
            if extra:
                msg = f"{msg} ({extra})"
        return msg
