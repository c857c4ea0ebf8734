"""SerpApi (Google engine): GET /search.json; Google's snippet (+ rich snippet, + the answer box it cites) is the surface.

Sandbox persona: Google-style ranking (title and description first, fresher pages ahead); SERP-style short
snippets (~155 characters) and an answer box quoting the best sentence of rank 1 when it matches well.
"""

from __future__ import annotations

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
    age,
    canon,
    digest,
    favicon,
    rejected,
    request_key,
    retry_headers,
)
from searchtrace.adapters._search_base import (
    ProviderSpec,
    SearchAdapter,
    add_answer,
    clean_text,
    domain_or_url,
    join_surface,
    str_message,
)
from searchtrace.adapters._types import Limits, SearchHit
from searchtrace.adapters._urls import domain_of

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


# ---------------------------------------------------------------- sandbox wire bodies

def serpapi_ok(query: str, hits: list[Hit], *, key: str, gl: str, hl: str) -> dict[str, Any]:
    sid = digest("serpapi", key, n=24)
    created = "2026-01-01 00:00:00 UTC"
    body: dict[str, Any] = {
        "search_metadata": {"id": sid, "status": "Success", "json_endpoint": f"https://serpapi.com/searches/{sid}.json",
                            "created_at": created, "processed_at": created,
                            "google_url": f"https://www.google.com/search?q={query.replace(' ', '+')}",
                            "raw_html_file": f"https://serpapi.com/searches/{sid}.html", "total_time_taken": 1.23},
        "search_parameters": {"engine": "google", "q": query, "google_domain": "google.com", "hl": hl, "gl": gl,
                              "device": "desktop"},
        "search_information": {"query_displayed": query, "total_results": 1000 * (len(hits) + 1),
                               "time_taken_displayed": 0.31,
                               "organic_results_state": "Results for exact spelling" if hits else "Fully empty"},
    }
    if not hits:
        body["error"] = "Google hasn't returned any results for this query."
        return body
    if hits[0].answer:
        body["answer_box"] = {"type": "organic_result", "title": hits[0].title, "link": hits[0].url,
                              "displayed_link": domain_of(hits[0].url), "snippet": hits[0].answer}
    body["organic_results"] = [
        {"position": h.rank, "title": h.title, "link": h.url,
         "redirect_link": f"https://www.google.com/url?q={h.url}", "displayed_link": domain_of(h.url),
         "favicon": favicon(h.url), "date": age(h.page.published), "snippet": h.description,
         "snippet_highlighted_words": [w for w in query.split() if w.lower() in h.description.lower()][:3],
         "source": h.page.site}
        for h in hits]
    body["related_searches"] = [{"query": f"{query} {h.page.site}".strip()} for h in hits[:2]]
    return body


def serpapi_error(message: str) -> dict[str, Any]:
    return {"error": message}


SERPAPI_401 = "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"
SERPAPI_429 = "Your account has run out of searches."
SERPAPI_THROUGHPUT = "You have exceeded the hourly throughput limit for your plan."


# ---------------------------------------------------------------- sandbox route and faults

def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    """The key comes as the `api_key` query parameter, and is not part of the request's identity."""
    params = dict(req.params)
    if rejected(params.pop("api_key", None)):
        return WireReply(serpapi_error(SERPAPI_401), 401)
    if params.get("engine", "google") != "google":
        return WireReply(serpapi_error(f"Unsupported `{params['engine']}` search engine."), 400)
    q = params.get("q", "")
    if not q.strip():
        return WireReply(serpapi_error("Missing query `q` parameter."), 400)
    gl, hl = params.get("gl", "us"), params.get("hl", "en")
    key = request_key("serpapi", canon.encode(params))

    def produce() -> WireReply:
        hits = shelf.serp("serpapi", q, 10, 155)  # Google gives about 10 whatever `num` says
        return WireReply(serpapi_ok(q, hits, key=key, gl=gl, hl=hl))

    return Deferred(key, q, produce)


def fault(status: int, key: str) -> WireReply:
    message = {429: SERPAPI_THROUGHPUT, 401: SERPAPI_401}.get(status, FAULT_TEXT[status])
    return WireReply(serpapi_error(message), status, retry_headers(status))


def quota(key: str) -> WireReply:
    return WireReply(serpapi_error(SERPAPI_429), 429)


PROVIDER = ProviderSpec(
    adapter=SerpApiSearch, order=6,
    key_env="SERPAPI_API_KEY", base_url_env="SEARCHTRACE_SERPAPI_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=1.0, concurrency=2, timeout_s=60.0),  # hourly caps per plan
    routes=(SandboxRoute("/search.json", ("GET",), search_route), SandboxRoute("/search", ("GET",), search_route)),
    fault=fault, quota=quota,
    example="curl '{url}/search.json?engine=google&q=Elmwyn+Athletic&api_key=sandbox'",
    key_param="api_key",
)
