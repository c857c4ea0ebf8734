"""Brave Web Search: GET /res/v1/web/search; description + extra snippets form the snippet surface."""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters.http import Reply
from searchtrace.adapters.search_base import SearchAdapter, clean_text, domain_or_url, join_surface
from searchtrace.adapters.types import SearchHit

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
