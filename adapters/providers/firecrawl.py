"""Firecrawl search: POST /v2/search (or /v1/search); `description` is the snippet surface, scraping off.

Sandbox persona: ranks by a shallow index (title and description); sparse snippets (the page's short meta
description). The sandbox's v1 rejects unknown body keys with 400, as the real one does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from searchtrace.adapters._http import Reply
from searchtrace.adapters._keys import json_headers
from searchtrace.adapters._mcp_results import decode_json
from searchtrace.adapters._persona import (
    RETRY_HEADERS,
    Deferred,
    Hit,
    SandboxRoute,
    Shelf,
    WireReply,
    WireRequest,
    canon,
    clip,
    digest,
    request_key,
)
from searchtrace.adapters._search_base import (
    ProviderSpec,
    SearchAdapter,
    clean_text,
    domain_or_url,
    join_surface,
)
from searchtrace.adapters._types import Limits, SearchHit

DEFAULT_BASE_URL = "https://api.firecrawl.dev"


class _Result(msgspec.Struct):
    url: str
    title: str | None = None
    description: str | None = None
    position: int | None = None
    category: str | None = None
    markdown: str | None = None  # only with scrapeOptions: page text, part of the surface (docs/how-to/providers.md)


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


# ---------------------------------------------------------------- sandbox persona

def _spelling(shelf: Shelf, url: str) -> str:
    """Firecrawl adds a trailing slash to some URLs (normalisation drops it)."""
    if not shelf.respelled("firecrawl", url) or url.endswith("/"):
        return url
    return url + "/"


def persona(shelf: Shelf, query: str, n: int) -> list[Hit]:
    """Ranks by a shallow index (title and description) first, the page body only as a weak tie-breaker."""
    pages = shelf.pages
    full = dict((i, s) for s, i in shelf.ranked("firecrawl", query))

    def fresh(i: int) -> float:  # newer pages first among equally matching heads
        return 1.0 + (int(pages[i].published[:4]) - 2010) / 16

    scored = sorted(((s * fresh(i) + 0.1 * full.get(i, 0.0), i) for s, i in shelf.ranked("firecrawl", query, "head")),
                    key=lambda x: (-x[0], x[1]))
    seen = {i for _, i in scored}
    scored += [(0.1 * s, i) for i, s in full.items() if i not in seen]
    return [
        Hit(page=pages[i], url=_spelling(shelf, pages[i].url), title=pages[i].title,
            rank=rank, description=clip(pages[i].description, 160))
        for rank, (_, i) in enumerate(scored[:max(0, n)], start=1)
    ]


# ---------------------------------------------------------------- sandbox wire bodies

def _fc_item(h: Hit, markdown: bool, position: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"url": h.url, "title": h.title, "description": h.description}
    if position:
        item["position"] = h.rank
    if markdown:
        item["markdown"] = h.page.body
        item["metadata"] = {"title": h.title, "description": h.page.description, "sourceURL": h.url,
                            "url": h.page.url, "statusCode": 200}
    return item


def firecrawl_v2_ok(hits: list[Hit], *, markdown: bool) -> dict[str, Any]:
    return {"success": True, "data": {"web": [_fc_item(h, markdown, True) for h in hits]},
            "creditsUsed": max(1, len(hits) if markdown else 1)}


def firecrawl_v1_ok(hits: list[Hit], *, markdown: bool) -> dict[str, Any]:
    if not hits:
        return {"success": True, "data": [], "warning": "No search results found"}
    return {"success": True, "data": [_fc_item(h, markdown, False) for h in hits]}


def firecrawl_error(message: str, code: str | None = None, details: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"success": False}
    if code:
        body["code"] = code
    body["error"] = message
    if details is not None:
        body["details"] = details
    return body


FIRECRAWL_401 = "Unauthorized: Invalid token"
FIRECRAWL_429 = ("Rate limit exceeded. Consumed (req/min): 20, Remaining (req/min): 0. Upgrade your plan at "
                 "https://firecrawl.dev/pricing for increased rate limits or please retry after 1s, resets at "
                 "Thu Jan 01 2026 00:01:00 GMT+0000 (Coordinated Universal Time)")


# ---------------------------------------------------------------- sandbox routes and faults

_V1_KEYS = {"query", "limit", "tbs", "filter", "lang", "country", "location", "timeout", "ignoreInvalidURLs",
            "scrapeOptions", "origin", "integration"}
_V2_KEYS = _V1_KEYS | {"sources", "categories", "includeDomains", "excludeDomains", "highlights", "safe",
                       "enterprise", "asyncScraping"}


def _wants_markdown(body: dict[str, Any]) -> bool:
    opts = body.get("scrapeOptions")
    formats = opts.get("formats", []) if isinstance(opts, dict) else []
    return any(f == "markdown" or (isinstance(f, dict) and f.get("type") == "markdown") for f in formats)


def _bad_request(details: list[Any]) -> WireReply:
    return WireReply(firecrawl_error("Bad Request", "BAD_REQUEST", details), 400)


def _search(req: WireRequest, shelf: Shelf, version: str) -> WireReply | Deferred:
    token = req.bearer()
    if token is None:
        return WireReply(firecrawl_error("Unauthorized"), 401)
    if not token:
        return WireReply(firecrawl_error("Unauthorized: Token missing"), 401)
    if token.startswith("bad"):
        return WireReply(firecrawl_error(FIRECRAWL_401), 401)
    body = req.body
    if body is None:
        return _bad_request([])
    unknown = sorted(set(body) - (_V1_KEYS if version == "v1" else _V2_KEYS))
    if unknown:
        return _bad_request([{
            "code": "unrecognized_keys", "keys": unknown, "path": [],
            "message": f"Unrecognized key in body -- please review the {version} API documentation for request body changes"}])
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return _bad_request([{"code": "invalid_type", "expected": "string", "received": "undefined",
                              "path": ["query"], "message": "Required"}])
    limit = body.get("limit", 5 if version == "v1" else 10)
    if not isinstance(limit, int) or not 1 <= limit <= 100:
        return _bad_request([{"code": "too_big" if isinstance(limit, int) and limit > 100 else "invalid_type",
                              "path": ["limit"], "message": "Number must be between 1 and 100"}])
    markdown = _wants_markdown(body)
    sources = body.get("sources", ["web"])
    kinds = [s if isinstance(s, str) else s.get("type", "web") for s in sources] if isinstance(sources, list) else ["web"]
    key = request_key("firecrawl", version, canon.encode(body))

    def produce() -> WireReply:
        hits = persona(shelf, query, limit)
        if version == "v1":
            return WireReply(firecrawl_v1_ok(hits, markdown=markdown))
        out = firecrawl_v2_ok(hits if "web" in kinds else [], markdown=markdown)
        if "web" not in kinds:
            out["data"].pop("web")
        for k in kinds:
            if k != "web":
                out["data"][k] = []
        return WireReply(out)

    return Deferred(key, query, produce)


def v2_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    return _search(req, shelf, "v2")


def v1_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    return _search(req, shelf, "v1")


def fault(status: int, key: str) -> WireReply:
    msg = {429: FIRECRAWL_429, 401: FIRECRAWL_401,
           500: f"An unexpected error occurred. Please contact help@firecrawl.com for help. Your exception ID is {digest(key, n=32)}",
           503: "Service Unavailable"}[status]
    return WireReply(firecrawl_error(msg), status, dict(RETRY_HEADERS) if status == 429 else {})


def quota(key: str) -> WireReply:
    return WireReply(firecrawl_error("Payment required to access this resource."), 402)


_MCP_TOOL = "firecrawl_search"  # its MCP server's search tool


def mcp_body(texts: Sequence[str]) -> dict[str, Any]:
    """firecrawl-mcp's `firecrawl_search` JSON as the /v2/search body (an envelope is added where older servers sent
    only its `data`)."""
    doc = decode_json("\n".join(texts))
    if isinstance(doc, dict) and ("data" in doc or "success" in doc):
        return doc
    if isinstance(doc, dict) and "web" in doc or isinstance(doc, list):
        return {"success": True, "data": doc}
    raise ValueError(f"{_MCP_TOOL}'s reply is not the JSON of a search reply")


PROVIDER = ProviderSpec(
    adapter=FirecrawlSearch, order=3, paper=True,
    key_env="FIRECRAWL_API_KEY", base_url_env="SEARCHTRACE_FIRECRAWL_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=1.5, concurrency=4, timeout_s=60.0),
    routes=(SandboxRoute("/v2/search", ("POST",), v2_route), SandboxRoute("/v1/search", ("POST",), v1_route)),
    fault=fault, quota=quota,
    sample_config=(
        '[providers.firecrawl]\n'
        'params = { limit = 10 }\n'
    ),
    example='Firecrawl(api_key="fc-sandbox", api_url="{url}").search("Elmwyn Athletic", limit=5)',
    mcp_tool=_MCP_TOOL, mcp_body=mcp_body,
)
