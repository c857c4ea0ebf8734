"""Brave Web Search: GET /res/v1/web/search; description + extra snippets form the snippet surface.

Sandbox persona: BM25 ranking; snippet-rich (query-biased description with <strong> terms, plus extra snippets).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from searchtrace.adapters._http import Reply
from searchtrace.adapters._mcp_results import decode_json
from searchtrace.adapters._persona import (
    EPOCH,
    RETRY_HEADERS,
    Deferred,
    Hit,
    SandboxRoute,
    Shelf,
    WireReply,
    WireRequest,
    age,
    clip,
    digest,
    is_false,
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

DEFAULT_BASE_URL = "https://api.search.brave.com"


class _MetaUrl(msgspec.Struct):
    hostname: str | None = None


class _Result(msgspec.Struct):
    url: str
    title: str | None = None
    description: str | None = None
    extra_snippets: list[str] | None = None
    age: str | None = None
    page_age: str | None = None
    language: str | None = None
    meta_url: _MetaUrl | None = None


class _Web(msgspec.Struct):
    results: list[_Result] = []


class _Body(msgspec.Struct):
    web: _Web | None = None  # absent when there are no results


class BraveSearch(SearchAdapter):
    """Brave with the paper's settings: US / English, safesearch moderate, 10 results, extra snippets."""

    kind = "brave"
    label = "Brave"
    auth_statuses = (401, 403)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"country": "US", "search_lang": "en", "ui_lang": "en-US", "safesearch": "moderate",
                "count": 10, "extra_snippets": True}

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        query_params = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in self.params.items()}
        headers = {"Accept": "application/json", "X-Subscription-Token": self._key.reveal() if self._key else ""}
        return await self._http.call("GET", "res/v1/web/search", what=f"search:{self.name}", headers=headers,
                                     params={"q": query, **query_params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        results = parsed.web.results if parsed.web is not None else []
        hits = []
        for rank, r in enumerate(results, start=1):
            snippet = join_surface([clean_text(r.description)] + [clean_text(s) for s in (r.extra_snippets or [])])
            meta = {k: v for k, v in (("age", r.age), ("page_age", r.page_age), ("language", r.language)) if v}
            host = r.meta_url.hostname if r.meta_url is not None else None
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.url,
                                  domain=domain_or_url(host, r.url), snippet=snippet, metadata=meta))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"error": {code, detail, meta.errors}}` as seen live, or the documented `{"errors": [...]}`."""
        if not isinstance(body, dict):
            return text
        err = body.get("error")
        if err is None and isinstance(body.get("errors"), list) and body["errors"]:
            err = body["errors"][0]
        if not isinstance(err, dict):
            return text
        msg = str(err.get("detail") or err.get("message") or text)
        if err.get("code"):
            msg = f"{err['code']}: {msg}"
        details = (err.get("meta") or {}).get("errors") if isinstance(err.get("meta"), dict) else None
        if isinstance(details, list):
            extra = "; ".join(f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg', '')}"
                              for d in details if isinstance(d, dict))
            if extra:
                msg = f"{msg} ({extra})"
        return msg

    def is_auth_failure(self, http_status: int, body: Any) -> bool:
        """Brave answers a bad or missing token with 422, not 401."""
        if http_status in (401, 403):
            return True
        if http_status == 422 and isinstance(body, dict) and isinstance(body.get("error"), dict):
            err = body["error"]
            if err.get("code") == "SUBSCRIPTION_TOKEN_INVALID":
                return True
            meta = err.get("meta") if isinstance(err.get("meta"), dict) else {}
            locs = [d.get("loc") for d in meta.get("errors", []) if isinstance(d, dict)]
            return any(isinstance(loc, list) and "x-subscription-token" in map(str, loc) for loc in locs)
        return False


# ---------------------------------------------------------------- sandbox persona

def _decorate(shelf: Shelf, text: str, query: str) -> str:
    """Brave's text decorations: query terms wrapped in <strong>."""
    q = shelf.terms(query)
    return re.sub(r"[A-Za-z0-9]+", lambda m: f"<strong>{m.group(0)}</strong>" if m.group(0).lower() in q else m.group(0), text)


def _spelling(shelf: Shelf, url: str) -> str:
    """Brave capitalises the host of some URLs (normalisation undoes it)."""
    if not shelf.respelled("brave", url):
        return url
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    return f"{scheme}://{host[:1].upper()}{host[1:]}/{path}"


def persona(shelf: Shelf, query: str, n: int, decorate: bool = True, extra: bool = True) -> list[Hit]:
    out = []
    for rank, (_, i) in enumerate(shelf.ranked("brave", query)[:max(0, n)], start=1):
        page = shelf.pages[i]
        sents = shelf.sentences(i)
        scored = sorted(((sc, j, sents[j]) for j, sc in enumerate(shelf.passage_scores(query, i))),
                        key=lambda x: (-x[0], x[1]))
        best = [s for sc, _, s in scored if sc > 0] or sents[:1]
        desc = clip(best[0], 300) if best else page.description
        extras = [clip(s, 240) for s in best[1:4]] if extra else []
        if decorate:
            desc, extras = _decorate(shelf, desc, query), [_decorate(shelf, s, query) for s in extras]
        out.append(Hit(page=page, url=_spelling(shelf, page.url), title=page.title, rank=rank,
                       description=desc, extra_snippets=extras))
    return out


# ---------------------------------------------------------------- sandbox wire bodies

def brave_ok(query: str, hits: list[Hit], *, country: str = "us", more: bool = False) -> dict[str, Any]:
    results = []
    for h in hits:
        host = domain_of(h.url)
        path = h.url.split("://", 1)[1].partition("/")[2].split("?")[0].strip("/")
        r: dict[str, Any] = {
            "title": h.title,
            "url": h.url,
            "is_source_local": False,
            "is_source_both": False,
            "description": h.description,
            "page_age": f"{h.page.published}T00:00:00",
            "profile": {"name": h.page.site, "url": h.url, "long_name": host,
                        "img": f"https://imgs.search.brave.example/{digest(host, n=16)}/favicon"},
            "language": "en",
            "family_friendly": True,
            "type": "search_result",
            "subtype": "article" if h.page.kind in ("outdated", "distractor") else "generic",
            "is_live": False,
            "meta_url": {"scheme": "https", "netloc": host.removeprefix("www."), "hostname": host,
                         "favicon": f"https://imgs.search.brave.example/{digest(host, n=16)}/favicon",
                         "path": " › ".join([""] + path.split("/")).strip() if path else ""},
            "age": age(h.page.published),
        }
        if h.extra_snippets:
            r["extra_snippets"] = h.extra_snippets
        results.append(r)
    body: dict[str, Any] = {
        "query": {"original": query, "show_strict_warning": False, "is_navigational": False,
                  "is_news_breaking": False, "spellcheck_off": True, "country": country, "bad_results": False,
                  "should_fallback": False, "postal_code": "", "city": "", "header_country": "",
                  "more_results_available": more, "state": ""},
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": i, "all": False} for i in range(len(hits))],
                  "top": [], "side": []},
        "type": "search",
    }
    if results:  # Brave omits `web` when there is no result
        body["web"] = {"type": "search", "results": results, "family_friendly": True}
    return body


BRAVE_RATE_HEADERS = {"X-RateLimit-Limit": "1, 15000", "X-RateLimit-Policy": "1;w=1, 15000;w=2592000",
                      "X-RateLimit-Remaining": "1, 14000", "X-RateLimit-Reset": "1, 1419704"}


def brave_error(status: int, code: str, detail: str, meta: dict[str, Any] | None = None, key: str = "") -> dict[str, Any]:
    return {"type": "ErrorResponse",
            "error": {"id": stable_uuid("brave", code, key), "status": status, "code": code, "detail": detail,
                      "meta": meta or {}},
            "time": EPOCH}


def brave_token_invalid(status: int, key: str = "") -> dict[str, Any]:
    """Brave's answer to a bad token: 422 live, 401 as an injected fault."""
    return brave_error(status, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.",
                       {"component": "authentication"}, key)


def brave_validation(loc: list[str], msg: str, input_: Any, key: str = "") -> dict[str, Any]:
    return brave_error(422, "VALIDATION", "Unable to validate request parameter(s)",
                       {"errors": [{"type": "missing" if input_ is None else "value_error", "loc": loc, "msg": msg,
                                    "input": input_}]}, key)


def brave_rate_limited(key: str = "") -> dict[str, Any]:
    return brave_error(429, "RATE_LIMITED", "Request rate limit exceeded for plan",
                       {"plan": "Free", "rate_limit": 1, "rate_current": 1, "quota_limit": 2000, "quota_current": 15,
                        "org_rate_limit": None, "org_rate_current": 0, "component": "rate_limiter"}, key)


# ---------------------------------------------------------------- sandbox route and faults

def _invalid(loc: list[str], msg: str, input_: Any) -> WireReply:
    return WireReply(brave_validation(loc, msg, input_), 422)


def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    params = req.fields()
    token = req.headers.get("x-subscription-token")
    if not token:
        return _invalid(["header", "x-subscription-token"], "Field required", None)
    if token.startswith("bad"):
        return WireReply(brave_token_invalid(422), 422)
    q = str(params.get("q", ""))
    if not q.strip():
        return _invalid(["query", "q"], "Field required", None)
    if len(q) > 400 or len(q.split()) > 50:
        return _invalid(["query", "q"], "String should have at most 400 characters and 50 words", q)
    try:
        count, offset = int(params.get("count", 20)), int(params.get("offset", 0))
    except ValueError:
        return _invalid(["query", "count"], "Input should be a valid integer", params.get("count"))
    if not 1 <= count <= 20 or not 0 <= offset <= 9:
        loc = "count" if not 1 <= count <= 20 else "offset"
        return _invalid(["query", loc], "Input should be in range", params.get(loc))
    country = str(params.get("country", "US"))
    if not (country.upper() == "ALL" or (len(country) == 2 and country.isalpha())):
        return _invalid(["query", "country"], "Input should be a valid country code", country)
    decorate = not is_false(params.get("text_decorations", "true"))
    extra = not is_false(params.get("extra_snippets", "true"))
    key = request_key("brave", q, str(count), str(offset), str(decorate), str(extra))

    def produce() -> WireReply:
        hits = persona(shelf, q, count * (offset + 1), decorate=decorate, extra=extra)
        page = hits[count * offset :]
        for i, h in enumerate(page, start=1):
            h.rank = i
        more = len(hits) == count * (offset + 1)
        return WireReply(brave_ok(q, page, country=country.lower(), more=more), 200, BRAVE_RATE_HEADERS)

    return Deferred(key, q, produce)


def fault(status: int, key: str) -> WireReply:
    if status == 429:
        return WireReply(brave_rate_limited(key), 429, {**RETRY_HEADERS, **BRAVE_RATE_HEADERS})
    if status == 401:
        return WireReply(brave_token_invalid(401, key), 401)
    code = "INTERNAL_ERROR" if status == 500 else "SERVICE_UNAVAILABLE"
    return WireReply(brave_error(status, code, "Something went wrong, please try again later.",
                                 {"component": "web_search"}, key), status, {})


def quota(key: str) -> WireReply:
    return WireReply(brave_error(429, "QUOTA_LIMITED", "Request quota limit exceeded for plan",
                                 {"plan": "Free", "quota_limit": 2000, "quota_current": 2000}, key), 429)


_MCP_TOOL = "brave_web_search"  # its MCP server's search tool
_MCP_EMPTY = "No web results found"  # its MCP server's empty reply


def mcp_body(texts: Sequence[str]) -> dict[str, Any]:
    """brave-search-mcp-server's `brave_web_search` text (one JSON object `{url, title, description, extra_snippets}`
    per result; news, video, FAQ and discussion items follow) as the Web Search API's body: web results only."""
    results = []
    for text in texts:
        item = decode_json(text)
        # web results only: news and video items carry `mutated_by_goggles`, FAQ items `question`, discussions `data`
        if isinstance(item, dict) and isinstance(item.get("url"), str) and not {"mutated_by_goggles", "question",
                                                                                   "data"} & item.keys():
            results.append(item)
    if not results and not any(t.strip().startswith(_MCP_EMPTY) for t in texts):
        raise ValueError(f"no web result objects in {_MCP_TOOL}'s reply")
    return {"web": {"results": results}}


PROVIDER = ProviderSpec(
    adapter=BraveSearch, order=1, paper=True,
    key_env="BRAVE_API_KEY", base_url_env="SEARCHTRACE_BRAVE_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=1.0, concurrency=2, timeout_s=30.0),
    routes=(SandboxRoute("/res/v1/web/search", ("GET", "POST"), search_route),),
    fault=fault, quota=quota,
    sample_config=(
        '[providers.brave]\n'
        'params = { country = "US", safesearch = "moderate", count = 10 }\n'
        "rps = 1.0                         # e.g. a 1 request/s plan; the report's latency is provider time (docs/reference/prices.md),\n"
        '                                  # so this client-side limit never makes the provider look slower\n'
    ),
    example="curl -H 'X-Subscription-Token: sandbox' '{url}/res/v1/web/search?q=Elmwyn+Athletic'",
    auth_header="X-Subscription-Token", auth_format="{key}",
    mcp_tool=_MCP_TOOL, mcp_body=mcp_body,
)
