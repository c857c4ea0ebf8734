"""Response bodies of the eight SPEC §14 providers (success and error), built from persona hits.

Shapes follow research/providers2.md and its fixtures; every value is a deterministic function of the request.
"""

from __future__ import annotations

from typing import Any

from searchtrace.adapters.sandbox.personas import Hit
from searchtrace.adapters.sandbox.wire import EPOCH, _age, digest, stable_uuid
from searchtrace.adapters.urls import domain_of


def _favicon(url: str) -> str:
    return f"https://{domain_of(url)}/favicon.ico"


# ---------------------------------------------------------------- Exa

def exa_ok(hits: list[Hit], *, key: str, highlights: bool, text_chars: int | None, summary: bool) -> dict[str, Any]:
    results = []
    for h in hits:
        r: dict[str, Any] = {"id": h.url, "title": h.title, "url": h.url,
                             "publishedDate": f"{h.page.published}T00:00:00.000Z", "author": h.page.site,
                             "favicon": _favicon(h.url)}
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


# ---------------------------------------------------------------- Perplexity

def perplexity_ok(hits: list[Hit], *, key: str) -> dict[str, Any]:
    return {"id": stable_uuid("perplexity", key),
            "results": [{"title": h.title, "url": h.url, "snippet": h.content, "date": h.page.published,
                         "last_updated": "2026-01-01"} for h in hits]}


def perplexity_error(message: str, type_: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "code": code}}


PERPLEXITY_401 = "Invalid API key provided. You can find your API key at https://www.perplexity.ai/settings/api."


# ---------------------------------------------------------------- SerpApi (Google)

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
         "favicon": _favicon(h.url), "date": _age(h.page.published), "snippet": h.description,
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


# ---------------------------------------------------------------- Serper (Google)

def serper_ok(query: str, hits: list[Hit], *, gl: str, hl: str, num: int) -> dict[str, Any]:
    body: dict[str, Any] = {"searchParameters": {"q": query, "gl": gl, "hl": hl, "num": num, "type": "search",
                                                 "engine": "google"}}
    if hits and hits[0].answer:
        body["answerBox"] = {"snippet": hits[0].answer, "title": hits[0].title, "link": hits[0].url}
    if hits:  # Serper leaves `organic` out when nothing was found
        body["organic"] = [{"title": h.title, "link": h.url, "snippet": h.description, "date": _age(h.page.published),
                            "position": h.rank} for h in hits]
        body["relatedSearches"] = [{"query": f"{query} {h.page.site}".strip()} for h in hits[:2]]
    body["credits"] = 1
    return body


def serper_error(message: str, status: int) -> dict[str, Any]:
    return {"message": message, "statusCode": status}


# ---------------------------------------------------------------- Parallel

def parallel_ok(hits: list[Hit], *, key: str, session_id: str | None) -> dict[str, Any]:
    return {"search_id": f"search_{digest('parallel', key, n=32)}",
            "session_id": session_id or f"session_{digest('parallel-session', key, n=16)}",
            "results": [{"url": h.url, "title": h.title, "publish_date": h.page.published, "excerpts": h.passages}
                        for h in hits],
            "usage": [{"name": "sku_search", "count": 1}], "warnings": None}


def parallel_error(message: str, key: str = "", detail: Any = None) -> dict[str, Any]:
    return {"type": "error", "error": {"ref_id": digest("parallel-error", message, key, n=32), "message": message,
                                       "detail": detail}}


# ---------------------------------------------------------------- You.com

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


# ---------------------------------------------------------------- Linkup

def linkup_ok(hits: list[Hit]) -> dict[str, Any]:
    return {"results": [{"type": "text", "name": h.title, "url": h.url, "content": h.content,
                         "favicon": _favicon(h.url)} for h in hits]}


def linkup_error(status: int, code: str, message: str, details: list[Any] | None = None) -> dict[str, Any]:
    return {"statusCode": status, "error": {"code": code, "message": message, "details": details or []}}


# ---------------------------------------------------------------- Jina Search

def jina_search_ok(hits: list[Hit], *, content: bool) -> dict[str, Any]:
    data = []
    for h in hits:
        tokens = max(1, len(h.content) // 4) if content else 0
        item: dict[str, Any] = {"title": h.title, "url": h.url, "description": h.description,
                                "date": _age(h.page.published)}
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
