"""Tavily search: POST /search; `content` is the snippet surface (basic depth, general topic, no raw content).

Sandbox persona: ranks by best passage weighted by site authority (the answer page tends to be rank 1); its
`content` is the page's lead, so the answer shows only when the lead states it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from searchtrace.adapters._http import Reply
from searchtrace.adapters._keys import json_headers
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
    is_on,
    request_key,
    stable_uuid,
)
from searchtrace.adapters._search_base import (
    ProviderSpec,
    SearchAdapter,
    clean_text,
    domain_or_url,
    join_surface,
)
from searchtrace.adapters._types import Limits, SearchHit
from searchtrace.adapters._urls import domain_of

DEFAULT_BASE_URL = "https://api.tavily.com"


class _Result(msgspec.Struct):
    url: str
    title: str | None = None
    content: str | None = None
    raw_content: str | None = None  # only with include_raw_content: page text, part of the surface (docs/how-to/providers.md)
    score: float | None = None
    published_date: str | None = None


class _Body(msgspec.Struct):
    results: list[_Result] = []  # the SDK also treats a missing list as empty


class TavilySearch(SearchAdapter):
    """Tavily with the paper's settings: basic / general, raw content off, 10 results."""

    kind = "tavily"
    label = "Tavily"
    auth_statuses = (401,)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"search_depth": "basic", "topic": "general", "max_results": 10, "include_raw_content": False,
                "include_answer": False, "include_images": False}

    @classmethod
    def page_text(cls, params: dict[str, Any]) -> bool:
        return bool(params.get("include_raw_content"))

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = json_headers(self._key)
        return await self._http.call("POST", "search", what=f"search:{self.name}", headers=headers,
                                     json={"query": query, **self.params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        hits = []
        for rank, r in enumerate(parsed.results, start=1):
            meta: dict[str, Any] = {}
            if r.score is not None:
                meta["score"] = r.score
            if r.published_date:
                meta["published_date"] = r.published_date
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.url, domain=domain_or_url(None, r.url),
                                  snippet=join_surface([r.content, r.raw_content]), metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"detail": {"error": msg}}`, `{"detail": msg}`, or the keyless `{"error": {"message"}}` envelope."""
        if not isinstance(body, dict):
            return text
        detail = body.get("detail")
        if isinstance(detail, dict) and detail.get("error"):
            return str(detail["error"])
        if isinstance(detail, str):
            return detail
        err = body.get("error")
        if isinstance(err, dict):
            return str(err.get("message") or err.get("code") or text)
        if isinstance(err, str):
            return err
        return text


# ---------------------------------------------------------------- sandbox persona

def _spelling(shelf: Shelf, url: str) -> str:
    """Tavily adds tracking tags to some URLs (normalisation drops them)."""
    if not shelf.respelled("tavily", url):
        return url
    return url + ("&" if "?" in url else "?") + "utm_source=tavily&utm_medium=search"


def persona(shelf: Shelf, query: str, n: int) -> list[Hit]:
    out = []
    for rank, i, score in shelf.authority_order("tavily", query, max(0, n)):
        page = shelf.pages[i]
        lead = " ".join(shelf.sentences(i)[:2])
        out.append(Hit(page=page, url=_spelling(shelf, page.url), title=page.title, rank=rank,
                       content=clip(lead, 400), score=score))
    return out


# ---------------------------------------------------------------- sandbox wire bodies

def tavily_ok(query: str, hits: list[Hit], *, raw: bool, topic: str, key: str, answer: str | None = None,
              favicon: bool = False, images: str = "", usage: int | None = None,
              auto: dict[str, Any] | None = None) -> dict[str, Any]:
    """Tavily's body; the documented optional parts (answer, favicons, images, usage, auto_parameters) when asked.

    `images`: "" none, "urls" a list of URLs, "described" objects with a description.
    """
    results = []
    for h in hits:
        r: dict[str, Any] = {"url": h.url, "title": h.title, "content": h.content, "score": h.score,
                             "raw_content": h.page.body if raw else None}
        if topic == "news":
            r["published_date"] = h.page.published
        if favicon:
            r["favicon"] = f"https://{domain_of(h.url)}/favicon.ico"
        results.append(r)
    pictures: list[Any] = [f"https://{domain_of(h.url)}/images/{digest(h.url, n=12)}.jpg" for h in hits[:3]]
    if images == "described":
        pictures = [{"url": u, "description": f"An image from {h.title}"} for u, h in zip(pictures, hits, strict=False)]
    body: dict[str, Any] = {"query": query, "follow_up_questions": None, "answer": answer,
                            "images": pictures if images else [], "results": results}
    if auto is not None:
        body["auto_parameters"] = auto
    body["response_time"] = round(0.4 + (int(digest(key, n=4), 16) % 900) / 1000, 2)
    if usage is not None:
        body["usage"] = {"credits": usage}
    body["request_id"] = stable_uuid("tavily", key)
    return body


def tavily_error(message: str) -> dict[str, Any]:
    return {"detail": {"error": message}}


TAVILY_401 = "Unauthorized: missing or invalid API key."
TAVILY_429 = "Your request has been blocked due to excessive requests. Please reduce rate of requests."


# ---------------------------------------------------------------- sandbox route and faults

def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    """The api_key in the body wins over Authorization: Bearer."""
    body = req.body
    if body is None:
        return WireReply(tavily_error("Invalid JSON body."), 400)
    key_in_body = body.get("api_key")
    token = key_in_body if isinstance(key_in_body, str) and key_in_body else req.bearer()
    if not token or token.startswith("bad"):
        return WireReply(tavily_error(TAVILY_401), 401)
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return WireReply(tavily_error("Query is missing."), 400)
    if len(query) > 400:
        return WireReply(tavily_error("Query is too long. Max query length is 400 characters."), 400)
    try:
        n = int(body.get("max_results", 5))
    except (TypeError, ValueError):
        return WireReply(tavily_error("max_results must be an integer between 0 and 20."), 400)
    n = max(0, min(n, 20))
    raw = is_on(body.get("include_raw_content"))
    topic = str(body.get("topic", "general"))
    depth = str(body.get("search_depth", "basic"))
    answer_mode = body.get("include_answer")
    images = ("described" if is_on(body.get("include_image_descriptions")) else "urls") if is_on(body.get("include_images")) else ""
    auto = {"topic": topic, "search_depth": depth} if is_on(body.get("auto_parameters")) else None
    key = request_key("tavily", canon.encode({k: v for k, v in body.items() if k != "api_key"}))

    def produce() -> WireReply:
        hits = persona(shelf, query, n)
        answer = None
        if is_on(answer_mode):  # true / "basic": the best sentence of the top page; "advanced": its two best
            answer = shelf.answer(query, hits, 2 if answer_mode == "advanced" else 1)
        return WireReply(tavily_ok(query, hits, raw=raw, topic=topic, key=key, answer=answer,
                                   favicon=is_on(body.get("include_favicon")), images=images,
                                   usage=(2 if depth == "advanced" else 1) if is_on(body.get("include_usage")) else None,
                                   auto=auto))

    return Deferred(key, query, produce)


def fault(status: int, key: str) -> WireReply:
    msg = {429: TAVILY_429, 401: TAVILY_401, 500: "Internal Server Error", 503: "Service Unavailable"}[status]
    return WireReply(tavily_error(msg), status, dict(RETRY_HEADERS) if status == 429 else {})


def quota(key: str) -> WireReply:
    return WireReply(tavily_error("This request exceeds your plan's set usage limit. Please upgrade your plan or "
                                  "contact support@tavily.com"), 432)


_MCP_TOOL = "tavily_search"  # its MCP server's search tool
_MCP_KEYS = {"Title": "title", "ID": "id", "URL": "url", "Content": "content", "Raw Content": "raw_content",
            "Favicon": "favicon"}
_MCP_LINE = re.compile(r"^(Title|ID|URL|Content|Raw Content|Favicon): ?(.*)$")


def mcp_body(texts: Sequence[str]) -> dict[str, Any]:
    """tavily-mcp's `tavily_search` text (`Answer:`, then `Detailed Results:` with `Title:`, `ID:`, `URL:`, `Content:`,
    `Raw Content:`, `Favicon:` lines per result) as the Search API's body: results in order, contents kept whole."""
    text = "\n".join(texts)
    head, marker, rest = text.partition("Detailed Results:")
    if not marker:
        raise ValueError(f"no `Detailed Results:` section in {_MCP_TOOL}'s reply")
    results: list[dict[str, str]] = []
    field: str | None = None
    for line in rest.split("\n"):
        if line.strip() == "Images:" and field is not None:
            break
        m = _MCP_LINE.match(line)
        key = _MCP_KEYS[m.group(1)] if m else None
        if key is not None and m is not None:
            if not results or key in results[-1] or (key == "title" and "url" in results[-1]):
                results.append({})
            results[-1][key] = m.group(2)
            field = key
        elif field is not None and results:  # a content that spans lines
            results[-1][field] += "\n" + line
    body = []
    for r in results:
        if "url" not in r:
            raise ValueError(f"a {_MCP_TOOL} result without a URL line")
        body.append({k: v.strip() for k, v in r.items()})
    answer = head.partition("Answer:")[2].strip()
    return {"results": body, **({"answer": answer} if answer else {})}


PROVIDER = ProviderSpec(
    adapter=TavilySearch, order=2, paper=True,
    key_env="TAVILY_API_KEY", base_url_env="SEARCHTRACE_TAVILY_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=1.5, concurrency=4, timeout_s=60.0),
    routes=(SandboxRoute("/search", ("POST",), search_route),),
    fault=fault, quota=quota,
    sample_config=(
        '[providers.tavily]\n'
        'params = { search_depth = "basic", max_results = 10 }\n'
    ),
    example='TavilyClient(api_key="tvly-sandbox", api_base_url="{url}").search("Elmwyn Athletic", include_answer=True)',
    mcp_tool=_MCP_TOOL, mcp_body=mcp_body,
)
