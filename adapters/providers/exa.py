"""Exa search: POST /search; highlights (and summary / text when asked for) form the snippet surface.

Sandbox persona: "neural" ranking by the best passages; highlight-only surface (two query-relevant sentences);
page text only when `contents.text` asks for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from searchtrace.adapters._http import Reply
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
    digest,
    favicon,
    int_field,
    is_on,
    obj_field,
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


# ---------------------------------------------------------------- sandbox persona

def persona(shelf: Shelf, query: str, n: int) -> list[Hit]:
    scored = []
    for _, i in shelf.ranked("exa", query):
        top = sorted(shelf.passage_scores(query, i), reverse=True)[:2]
        scored.append((sum(top), i))
    scored.sort(key=lambda x: (-x[0], x[1]))
    pages = shelf.pages
    return [Hit(page=pages[i], url=pages[i].url, title=pages[i].title, rank=rank,
                passages=[clip(x, 300) for x in shelf.best(query, i, 2)], score=round(s, 6))
            for rank, (s, i) in enumerate(scored[:max(0, n)], start=1)]


# ---------------------------------------------------------------- sandbox wire bodies

def exa_ok(hits: list[Hit], *, key: str, highlights: bool, text_chars: int | None, summary: bool) -> dict[str, Any]:
    results = []
    for h in hits:
        r: dict[str, Any] = {"id": h.url, "title": h.title, "url": h.url,
                             "publishedDate": f"{h.page.published}T00:00:00.000Z", "author": h.page.site,
                             "favicon": favicon(h.url)}
        if text_chars is not None:
            r["text"] = h.page.body[:text_chars]
        if highlights:
            r["highlights"] = h.passages
        if summary:
            r["summary"] = h.page.description
        results.append(r)
    contents = {k: round(0.001 * len(hits), 4) for k, on in (("text", text_chars is not None),
                                                             ("highlights", highlights), ("summary", summary)) if on}
    return {"requestId": digest("exa", key, n=32), "resolvedSearchType": "neural", "results": results,
            "searchTime": 120 + int(digest(key, n=4), 16) % 400,
            "costDollars": {"total": round(0.005 + sum(contents.values()), 4), "search": {"neural": 0.005},
                            **({"contents": contents} if contents else {})}}


def exa_error(tag: str, message: str, key: str = "") -> dict[str, Any]:
    return {"requestId": digest("exa-error", tag, key, n=32), "error": message, "tag": tag}


# ---------------------------------------------------------------- sandbox route and faults

def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    if rejected(req.headers.get("x-api-key") or req.bearer()):
        return WireReply(exa_error("INVALID_API_KEY", "Invalid API key"), 401)
    body = req.body
    query = body.get("query") if body else None
    n = int_field(body.get("numResults"), 10) if body else None
    if not isinstance(query, str) or not query.strip() or n is None or not 1 <= n <= 100 or body is None:
        return WireReply(exa_error("INVALID_REQUEST_BODY", "Invalid request body | Validation error: "
                                   "query must be a non-empty string, numResults 1-100"), 400)
    contents = obj_field(body.get("contents"))
    text = contents.get("text")
    text_chars = None
    if isinstance(text, dict):
        text_chars = int_field(text.get("maxCharacters", text.get("max_characters")), 10_000) or 10_000
    elif is_on(text):
        text_chars = 10_000
    highlights, summary = is_on(contents.get("highlights")), is_on(contents.get("summary"))
    key = request_key("exa", canon.encode(body))
    count = n

    def produce() -> WireReply:
        return WireReply(exa_ok(persona(shelf, query, count), key=key, highlights=highlights, text_chars=text_chars,
                                summary=summary))

    return Deferred(key, query, produce)


def fault(status: int, key: str) -> WireReply:
    tag = {429: "RATE_LIMIT_EXCEEDED", 401: "INVALID_API_KEY", 500: "INTERNAL_ERROR", 503: "SERVICE_OVERLOADED"}
    return WireReply(exa_error(tag[status], FAULT_TEXT[status], key), status, retry_headers(status))


def quota(key: str) -> WireReply:
    return WireReply(exa_error("NO_MORE_CREDITS", "You have exceeded your credits limit", key), 402)


_MCP_TOOL = "web_search_exa"  # its MCP server's search tool
_MCP_EMPTY = "No search results found"  # its MCP server's empty reply
_MCP_SEP = re.compile(r"\n\s*---\s*\n")


def mcp_body(texts: Sequence[str]) -> dict[str, Any]:
    """exa-mcp-server's `web_search_exa` text (`Title:`, `URL:`, `Published:`, `Author:`, then `Highlights:` lines or
    `Text:` per result, joined by `---` lines) as the Search API's body (`N/A` fields left out)."""
    text = "\n".join(texts).strip()
    if text.startswith(_MCP_EMPTY):
        return {"results": []}
    results = []
    for block in _MCP_SEP.split(text):
        r: dict[str, Any] = {}
        lines = block.strip().split("\n")
        for i, line in enumerate(lines):
            name, colon, value = line.partition(": ")
            if line.rstrip() == "Highlights:":
                r["highlights"] = [h for h in (x.strip() for x in lines[i + 1:]) if h]
                break
            if colon and name == "Text":
                r["text"] = "\n".join([value, *lines[i + 1:]]).strip()
                break
            key = {"Title": "title", "URL": "url", "Published": "publishedDate", "Author": "author"}.get(name)
            if colon and key is not None and value.strip() != "N/A":
                r[key] = value.strip()
        if "url" not in r:
            raise ValueError(f"a {_MCP_TOOL} result without a URL line")
        results.append(r)
    return {"results": results}


PROVIDER = ProviderSpec(
    adapter=ExaSearch, order=4,
    key_env="EXA_API_KEY", base_url_env="SEARCHTRACE_EXA_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=5.0, concurrency=4, timeout_s=60.0),  # /search 10 QPS
    routes=(SandboxRoute("/search", ("POST",), search_route),),
    fault=fault, quota=quota,
    example='Exa(api_key="sandbox", base_url="{url}").search("Elmwyn Athletic", num_results=5)',
    auth_header="x-api-key", auth_format="{key}",
    mcp_tool=_MCP_TOOL, mcp_body=mcp_body,
)
