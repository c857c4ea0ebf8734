"""Search routes of the eight SPEC §14 providers in their own wire formats, over the same World.

Each checks the key where its provider reads it (missing or `bad…` -> the provider's own rejection), reads
the documented request fields the persona uses, and answers through `Sandbox.run` (faults by query marker).
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from searchtrace.adapters.sandbox import personas, wire_more
from searchtrace.adapters.sandbox.app import json_body, request_key, sandbox_of
from searchtrace.adapters.sandbox.responses import json_response
from searchtrace.adapters.sandbox.search_routes import _bearer, _on

_canon = msgspec.json.Encoder(order="sorted")


def _rejected(token: str | None) -> bool:
    return not token or token.startswith("bad")


def _int(value: Any, default: int) -> int | None:
    """An integer request field (None when it is not one)."""
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _obj(value: Any) -> dict[str, Any]:
    """A nested request object, {} when absent or not an object."""
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------- Exa

async def exa_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("exa", request)
    if _rejected(request.headers.get("x-api-key") or _bearer(request)):
        return json_response(wire_more.exa_error("INVALID_API_KEY", "Invalid API key"), 401)
    body = await json_body(request)
    query = body.get("query") if body else None
    n = _int(body.get("numResults"), 10) if body else None
    if not isinstance(query, str) or not query.strip() or n is None or not 1 <= n <= 100:
        return json_response(wire_more.exa_error("INVALID_REQUEST_BODY", "Invalid request body | Validation error: "
                                                 "query must be a non-empty string, numResults 1-100"), 400)
    assert body is not None
    contents = _obj(body.get("contents"))
    text = contents.get("text")
    text_chars = None
    if isinstance(text, dict):
        text_chars = _int(text.get("maxCharacters", text.get("max_characters")), 10_000) or 10_000
    elif _on(text):
        text_chars = 10_000
    highlights, summary = _on(contents.get("highlights")), _on(contents.get("summary"))
    key = request_key("exa", _canon.encode(body))

    async def produce() -> Response:
        hits = personas.search(sb.world, "exa", query, n)
        return json_response(wire_more.exa_ok(hits, key=key, highlights=highlights, text_chars=text_chars,
                                              summary=summary))

    return await sb.run("exa", sb.fault("exa", key, query), key, produce)


# ---------------------------------------------------------------- Perplexity

async def perplexity_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("perplexity", request)
    if _rejected(_bearer(request)):
        return json_response(wire_more.perplexity_error(wire_more.PERPLEXITY_401, "invalid_api_key", 401), 401)
    body = await json_body(request) or {}
    query = body.get("query")
    n = _int(body.get("max_results"), 10)
    tokens = _int(body.get("max_tokens_per_page"), 512)
    if not isinstance(query, str) or not query.strip() or n is None or not 1 <= n <= 20 or not tokens or tokens < 1:
        return json_response(wire_more.perplexity_error("query must be a string; max_results 1-20",
                                                        "invalid_request", 400), 400)
    key = request_key("perplexity", _canon.encode(body))

    async def produce() -> Response:
        hits = personas.search(sb.world, "perplexity", query, n, chars=4 * tokens)
        return json_response(wire_more.perplexity_ok(hits, key=key))

    return await sb.run("perplexity", sb.fault("perplexity", key, query), key, produce)


# ---------------------------------------------------------------- SerpApi

async def serpapi_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("serpapi", request)
    params = dict(request.query_params)
    if _rejected(params.pop("api_key", None)):
        return json_response(wire_more.serpapi_error(wire_more.SERPAPI_401), 401)
    if params.get("engine", "google") != "google":
        return json_response(wire_more.serpapi_error(f"Unsupported `{params['engine']}` search engine."), 400)
    q = params.get("q", "")
    if not q.strip():
        return json_response(wire_more.serpapi_error("Missing query `q` parameter."), 400)
    gl, hl = params.get("gl", "us"), params.get("hl", "en")
    key = request_key("serpapi", _canon.encode(params))  # the key is not part of the request's identity

    async def produce() -> Response:
        hits = personas.search(sb.world, "serpapi", q, 10)  # Google gives about 10 whatever `num` says
        return json_response(wire_more.serpapi_ok(q, hits, key=key, gl=gl, hl=hl))

    return await sb.run("serpapi", sb.fault("serpapi", key, q), key, produce)


# ---------------------------------------------------------------- Serper

async def serper_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("serper", request)
    if _rejected(request.headers.get("x-api-key")):
        return json_response(wire_more.serper_error("Unauthorized.", 403), 403)
    body = await json_body(request) or {}
    q = body.get("q")
    num = _int(body.get("num"), 10)
    if not isinstance(q, str) or not q.strip() or num is None or not 1 <= num <= 100:
        return json_response(wire_more.serper_error("Query is required; num must be 1-100", 400), 400)
    gl, hl = str(body.get("gl", "us")), str(body.get("hl", "en"))
    key = request_key("serper", _canon.encode(body))

    async def produce() -> Response:
        hits = personas.search(sb.world, "serper", q, num)
        return json_response(wire_more.serper_ok(q, hits, gl=gl, hl=hl, num=num))

    return await sb.run("serper", sb.fault("serper", key, q), key, produce)


# ---------------------------------------------------------------- Parallel

_V1BETA_KEYS = ("max_results", "source_policy", "fetch_policy", "processor")


async def parallel_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("parallel", request)
    if _rejected(request.headers.get("x-api-key")):
        return json_response(wire_more.parallel_error("Invalid API key."), 401)
    body = await json_body(request) or {}
    queries = body.get("search_queries")
    stray = [k for k in _V1BETA_KEYS if k in body]
    if not isinstance(queries, list) or not queries or not all(isinstance(q, str) for q in queries) or stray:
        loc = ["body", stray[0]] if stray else ["body", "search_queries"]
        err = {"type": "extra_forbidden" if stray else "missing", "loc": loc,
               "msg": "Extra inputs are not permitted" if stray else "Field required"}
        return json_response(wire_more.parallel_error("Request validation error.", detail={"errors": [err]}), 422)
    settings = _obj(body.get("advanced_settings"))
    n = _int(settings.get("max_results"), 10) or 10
    objective = str(body.get("objective") or "")
    query = " ".join([objective, *queries]).strip()
    session = body.get("session_id") if isinstance(body.get("session_id"), str) else None
    key = request_key("parallel", _canon.encode(body))

    async def produce() -> Response:
        hits = personas.search(sb.world, "parallel", query, n)
        return json_response(wire_more.parallel_ok(hits, key=key, session_id=session))

    return await sb.run("parallel", sb.fault("parallel", key, query), key, produce)


# ---------------------------------------------------------------- You.com

async def youcom_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("youcom", request)
    if _rejected(request.headers.get("x-api-key")):
        return json_response({"detail": "Invalid or expired API key"}, 401)
    body: dict[str, Any] = dict(request.query_params)
    if request.method == "POST":
        body.update(await json_body(request) or {})
    query = body.get("query")
    n = _int(body.get("count"), 10)
    if not isinstance(query, str) or not query.strip() or n is None or not 1 <= n <= 100:
        return json_response({"detail": [{"loc": ["body", "query"], "msg": "Field required", "type": "missing"}]}, 422)
    if body.get("include_domains") and body.get("exclude_domains"):
        return json_response({"error": "include_domains cannot be combined with exclude_domains"}, 422)
    extraction = _obj(body.get("extraction"))
    mode = extraction.get("extraction_mode")
    key = request_key("youcom", _canon.encode(body))

    async def produce() -> Response:
        hits = personas.search(sb.world, "youcom", query, n)
        return json_response(wire_more.youcom_ok(query, hits, key=key, highlights=mode == "highlights",
                                                 full_page=mode == "full_page"), 200, wire_more.YOUCOM_RATE_HEADERS)

    return await sb.run("youcom", sb.fault("youcom", key, query), key, produce)


# ---------------------------------------------------------------- Linkup

async def linkup_search(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("linkup", request)
    if _rejected(_bearer(request)):
        return json_response(wire_more.linkup_error(401, "UNAUTHORIZED", "Unauthorized action"), 401)
    body = await json_body(request) or {}
    q, depth, output = body.get("q"), body.get("depth"), body.get("outputType")
    problems = [{"field": f, "message": m} for f, m, bad in (
        ("q", "q should not be empty", not isinstance(q, str) or not q.strip()),
        ("depth", "depth must be one of the following values: flash, fast, standard, deep",
         depth not in ("flash", "fast", "standard", "deep")),
        ("outputType", "outputType must be one of the following values: sourcedAnswer, searchResults, structured",
         output not in ("sourcedAnswer", "searchResults", "structured"))) if bad]
    if problems:
        return json_response(wire_more.linkup_error(400, "VALIDATION_ERROR", "Validation failed", problems), 400)
    assert isinstance(q, str)
    n = _int(body.get("maxResults"), 10) or 10
    key = request_key("linkup", _canon.encode(body))

    async def produce() -> Response:
        hits = personas.search(sb.world, "linkup", q, n)
        if not hits:
            return json_response(wire_more.linkup_error(400, "SEARCH_QUERY_NO_RESULT",
                                                        "The query did not yield any result"), 400)
        return json_response(wire_more.linkup_ok(hits))

    return await sb.run("linkup", sb.fault("linkup", key, q), key, produce)


# ---------------------------------------------------------------- Jina Search

async def jina_search(request: Request) -> Response:
    from searchtrace.adapters.sandbox import wire

    sb = sandbox_of(request)
    sb.count("jina_search", request)
    if _rejected(_bearer(request)):
        return json_response(wire.jina_error(401, "AuthenticationRequiredError", 40103,
                                             "Authentication is required to use this endpoint. Please provide a "
                                             "valid API key via Authorization header."), 401)
    body: dict[str, Any] = dict(request.query_params)
    if request.method == "POST":
        body.update(await json_body(request) or {})
    q = body.get("q")
    n = _int(body.get("num", body.get("count")), 10)
    if not isinstance(q, str) or not q.strip() or n is None or not 0 <= n <= 20:
        return json_response(wire.jina_error(400, "ParamValidationError", 40001, "q is required; num 0-20"), 400)
    content = request.headers.get("x-respond-with", "").lower() != "no-content"
    key = request_key("jina_search", _canon.encode(body), str(content))

    async def produce() -> Response:
        hits = personas.search(sb.world, "jina_search", q, n)
        out = wire_more.jina_search_ok(hits, content=content)
        return json_response(out, 200, {"X-Usage-Tokens": str(out["meta"]["usage"]["tokens"])})

    return await sb.run("jina_search", sb.fault("jina_search", key, q), key, produce)
