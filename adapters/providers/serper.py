"""Serper (Google): POST /search; Google's snippet (+ the answer box it cites) is the surface.

Sandbox persona: Google-style ranking (title and description first, fresher pages ahead); SERP-style short
snippets (~160 characters) and an answer box quoting the best sentence of rank 1 when it matches well.
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
    int_field,
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

DEFAULT_BASE_URL = "https://google.serper.dev"


class _Organic(msgspec.Struct):
    link: str
    title: str | None = None
    snippet: str | None = None
    position: int | None = None
    date: str | None = None


class _AnswerBox(msgspec.Struct):
    link: str | None = None
    snippet: str | None = None
    answer: str | None = None


class _Body(msgspec.Struct):
    organic: list[_Organic] = []  # left out entirely when nothing was found
    answerBox: _AnswerBox | None = None  # noqa: N815 (wire name)


class SerperSearch(SearchAdapter):
    """Serper's Google: US / English, 10 results."""

    kind = "serper"
    label = "Serper"
    auth_statuses = (401, 403)  # a bad key is 403 "Unauthorized."

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {"gl": "us", "hl": "en", "num": 10}

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = {"Accept": "application/json", "Content-Type": "application/json",
                   "X-API-KEY": self._key.reveal() if self._key else ""}
        return await self._http.call("POST", "search", what=f"search:{self.name}", headers=headers,
                                     json={"q": query, **self.params}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        parsed = msgspec.json.decode(body, type=_Body)
        hits = []
        for rank, r in enumerate(parsed.organic, start=1):
            meta = {k: v for k, v in (("position", r.position), ("date", r.date)) if v}
            hits.append(SearchHit(rank=rank, title=clean_text(r.title), url=r.link, domain=domain_or_url(None, r.link),
                                  snippet=join_surface([r.snippet]), metadata=meta))
        box = parsed.answerBox
        if box is not None and box.link:
            add_answer(hits, box.link, join_surface([box.answer, box.snippet]))
        return hits

    def error_message(self, body: Any, text: str) -> str:
        """`{"message", "statusCode"}`."""
        return (str_message(body.get("message")) if isinstance(body, dict) else "") or text


# ---------------------------------------------------------------- sandbox wire bodies

def serper_ok(query: str, hits: list[Hit], *, gl: str, hl: str, num: int) -> dict[str, Any]:
    body: dict[str, Any] = {"searchParameters": {"q": query, "gl": gl, "hl": hl, "num": num, "type": "search",
                                                 "engine": "google"}}
    if hits and hits[0].answer:
        body["answerBox"] = {"snippet": hits[0].answer, "title": hits[0].title, "link": hits[0].url}
    if hits:  # Serper leaves `organic` out when nothing was found
        body["organic"] = [{"title": h.title, "link": h.url, "snippet": h.description, "date": age(h.page.published),
                            "position": h.rank} for h in hits]
        body["relatedSearches"] = [{"query": f"{query} {h.page.site}".strip()} for h in hits[:2]]
    body["credits"] = 1
    return body


def serper_error(message: str, status: int) -> dict[str, Any]:
    return {"message": message, "statusCode": status}


# ---------------------------------------------------------------- sandbox route and faults

def search_route(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    if rejected(req.headers.get("x-api-key")):
        return WireReply(serper_error("Unauthorized.", 403), 403)
    body = req.body or {}
    q = body.get("q")
    num = int_field(body.get("num"), 10)
    if not isinstance(q, str) or not q.strip() or num is None or not 1 <= num <= 100:
        return WireReply(serper_error("Query is required; num must be 1-100", 400), 400)
    gl, hl = str(body.get("gl", "us")), str(body.get("hl", "en"))
    key = request_key("serper", canon.encode(body))
    count = num

    def produce() -> WireReply:
        return WireReply(serper_ok(q, shelf.serp("serper", q, count, 160), gl=gl, hl=hl, num=count))

    return Deferred(key, q, produce)


def fault(status: int, key: str) -> WireReply:
    return WireReply(serper_error({401: "Unauthorized."}.get(status, FAULT_TEXT[status]), status), status,
                     retry_headers(status))


def quota(key: str) -> WireReply:
    return WireReply(serper_error("Not enough credits", 400), 400)


PROVIDER = ProviderSpec(
    adapter=SerperSearch, order=7,
    key_env="SERPER_API_KEY", base_url_env="SEARCHTRACE_SERPER_BASE_URL", default_base_url=DEFAULT_BASE_URL,
    limits=Limits(rps=5.0, concurrency=4, timeout_s=30.0),  # 50 QPS on the smallest pack
    routes=(SandboxRoute("/search", ("POST",), search_route),),
    fault=fault, quota=quota,
    example="curl -H 'X-API-KEY: sandbox' -H 'Content-Type: application/json' -d '{{\"q\": \"Elmwyn Athletic\"}}' {url}/search",
    auth_header="X-API-KEY", auth_format="{key}",
)
