"""Search routes in the real providers' wire formats: Brave (GET), Tavily (POST), Firecrawl v2 and v1 (POST)."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from searchtrace.adapters.sandbox import personas, wire
from searchtrace.adapters.sandbox.app import json_body, request_key, sandbox_of
from searchtrace.adapters.sandbox.responses import json_response

_canon = msgspec.json.Encoder(order="sorted")


def _bearer(request: Request) -> str | None:
    """The bearer token, '' for 'Bearer ' with nothing after it, None without the header."""
    auth = request.headers.get("authorization")
    if auth is None:
        return None
    scheme, _, token = auth.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _false(value: Any) -> bool:
    return str(value).lower() in ("false", "0", "no")


def _on(value: Any) -> bool:
    """A request flag that is set (true, "basic", 1, …), not absent, null or a false spelling."""
    return bool(value) and not _false(value)


# ---------------------------------------------------------------- Brave

async def brave_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("brave", request)
    params: dict[str, Any] = dict(request.query_params)
    if request.method == "POST":
        params.update(await json_body(request) or {})
    token = request.headers.get("x-subscription-token")
    if not token:
        return json_response(wire.brave_validation(["header", "x-subscription-token"], "Field required", None), 422)
    if token.startswith("bad"):
        return json_response(wire.brave_token_invalid(422), 422)
    q = str(params.get("q", ""))
    if not q.strip():
        return json_response(wire.brave_validation(["query", "q"], "Field required", None), 422)
    if len(q) > 400 or len(q.split()) > 50:
        return json_response(wire.brave_validation(["query", "q"], "String should have at most 400 characters and 50 words", q), 422)
    try:
        count, offset = int(params.get("count", 20)), int(params.get("offset", 0))
    except ValueError:
        return json_response(wire.brave_validation(["query", "count"], "Input should be a valid integer", params.get("count")), 422)
    if not 1 <= count <= 20 or not 0 <= offset <= 9:
        loc = "count" if not 1 <= count <= 20 else "offset"
        return json_response(wire.brave_validation(["query", loc], "Input should be in range", params.get(loc)), 422)
    country = str(params.get("country", "US"))
    if not (country.upper() == "ALL" or (len(country) == 2 and country.isalpha())):
        return json_response(wire.brave_validation(["query", "country"], "Input should be a valid country code", country), 422)
    decorate = not _false(params.get("text_decorations", "true"))
    extra = not _false(params.get("extra_snippets", "true"))
    key = request_key("brave", q, str(count), str(offset), str(decorate), str(extra))

    async def produce() -> Response:
        hits = personas.search(sb.world, "brave", q, count * (offset + 1), decorate=decorate, extra=extra)
        page = hits[count * offset :]
        for i, h in enumerate(page, start=1):
            h.rank = i
        more = len(hits) == count * (offset + 1)
        return json_response(wire.brave_ok(q, page, country=country.lower(), more=more), 200, wire.BRAVE_RATE_HEADERS)

    return await sb.run("brave", sb.fault("brave", key, q), key, produce)


# ---------------------------------------------------------------- Tavily

async def tavily_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("tavily", request)
    body = await json_body(request)
    if body is None:
        return json_response(wire.tavily_error("Invalid JSON body."), 400)
    key_in_body = body.get("api_key")
    token = key_in_body if isinstance(key_in_body, str) and key_in_body else _bearer(request)
    if not token or token.startswith("bad"):
        return json_response(wire.tavily_error(wire.TAVILY_401), 401)
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return json_response(wire.tavily_error("Query is missing."), 400)
    if len(query) > 400:
        return json_response(wire.tavily_error("Query is too long. Max query length is 400 characters."), 400)
    try:
        n = int(body.get("max_results", 5))
    except (TypeError, ValueError):
        return json_response(wire.tavily_error("max_results must be an integer between 0 and 20."), 400)
    n = max(0, min(n, 20))
    raw = _on(body.get("include_raw_content"))
    topic = str(body.get("topic", "general"))
    depth = str(body.get("search_depth", "basic"))
    answer_mode = body.get("include_answer")
    images = ("described" if _on(body.get("include_image_descriptions")) else "urls") if _on(body.get("include_images")) else ""
    auto = {"topic": topic, "search_depth": depth} if _on(body.get("auto_parameters")) else None
    canon = {k: v for k, v in body.items() if k != "api_key"}
    key = request_key("tavily", _canon.encode(canon))

    async def produce() -> Response:
        hits = personas.search(sb.world, "tavily", query, n)
        answer = None
        if _on(answer_mode):  # true / "basic": the best sentence of the top page; "advanced": its two best
            answer = personas.answer(sb.world, query, hits, 2 if answer_mode == "advanced" else 1)
        return json_response(wire.tavily_ok(query, hits, raw=raw, topic=topic, key=key, answer=answer,
                                            favicon=_on(body.get("include_favicon")), images=images,
                                            usage=(2 if depth == "advanced" else 1) if _on(body.get("include_usage")) else None,
                                            auto=auto))

    return await sb.run("tavily", sb.fault("tavily", key, query), key, produce)


# ---------------------------------------------------------------- Firecrawl

_V1_KEYS = {"query", "limit", "tbs", "filter", "lang", "country", "location", "timeout", "ignoreInvalidURLs",
            "scrapeOptions", "origin", "integration"}
_V2_KEYS = _V1_KEYS | {"sources", "categories", "includeDomains", "excludeDomains", "highlights", "safe",
                       "enterprise", "asyncScraping"}


def _wants_markdown(body: dict[str, Any]) -> bool:
    opts = body.get("scrapeOptions")
    formats = opts.get("formats", []) if isinstance(opts, dict) else []
    return any(f == "markdown" or (isinstance(f, dict) and f.get("type") == "markdown") for f in formats)


async def _firecrawl(request: Request, version: str) -> Response:
    sb = sandbox_of(request)
    sb.count("firecrawl", request)
    token = _bearer(request)
    if token is None:
        return json_response(wire.firecrawl_error("Unauthorized"), 401)
    if not token:
        return json_response(wire.firecrawl_error("Unauthorized: Token missing"), 401)
    if token.startswith("bad"):
        return json_response(wire.firecrawl_error(wire.FIRECRAWL_401), 401)
    body = await json_body(request)
    if body is None:
        return json_response(wire.firecrawl_error("Bad Request", "BAD_REQUEST", []), 400)
    unknown = sorted(set(body) - (_V1_KEYS if version == "v1" else _V2_KEYS))
    if unknown:
        return json_response(wire.firecrawl_error("Bad Request", "BAD_REQUEST", [{
            "code": "unrecognized_keys", "keys": unknown, "path": [],
            "message": f"Unrecognized key in body -- please review the {version} API documentation for request body changes"}]), 400)
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return json_response(wire.firecrawl_error("Bad Request", "BAD_REQUEST", [{
            "code": "invalid_type", "expected": "string", "received": "undefined", "path": ["query"],
            "message": "Required"}]), 400)
    limit = body.get("limit", 5 if version == "v1" else 10)
    if not isinstance(limit, int) or not 1 <= limit <= 100:
        return json_response(wire.firecrawl_error("Bad Request", "BAD_REQUEST", [{
            "code": "too_big" if isinstance(limit, int) and limit > 100 else "invalid_type", "path": ["limit"],
            "message": "Number must be between 1 and 100"}]), 400)
    markdown = _wants_markdown(body)
    sources = body.get("sources", ["web"])
    kinds = [s if isinstance(s, str) else s.get("type", "web") for s in sources] if isinstance(sources, list) else ["web"]
    key = request_key("firecrawl", version, _canon.encode(body))

    async def produce() -> Response:
        hits = personas.search(sb.world, "firecrawl", query, limit)
        if version == "v1":
            return json_response(wire.firecrawl_v1_ok(hits, markdown=markdown))
        out = wire.firecrawl_v2_ok(hits if "web" in kinds else [], markdown=markdown)
        if "web" not in kinds:
            out["data"].pop("web")
        for k in kinds:
            if k != "web":
                out["data"][k] = []
        return json_response(out)

    return await sb.run("firecrawl", sb.fault("firecrawl", key, query), key, produce)


async def firecrawl_v2(request: Request) -> Response:
    return await _firecrawl(request, "v2")


async def firecrawl_v1(request: Request) -> Response:
    return await _firecrawl(request, "v1")
