"""Parallel Search (v1): POST /v1/search; the objective-focused `excerpts` form the snippet surface.

Sandbox persona: BM25 plus passages; objective-focused excerpts (the three best passages, in markdown).
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
    canon,
    clip,
    digest,
    int_field,
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


# ---------------------------------------------------------------- sandbox persona

def persona(shelf: Shelf, query: str, n: int) -> list[Hit]:
    pages = shelf.pages
    return [Hit(page=pages[i], url=pages[i].url, title=pages[i].title, rank=rank,
                passages=[clip(x, 500) for x in shelf.best(query, i, 3)])
            for rank, i in shelf.bm25_hits("parallel", query, max(0, n))]


# ---------------------------------------------------------------- sandbox wire bodies

def parallel_ok(hits: list[Hit], *, key: str, session_id: str | None) -> dict[str, Any]:
    return {"search_id": f"search_{digest('parallel', key, n=32)}",
            "session_id": session_id or f"session_{digest('parallel-session', key, n=16)}",
            "results": [{"url": h.url, "title": h.title, "publish_date": h.page.published, "excerpts": h.passages}
                        for h in hits],
            "usage": [{"name": "sku_search", "count": 1}], "warnings": None}


def parallel_error(message: str, key: str = "", detail: Any = None) -> dict[str, Any]:
    return {"type": "error", "error": {"ref_id": digest("parallel-error", message, key, n=32), "message": message,
                                       "detail": detail}}


# ---------------------------------------------------------------- sandbox route and faults

_V1BETA_KEYS = ("max_results", "source_policy", "fetch_policy", "processor")


def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    if rejected(req.headers.get("x-api-key")):
        return WireReply(parallel_error("Invalid API key."), 401)
    body = req.body or {}
    queries = body.get("search_queries")
    stray = [k for k in _V1BETA_KEYS if k in body]
    if not isinstance(queries, list) or not queries or not all(isinstance(q, str) for q in queries) or stray:
        loc = ["body", stray[0]] if stray else ["body", "search_queries"]
        err = {"type": "extra_forbidden" if stray else "missing", "loc": loc,
               "msg": "Extra inputs are not permitted" if stray else "Field required"}
        return WireReply(parallel_error("Request validation error.", detail={"errors": [err]}), 422)
    settings = obj_field(body.get("advanced_settings"))
    n = int_field(settings.get("max_results"), 10) or 10
    objective = str(body.get("objective") or "")
    query = " ".join([objective, *queries]).strip()
    session = body.get("session_id") if isinstance(body.get("session_id"), str) else None
    key = request_key("parallel", canon.encode(body))

    def produce() -> WireReply:
        return WireReply(parallel_ok(persona(shelf, query, n), key=key, session_id=session))

    return Deferred(key, query, produce)


def fault(status: int, key: str) -> WireReply:
    return WireReply(parallel_error(FAULT_TEXT[status] + ".", key), status, retry_headers(status))


def quota(key: str) -> WireReply:
    return WireReply(parallel_error("Insufficient credit in account, please check your plan and billing settings.",
                                    key), 402)


PROVIDER = ProviderSpec(
    adapter=ParallelSearch, order=8,
    key_env="PARALLEL_API_KEY", base_url_env="SEARCHTRACE_PARALLEL_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=5.0, concurrency=4, timeout_s=60.0),  # 600 per minute
    routes=(SandboxRoute("/v1/search", ("POST",), search_route),),
    fault=fault, quota=quota,
    example="curl -H 'x-api-key: sandbox' -H 'Content-Type: application/json' -d '{{\"search_queries\": [\"Elmwyn Athletic\"]}}' {url}/v1/search",
    auth_header="x-api-key", auth_format="{key}",
)
