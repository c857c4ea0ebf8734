"""Linkup: POST /v1/search with outputType searchResults; each text result's `content` (page text) is the surface.

Sandbox persona: authority-weighted like tavily; a page-text extract (the first ~1,200 characters) per result.
"""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters._http import Reply
from searchtrace.adapters._keys import json_headers
from searchtrace.adapters._persona import (
    FAULT_TEXT,
    Deferred,
    Hit,
    SandboxRoute,
    Shelf,
    WireReply,
    WireRequest,
    canon,
    clip,
    favicon,
    int_field,
    rejected,
    request_key,
    retry_headers,
)
from searchtrace.adapters._search_base import (
    ProviderSpec,
    SearchAdapter,
    clean_text,
    domain_or_url,
    join_surface,
    str_message,
)
from searchtrace.adapters._types import Limits, SearchHit

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


# ---------------------------------------------------------------- sandbox persona

def persona(shelf: Shelf, query: str, n: int) -> list[Hit]:
    pages = shelf.pages
    return [Hit(page=pages[i], url=pages[i].url, title=pages[i].title, rank=rank,
                content=clip(shelf.plain(i), 1200))
            for rank, i, _ in shelf.authority_order("linkup", query, max(0, n))]


# ---------------------------------------------------------------- sandbox wire bodies

def linkup_ok(hits: list[Hit]) -> dict[str, Any]:
    return {"results": [{"type": "text", "name": h.title, "url": h.url, "content": h.content,
                         "favicon": favicon(h.url)} for h in hits]}


def linkup_error(status: int, code: str, message: str, details: list[Any] | None = None) -> dict[str, Any]:
    return {"statusCode": status, "error": {"code": code, "message": message, "details": details or []}}


# ---------------------------------------------------------------- sandbox route and faults

def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    if rejected(req.bearer()):
        return WireReply(linkup_error(401, "UNAUTHORIZED", "Unauthorized action"), 401)
    body = req.body or {}
    q, depth, output = body.get("q"), body.get("depth"), body.get("outputType")
    problems = [{"field": f, "message": m} for f, m, bad in (
        ("q", "q should not be empty", not isinstance(q, str) or not q.strip()),
        ("depth", "depth must be one of the following values: flash, fast, standard, deep",
         depth not in ("flash", "fast", "standard", "deep")),
        ("outputType", "outputType must be one of the following values: sourcedAnswer, searchResults, structured",
         output not in ("sourcedAnswer", "searchResults", "structured"))) if bad]
    if problems or not isinstance(q, str):
        return WireReply(linkup_error(400, "VALIDATION_ERROR", "Validation failed", problems), 400)
    n = int_field(body.get("maxResults"), 10) or 10
    key = request_key("linkup", canon.encode(body))
    query = q

    def produce() -> WireReply:
        hits = persona(shelf, query, n)
        if not hits:
            return WireReply(linkup_error(400, NO_RESULT, "The query did not yield any result"), 400)
        return WireReply(linkup_ok(hits))

    return Deferred(key, query, produce)


def fault(status: int, key: str) -> WireReply:
    code = {429: "TOO_MANY_REQUESTS", 401: "UNAUTHORIZED", 500: "INTERNAL_SERVER_ERROR", 503: "SERVICE_UNAVAILABLE"}
    return WireReply(linkup_error(status, code[status], FAULT_TEXT[status]), status, retry_headers(status))


def quota(key: str) -> WireReply:
    return WireReply(linkup_error(429, "INSUFFICIENT_FUNDS_CREDITS", "Insufficient funds credits"), 429)


PROVIDER = ProviderSpec(
    adapter=LinkupSearch, order=10,
    key_env="LINKUP_API_KEY", base_url_env="SEARCHTRACE_LINKUP_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=5.0, concurrency=4, timeout_s=60.0),  # 10 QPS per organisation
    routes=(SandboxRoute("/v1/search", ("POST",), search_route),),
    fault=fault, quota=quota,
    example="curl -H 'Authorization: Bearer sandbox' -H 'Content-Type: application/json' -d '{{\"q\": \"Elmwyn Athletic\", \"depth\": \"fast\", "
            "\"outputType\": \"searchResults\"}}' {url}/v1/search",
)
