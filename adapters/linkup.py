"""Linkup: POST /v1/search with outputType searchResults; each text result's `content` (page text) is the surface."""

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

DEFAULT_BASE_URL = "https://api.linkup.so"
NO_RESULT = "SEARCH_QUERY_NO_RESULT"  # Linkup's HTTP 400 for a search that found nothing


class _Result(msgspec.Struct):
    url: str
    type: str = "text"
    name: str | None = None
    content: str | None = None


class _Body(msgspec.Struct):
    results: list[_Result] = []


def _code(body: Any) -> str | None:
    err = body.get("error") if isinstance(body, dict) else None
    return str(err.get("code")) if isinstance(err, dict) and err.get("code") else None


class LinkupSearch(SearchAdapter):
    """Linkup at `fast` depth (recommended for agents), 10 results, text results only (images dropped)."""

    kind = "linkup"
    label = "Linkup"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"depth": "fast", "outputType": "searchResults", "maxResults": 10, "includeImages": False}

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        return await self._http.call("POST", "v1/search", what=f"search:{self.name}", headers=json_headers(self._key),
                                     json={"q": query, **self.params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        hits: list[SearchHit] = []
        for r in parsed.results:
            if r.type != "text":
                continue
            hits.append(SearchHit(rank=len(hits) + 1, title=clean_text(r.name), url=r.url,
                                  domain=domain_or_url(None, r.url), snippet=join_surface([r.content])))
        return hits

    def no_results(self, http_status: int, body: Any) -> bool:
        return http_status == 400 and _code(body) == NO_RESULT

    def is_auth_failure(self, http_status: int, body: Any) -> bool:
        """403 also means an IP not on the allow list or a task type the key may not use: not a bad key."""
        return http_status == 401 or (http_status == 403 and _code(body) not in ("IP_NOT_WHITELISTED",
                                                                                 "TASK_TYPE_NOT_SUPPORTED"))

    def error_message(self, body: Any, text: str) -> str:
        """`{"statusCode", "error": {"code", "message", "details": [{field, message}]}}`."""
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict):
            return text
        msg = str_message(err) or text
        if err.get("code"):
            msg = f"{err['code']}: {msg}"
        details = err.get("details")
        if isinstance(details, list):
            extra = "; ".join(f"{d.get('field', '')}: {d.get('message', '')}" for d in details if isinstance(d, dict))
            if extra:
                msg = f"{msg} ({extra})"
        return msg
