"""You.com Web Search: POST /v1/search; description + snippets (+ highlights / page text when asked) form the surface.

Sandbox persona: BM25; the meta description plus two query-relevant snippets.
"""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters._http import Reply
from searchtrace.adapters._persona import (
    EPOCH,
    FAULT_TEXT,
    Deferred,
    Hit,
    SandboxRoute,
    Shelf,
    WireReply,
    WireRequest,
    canon,
    clip,
    digest,
    int_field,
    obj_field,
    rejected,
    request_key,
    retry_headers,
    stable_uuid,
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
from searchtrace.adapters._urls import domain_of

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


# ---------------------------------------------------------------- sandbox persona

def persona(shelf: Shelf, query: str, n: int) -> list[Hit]:
    pages = shelf.pages
    return [Hit(page=pages[i], url=pages[i].url, title=pages[i].title, rank=rank,
                description=pages[i].description, passages=[clip(x, 300) for x in shelf.best(query, i, 2)])
            for rank, i in shelf.bm25_hits("youcom", query, max(0, n))]


# ---------------------------------------------------------------- sandbox wire bodies

def youcom_ok(query: str, hits: list[Hit], *, key: str, highlights: bool, full_page: bool) -> dict[str, Any]:
    web = []
    for h in hits:
        item: dict[str, Any] = {"url": h.url, "title": h.title, "description": h.description, "snippets": h.passages,
                                "page_age": f"{h.page.published}T00:00:00",
                                "favicon_url": f"https://ydc-index.io/favicon?domain={domain_of(h.url)}&size=128"}
        if highlights or full_page:
            item["contents"] = {"markdown": h.page.body} if full_page else {"highlights": h.passages}
        web.append(item)
    return {"results": {"web": web}, "metadata": {"search_uuid": stable_uuid("youcom", key), "query": query,
                                                  "latency": round(0.2 + (int(digest(key, n=4), 16) % 500) / 1000, 3)}}


YOUCOM_RATE_HEADERS = {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": str(EPOCH + 1)}


# ---------------------------------------------------------------- sandbox route and faults

def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    if rejected(req.headers.get("x-api-key")):
        return WireReply({"detail": "Invalid or expired API key"}, 401)
    body = req.fields()
    query = body.get("query")
    n = int_field(body.get("count"), 10)
    if not isinstance(query, str) or not query.strip() or n is None or not 1 <= n <= 100:
        return WireReply({"detail": [{"loc": ["body", "query"], "msg": "Field required", "type": "missing"}]}, 422)
    if body.get("include_domains") and body.get("exclude_domains"):
        return WireReply({"error": "include_domains cannot be combined with exclude_domains"}, 422)
    mode = obj_field(body.get("extraction")).get("extraction_mode")
    key = request_key("youcom", canon.encode(body))
    count = n

    def produce() -> WireReply:
        return WireReply(youcom_ok(query, persona(shelf, query, count), key=key, highlights=mode == "highlights",
                                   full_page=mode == "full_page"), 200, YOUCOM_RATE_HEADERS)

    return Deferred(key, query, produce)


def fault(status: int, key: str) -> WireReply:
    body = {"detail": {429: "Too Many Requests", 401: "Invalid or expired API key"}.get(status, FAULT_TEXT[status])}
    headers = retry_headers(status)
    if status == 429:
        headers = {**headers, **YOUCOM_RATE_HEADERS, "X-RateLimit-Remaining": "0"}
    return WireReply(body, status, headers)


def quota(key: str) -> WireReply:
    return WireReply({"error": "payment_required", "message": "Your account has no remaining API credits.",
                      "upgrade_url": "https://you.com/platform/billing", "limit": 20000, "used": 20000,
                      "period": "lifetime", "reset_at": None}, 402)


PROVIDER = ProviderSpec(
    adapter=YouComSearch, order=9,
    key_env="YDC_API_KEY", base_url_env="SEARCHTRACE_YOUCOM_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=5.0, concurrency=4, timeout_s=30.0),  # 10 req/s
    routes=(SandboxRoute("/v1/search", ("GET", "POST"), search_route),),
    fault=fault, quota=quota,
    example="curl -H 'X-API-Key: sandbox' -H 'Content-Type: application/json' -d '{{\"query\": \"Elmwyn Athletic\"}}' {url}/v1/search",
    auth_header="X-API-Key", auth_format="{key}",
)
