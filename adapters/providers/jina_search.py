"""Jina Search (s.jina.ai): POST /; the description is the surface, plus each page's text when `content` is on.

Sandbox persona: BM25; only the short description unless page content is asked for (then the whole page).
"""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters._http import Reply
from searchtrace.adapters._jina import envelope_message
from searchtrace.adapters._keys import json_headers
from searchtrace.adapters._persona import (
    FAULT_TEXT,
    Deferred,
    Hit,
    SandboxRoute,
    Shelf,
    WireReply,
    WireRequest,
    age,
    canon,
    clip,
    int_field,
    jina_error,
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
)
from searchtrace.adapters._types import Limits, SearchHit

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


# ---------------------------------------------------------------- sandbox persona

def persona(shelf: Shelf, query: str, n: int) -> list[Hit]:
    pages = shelf.pages
    return [Hit(page=pages[i], url=pages[i].url, title=pages[i].title, rank=rank,
                description=clip(pages[i].description, 200), content=pages[i].body)
            for rank, i in shelf.bm25_hits("jina_search", query, max(0, n))]


# ---------------------------------------------------------------- sandbox wire bodies

def jina_search_ok(hits: list[Hit], *, content: bool) -> dict[str, Any]:
    data = []
    for h in hits:
        tokens = max(1, len(h.content) // 4) if content else 0
        item: dict[str, Any] = {"title": h.title, "url": h.url, "description": h.description,
                                "date": age(h.page.published)}
        if content:
            item["content"] = h.content
        item["usage"] = {"tokens": tokens}
        data.append(item)
    floor = -(-max(1, len(hits)) // 10) * 10_000  # at least 10,000 tokens per 10 results (SRC assignChargeAmount)
    total = max(sum(d["usage"]["tokens"] for d in data), floor)
    if not content and data:
        for d in data:
            d["usage"]["tokens"] = total // len(data)
    return {"code": 200, "status": 20000, "data": data, "meta": {"usage": {"tokens": total}}}


# ---------------------------------------------------------------- sandbox route and faults

def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    if rejected(req.bearer()):
        return WireReply(jina_error(401, "AuthenticationRequiredError", 40103,
                                    "Authentication is required to use this endpoint. Please provide a "
                                    "valid API key via Authorization header."), 401)
    body = req.fields()
    q = body.get("q")
    n = int_field(body.get("num", body.get("count")), 10)
    if not isinstance(q, str) or not q.strip() or n is None or not 0 <= n <= 20:
        return WireReply(jina_error(400, "ParamValidationError", 40001, "q is required; num 0-20"), 400)
    content = req.headers.get("x-respond-with", "").lower() != "no-content"
    key = request_key("jina_search", canon.encode(body), str(content))
    count = n

    def produce() -> WireReply:
        out = jina_search_ok(persona(shelf, q, count), content=content)
        return WireReply(out, 200, {"X-Usage-Tokens": str(out["meta"]["usage"]["tokens"])})

    return Deferred(key, q, produce)


def fault(status: int, key: str) -> WireReply:
    name, code = {429: ("RateLimitTriggeredError", 42903), 401: ("AuthenticationFailedError", 40103),
                  500: ("InternalServerError", 50000), 503: ("ServiceUnavailableError", 50301)}[status]
    return WireReply(jina_error(status, name, code, FAULT_TEXT[status]), status, retry_headers(status))


def quota(key: str) -> WireReply:
    return WireReply(jina_error(402, "InsufficientBalanceError", 40203,
                                "Account balance not enough to run this query, please recharge."), 402)


PROVIDER = ProviderSpec(
    adapter=JinaSearch, order=11,
    key_env="JINA_API_KEY", base_url_env="SEARCHTRACE_JINA_SEARCH_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=1.5, concurrency=2, timeout_s=60.0),  # 100 RPM on a free key
    routes=(SandboxRoute("/", ("GET", "POST"), search_route),),
    fault=fault, quota=quota,
    example="curl -H 'Authorization: Bearer sandbox' -H 'Accept: application/json' '{url}/?q=Elmwyn+Athletic'",
)
